"""print-join and token-secret against a fake master tree.

kubeadm and kubectl are stand-ins (shell scripts); the CA is a real
certificate made by openssl and its hash is checked with ``cryptography``.
"""

import base64
import hashlib
import json
import subprocess
import time

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from tests.functional.scripts.script_helpers import (
    INSTALL, run_script, write_tool)

TOKEN = 'k3ymgm.t0k3nfr0mkubeadm'
CERT_KEY = '5e' * 32
SA_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ2aW0ifQ.c2lnbmF0dXJl'


@pytest.fixture
def master(tmp_path):
    return make_master(tmp_path)


def make_master(tmp_path):
    """A fake /etc/kubernetes with a real CA, and kubeadm/kubectl stand-ins."""
    k8s = tmp_path / 'etc-kubernetes'
    (k8s / 'pki').mkdir(parents=True)
    (k8s / 'admin.conf').write_text('apiVersion: v1\nkind: Config\n')
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048',
                    '-nodes', '-days', '1', '-subj', '/CN=kubernetes',
                    '-keyout', str(k8s / 'pki' / 'ca.key'),
                    '-out', str(k8s / 'pki' / 'ca.crt')],
                   check=True, capture_output=True)
    state = tmp_path / 'fake-state'
    state.mkdir()
    run_dir = tmp_path / 'run'
    run_dir.mkdir()
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    write_fake_kubeadm(bin_dir, state)
    write_fake_kubectl(bin_dir, state, k8s / 'pki' / 'ca.crt')
    env = {'PATH': '%s:/usr/bin:/bin' % bin_dir,
           'K8S_MGMT_KUBERNETES_DIR': str(k8s),
           'K8S_MGMT_STATE_DIR': str(tmp_path / 'state'),
           'K8S_MGMT_RUN_DIR': str(run_dir),
           'FAKE_TOKEN_AFTER': '3', 'FAKE_API': 'up'}
    return {'env': env, 'state': state, 'k8s': k8s, 'run': run_dir}


def write_fake_kubeadm(bin_dir, state):
    write_tool(bin_dir, 'kubeadm', '''
        echo "$*" >> %(state)s/argv.log
        case "$*" in
            "version -o short") echo v1.35.2 ;;
            "token create --ttl 2h") echo %(token)s ;;
            "certs certificate-key") echo %(key)s ;;
            "init phase upload-certs --upload-certs --config "*)
                cp "$6" %(state)s/upload-certs.yaml
                echo "[upload-certs] Using certificate key:"; echo %(key)s ;;
            *) echo "fake kubeadm: unexpected: $*" >&2; exit 1 ;;
        esac
        ''' % {'state': state, 'token': TOKEN, 'key': CERT_KEY})


def write_fake_kubectl(bin_dir, state, ca_path):
    write_tool(bin_dir, 'kubectl', '''
        echo "$*" >> %(state)s/argv.log
        shift 3  # --kubeconfig FILE --request-timeout=Ns
        case "$*" in
            "get --raw=/readyz") [ "$FAKE_API" = up ] ;;
            "apply -f "*) cp "$3" %(state)s/applied.yaml ;;
            *'jsonpath={.data.token}{"|"}{.data.ca\\.crt}')
                # One read of both fields; the token only once the token
                # controller has filled it in (FAKE_TOKEN_AFTER polls).
                n=$(( $(cat %(state)s/polls 2>/dev/null || echo 0) + 1 ))
                echo $n > %(state)s/polls
                if [ $n -eq 1 ]; then  # not visible yet, as a real read can
                    echo 'Error from server (NotFound): secrets not found' >&2
                    exit 1
                fi
                if [ "$FAKE_TOKEN_AFTER" != never ] &&
                   [ $n -ge "$FAKE_TOKEN_AFTER" ]; then
                    printf %%s %(token_b64)s
                fi
                printf '|%%s' "$(base64 -w0 %(ca)s)" ;;
            *) echo "fake kubectl: unexpected: $*" >&2; exit 1 ;;
        esac
        ''' % {'state': state, 'ca': ca_path,
               'token_b64': base64.b64encode(SA_TOKEN.encode()).decode()})


def spki_hash(ca_path):
    cert = x509.load_pem_x509_certificate(ca_path.read_bytes())
    der = cert.public_key().public_bytes(
        serialization.Encoding.DER,
        serialization.PublicFormat.SubjectPublicKeyInfo)
    return 'sha256:' + hashlib.sha256(der).hexdigest()


def test_print_join_ha_prints_json_only(master):
    result = run_script(INSTALL, ['print-join', '-A'], env=master['env'])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # nothing else on stdout
    assert data == {'token': TOKEN,
                    'ca_cert_hash': spki_hash(master['k8s'] / 'pki' /
                                              'ca.crt'),
                    'certificate_key': CERT_KEY}
    # The key went to kubeadm in a 0600 config file, never on an argv.
    uploaded = yaml.safe_load_all(
        (master['state'] / 'upload-certs.yaml').read_text())
    kinds = {doc['kind']: doc for doc in uploaded}
    assert kinds['InitConfiguration']['certificateKey'] == CERT_KEY
    assert kinds['ClusterConfiguration']['kubernetesVersion'] == 'v1.35.2'
    argv = (master['state'] / 'argv.log').read_text()
    assert CERT_KEY not in argv and TOKEN not in argv
    assert TOKEN not in result.stderr and CERT_KEY not in result.stderr
    assert list(master['run'].iterdir()) == []  # temp config removed


def test_print_join_single_master_has_no_certificate_key(master):
    result = run_script(INSTALL, ['print-join'], env=master['env'])
    assert result.returncode == 0, result.stderr
    assert set(json.loads(result.stdout)) == {'token', 'ca_cert_hash'}
    assert 'upload-certs' not in (master['state'] / 'argv.log').read_text()


def test_print_join_fails_when_the_api_does_not_answer(master):
    env = dict(master['env'], FAKE_API='down')
    started = time.monotonic()
    result = run_script(INSTALL, ['print-join', '-w', '1'], env=env)
    assert result.returncode == 1
    assert result.stdout == ''
    assert result.stderr.strip().splitlines()[-1].startswith(
        'install_k8s_cluster.sh: print-join: timed out after 1s')
    assert time.monotonic() - started < 6


def test_print_join_needs_an_initialised_master(master):
    (master['k8s'] / 'admin.conf').unlink()
    result = run_script(INSTALL, ['print-join'], env=master['env'])
    assert result.returncode == 1
    assert 'print-join: ' in result.stderr and 'admin.conf not found' in (
        result.stderr)


def test_token_secret_waits_for_the_token_and_prints_json(master):
    result = run_script(INSTALL, ['token-secret', '-u', 'tacker-vim'],
                        env=master['env'])
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    ca_pem = (master['k8s'] / 'pki' / 'ca.crt').read_text()
    assert data == {'namespace': 'kube-system',
                    'service_account': 'tacker-vim',
                    'secret': 'tacker-vim-token', 'token': SA_TOKEN,
                    'ca_cert': ca_pem.rstrip('\n')}
    assert int((master['state'] / 'polls').read_text()) >= 3  # it polled
    assert SA_TOKEN not in result.stderr
    # A read that failed while waiting is no failed step.
    assert 'failed (exit' not in result.stderr, result.stderr
    docs = {d['kind']: d for d in yaml.safe_load_all(
        (master['state'] / 'applied.yaml').read_text())}
    assert set(docs) == {'ServiceAccount', 'ClusterRoleBinding', 'Secret'}
    secret = docs['Secret']
    assert secret['type'] == 'kubernetes.io/service-account-token'
    assert secret['metadata'] == {
        'name': 'tacker-vim-token', 'namespace': 'kube-system',
        'annotations': {'kubernetes.io/service-account.name': 'tacker-vim'}}
    assert docs['ClusterRoleBinding']['subjects'] == [{
        'kind': 'ServiceAccount', 'name': 'tacker-vim',
        'namespace': 'kube-system'}]


def test_token_secret_gives_up_at_the_deadline(master):
    env = dict(master['env'], FAKE_TOKEN_AFTER='never')
    started = time.monotonic()
    result = run_script(INSTALL, ['token-secret', '-w', '2'], env=env)
    elapsed = time.monotonic() - started
    assert result.returncode == 1
    assert result.stdout == ''
    assert 'token-secret: timed out after 2s waiting for the token' in (
        result.stderr)
    assert 2 <= elapsed < 8
    # Backoff: a handful of polls, not a busy loop.
    assert 3 <= int((master['state'] / 'polls').read_text()) <= 10
