"""Secrets made on the VMs stay there: an init that fails after kubeadm made
the token and key, and a join that fails after init, leak no token, key or
password into anything the operations printed or logged, and a re-run
completes the cluster.

Real parts: the lab (namespace VMs with OpenSSH behind the Keystone/Heat
APIs), the real driver through ``k8s-mgmt lab instantiate``, the real
install scripts, a real etcd cluster, real HAProxy and keepalived.
Stand-ins: the OpenStack APIs and the Kubernetes binaries; the kubeadm
stand-in prints tokens and certificate keys exactly where kubeadm does, so
anything the scripts let through would show here.
"""

import base64
import glob
import json
import os
import re

import pytest

from lab_cli import LabCLI

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-vmsecrets'
k8s_mgmt = LabCLI(STATE_DIR, bridge='k8slabvs', tag='lvs', timeout=900)
SUBNET = '10.254.243.0/24'
ADMIN = ['kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf']
# Shapes of a bootstrap token and of a certificate key (64 hex digits that
# are not a sha256: public-key pin), whoever made them.
TOKEN_SHAPE = re.compile(r'(?<![A-Za-z0-9])[a-z0-9]{6}\.[a-z0-9]{16}'
                         r'(?![A-Za-z0-9])')
KEY_SHAPE = re.compile(r'(?<![0-9A-Za-z])(?<!sha256:)[0-9a-f]{64}'
                       r'(?![0-9A-Za-z])')


@pytest.fixture
def cli_lab(assert_lab_clean):
    with k8s_mgmt.fresh(assert_lab_clean):
        yield


def cluster_secrets(master):
    """Every secret the cluster holds that the driver ever handled: the
    bootstrap tokens (bootstrap-token-<id> Secrets), the VIM's
    service-account token, the VRRP and Heat passwords."""
    listing = k8s_mgmt('exec', master, '--', *ADMIN, '-n', 'kube-system',
                       'get', 'secrets', '-o', 'json')
    found = {}
    for item in json.loads(listing.stdout)['items']:
        # kubeadm-certs holds sealed binary data: decoded loosely, unused.
        data = {k: base64.b64decode(v).decode(errors='replace')
                for k, v in (item.get('data') or {}).items()}
        name = item['metadata']['name']
        if item.get('type') == 'bootstrap.kubernetes.io/token':
            assert name == 'bootstrap-token-' + data['token-id']
            found[name] = '%s.%s' % (data['token-id'], data['token-secret'])
            found[name + ' (secret half)'] = data['token-secret']
        elif item.get('type') == 'kubernetes.io/service-account-token':
            found[name] = data['token']
    for path in glob.glob(os.path.join(STATE_DIR, 'driver', '**',
                                       'vrrp_password'), recursive=True):
        with open(path) as handle:
            found['vrrp password'] = handle.read().strip()
    with open(os.path.join(STATE_DIR, 'lab.json')) as handle:
        found['heat password'] = json.load(handle)['heat']['password']
    return found


def everything_logged(runs):
    """CLI output of every run plus every log the lab and driver wrote."""
    texts = {}
    for label, proc in runs:
        texts[label + ' stdout'] = proc.stdout
        texts[label + ' stderr'] = proc.stderr
    logs = glob.glob(os.path.join(STATE_DIR, '**', '*.log'), recursive=True)
    logs.append(STATE_DIR.rstrip('/') + '.daemon.log')
    for path in logs:
        if os.path.isfile(path) and '/vms/' not in path:
            with open(path, errors='replace') as handle:
                texts[path] = handle.read()
    return texts


def assert_no_secret_in(texts, secrets_found):
    # Names only: a failure message must not print the secret it found.
    leaks = []
    for where, text in texts.items():
        leaks += ['%s in %s' % (what, where)
                  for what, value in secrets_found.items() if value in text]
        if TOKEN_SHAPE.search(text):
            leaks.append('a bootstrap-token shape in %s' % where)
        if KEY_SHAPE.search(text):
            leaks.append('a certificate-key shape in %s' % where)
    assert not leaks, '; '.join(leaks)


def test_failed_init_and_join_leak_nothing_and_a_rerun_completes(cli_lab):
    k8s_mgmt('up', '--flavour', 'complex', '--workers', '2',
             '--subnet', SUBNET)
    vms = json.loads(k8s_mgmt('status', '--json').stdout)['vms']
    master = [vm['name'] for vm in vms if vm['role'] == 'master'][0]
    worker = sorted(vm['name'] for vm in vms if vm['role'] == 'worker')[0]

    # The kubelet dies after kubeadm init made the token and uploaded the
    # certificates: the init step fails with kubeadm's output in its
    # stderr, where the token and key would be, were they printed.
    k8s_mgmt('fault', master, 'kubelet')
    failed_init = k8s_mgmt('instantiate', check=False)
    assert failed_init.returncode == 1, failed_init.stderr[-3000:]
    assert 'Traceback' not in failed_init.stderr
    assert 'Initialise the first master' in failed_init.stderr
    assert 'init: exit status 1' in failed_init.stderr.splitlines()[-1]
    assert 'could not start kubelet' in failed_init.stderr + _lab_log()
    k8s_mgmt('fault', master, 'kubelet', '--clear')

    assert 'set' in k8s_mgmt('fault', worker, 'kubeadm-join').stdout

    failed = k8s_mgmt('instantiate', check=False)
    assert failed.returncode == 1, failed.stderr[-3000:]
    assert 'Traceback' not in failed.stderr
    error = failed.stderr.strip().splitlines()[-1]
    assert error.startswith('k8s-mgmt: error: instantiate failed: '), error
    assert 'failed on 1 of 2 node(s)' in failed.stderr
    assert worker in error or worker in failed.stderr
    assert 'kubelet-start: timed out waiting for the condition' in (
        failed.stderr + _lab_log())

    # The join reached the cluster (discovery took a token) before failing.
    held = cluster_secrets(master)
    assert [k for k in held if k.startswith('bootstrap-token-')]
    assert 'k8s-mgmt-vim-token' in held

    k8s_mgmt('fault', worker, 'kubeadm-join', '--clear')
    rerun = k8s_mgmt('instantiate', '--json', check=False)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    report = json.loads(rerun.stdout)
    assert len(report['nodes']) == 5
    assert all(node['ready'] for node in report['nodes']), report['nodes']
    table = k8s_mgmt('exec', master, '--', *ADMIN, 'get', 'nodes').stdout
    assert len([line for line in table.splitlines()[1:]
                if ' Ready ' in line]) == 5, table

    held.update(cluster_secrets(master))
    assert len([k for k in held if k.startswith('bootstrap-token-')
                and not k.endswith(')')]) >= 3  # init's, one per later run
    assert_no_secret_in(everything_logged([('failed init', failed_init),
                                           ('failed join', failed),
                                           ('re-run', rerun)]), held)


def _lab_log():
    path = os.path.join(STATE_DIR, 'lab_lcm.log')
    if not os.path.exists(path):
        return ''
    with open(path) as handle:
        return handle.read()
