"""install_k8s_cluster.sh: argument and secrets-input errors.

Every error exits non-zero with one clear line on stderr and never echoes a
secret value.
"""

import pytest

from tests.functional.scripts.script_helpers import (
    CA_HASH, CERT_KEY, INSTALL, TOKEN, run_script, secret_file)

INIT = ['init', '-a', '10.0.0.11']


@pytest.mark.parametrize('args, message', [
    ([], 'missing mode'),
    (['bootstrap'], 'unknown mode: bootstrap'),
    (['-k', '1.35'], 'missing mode before option -k'),
    (INIT + ['-Z'], 'unknown option -Z'),
    (INIT + ['-k'], 'option -k needs a value'),
    (INIT + ['-k', '1.2x'], "bad Kubernetes version '1.2x'"),
    (INIT + ['-k', '1.20'], 'unsupported Kubernetes version 1.20'),
    (INIT + ['-k', 'v1.35'], "bad Kubernetes version 'v1.35'"),
    (INIT + ['-P', '10.0.0/8'], "bad CIDR for pod_cidr: '10.0.0/8'"),
    (INIT + ['-S', '10.96.0.1/12'], "bad CIDR for service_cidr"),
    (INIT + ['-C', '10.0.0.0/33'], "bad CIDR for node_cidr"),
    (['init', '-a', '10.0.0.300'], 'bad advertise address'),
    (['init'], 'init needs -a'),
    (INIT + ['-A'], 'HA init needs -e'),
    (INIT + ['-e', 'vip'], 'bad endpoint'),
    (INIT + ['-H', 'Master_1'], "bad node name: 'Master_1'"),
    (INIT + ['-x', 'a b'], 'bad no_proxy list'),
    (INIT + ['-c', 'ftp://x/cni.yaml'], 'bad CNI manifest'),
    (INIT + ['extra'], 'unexpected argument: extra'),
    (['print-join', '-R'], '-R is for init only'),
    (['join-worker', '-e', '10.0.0.100:16443'], 'needs -t sha256:'),
    (['join-worker', '-e', '10.0.0.100:16443', '-t', CA_HASH],
     "needs 'token' in the secrets input"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_argument_errors(args, message, tmp_path):
    # -o (render and stop) goes right after the mode, so a bad run could
    # never touch the host; the error must come before anything is written.
    render = ['-o', str(tmp_path / 'out')]
    result = run_script(INSTALL, args[:1] + render + args[1:] if args else [])
    assert result.returncode == 2
    assert result.stdout == ''
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert not (tmp_path / 'out').exists()


def test_help_exits_zero():
    result = run_script(INSTALL, ['-h'])
    assert result.returncode == 0
    assert 'join-master' in result.stdout and '-s FILE|-' in result.stdout


JOIN_MASTER = ['join-master', '-a', '10.0.0.12', '-e', '10.0.0.100:16443',
               '-t', CA_HASH]


@pytest.mark.parametrize('secrets, message', [
    ('token=%s\n' % TOKEN, "needs 'certificate_key'"),
    ('token=%s\ncertificate_key=%s\n' % ('ABCDEF.0123456789abcdef', CERT_KEY),
     "'token' is not a bootstrap token"),
    ('token=%s\ncertificate_key=%s\n' % (TOKEN, CERT_KEY[:-1] + 'Z'),
     "'certificate_key' is not 64 hex digits"),
    ('token=%s\npassword=%s\n' % (TOKEN, CERT_KEY), "unknown key"),
    ('%s\n' % TOKEN, "line without '='"),
    ('https_proxy=http://u:p@x y\n', "'https_proxy' is not an http(s) URL"),
])
def test_secret_input_errors_name_the_key_not_the_value(secrets, message,
                                                        tmp_path):
    result = run_script(INSTALL, JOIN_MASTER + ['-s', '-', '-o',
                                                str(tmp_path / 'o')],
                        stdin=secrets)
    assert result.returncode == 2
    assert message in result.stderr
    for value in (TOKEN, CERT_KEY, CERT_KEY[:-1] + 'Z', 'u:p@x'):
        assert value not in result.stderr + result.stdout


def test_secrets_file_readable_by_others_is_refused(tmp_path):
    path = secret_file(tmp_path, 'token=%s\ncertificate_key=%s\n'
                       % (TOKEN, CERT_KEY), mode=0o640)
    result = run_script(INSTALL, JOIN_MASTER + ['-s', str(path), '-o',
                                                str(tmp_path / 'o')])
    assert result.returncode == 2
    assert 'has mode 640; want 0600 or stricter' in result.stderr


def test_missing_secrets_file(tmp_path):
    result = run_script(INSTALL, JOIN_MASTER + ['-s', str(tmp_path / 'no'),
                                                '-o', str(tmp_path / 'o')])
    assert result.returncode == 2
    assert 'secrets file not found' in result.stderr
