"""install_k8s_cluster.sh guards: every network call has a bound, a wait's
deadline binds inside an attempt, and files the script makes are private
(``umask 077``) even when the caller's umask is permissive.

The script runs for real; kubectl is a stand-in shell script (no kubectl
build exists here) that can hang like an API server that accepts and never
answers.
"""

import os
import stat
import subprocess
import time

import pytest

from tests.functional.scripts.script_helpers import (
    CA_HASH, CERT_KEY, INSTALL, PROXY_URL, TOKEN, run_script, write_tool)
from tests.functional.scripts.test_install_master_modes import make_master


@pytest.fixture
def master(tmp_path):
    return make_master(tmp_path)


def test_a_hanging_kubectl_is_cut_at_the_wait_deadline(master, tmp_path):
    bin_dir = tmp_path / 'bin'
    argv_log = tmp_path / 'kubectl-argv'
    # Ignores --request-timeout: only the script's own bound can stop it.
    write_tool(bin_dir, 'kubectl', '''
        echo "$*" >> %s
        exec sleep 60
        ''' % argv_log)
    started = time.monotonic()
    result = run_script(INSTALL, ['print-join', '-w', '2'],
                        env=master['env'])
    elapsed = time.monotonic() - started
    assert result.returncode == 1
    assert 'timed out after 2s waiting for the API server' in result.stderr
    assert elapsed < 6, elapsed
    calls = argv_log.read_text().splitlines()
    assert calls, 'kubectl was never called'
    for call in calls:
        # Never more than what is left of the 2 s deadline.
        assert '--request-timeout=1s' in call or (
            '--request-timeout=2s' in call), call


def test_kubectl_calls_outside_waits_have_a_request_timeout(master):
    result = run_script(INSTALL, ['token-secret'], env=master['env'])
    assert result.returncode == 0, result.stderr
    calls = (master['state'] / 'argv.log').read_text().splitlines()
    kubectl = [c for c in calls if c.startswith('--kubeconfig')]
    assert len(kubectl) >= 3
    for call in kubectl:
        assert '--request-timeout=' in call, call


@pytest.fixture
def fresh_node(tmp_path):
    """A node with no Kubernetes packages and no containerd: the plan
    installs them (dry run: nothing is changed). Tools that answer no
    version count as not installed, whatever this host has."""
    dirs = {name: tmp_path / name for name in ('k8s', 'state', 'run', 'bin')}
    for path in dirs.values():
        path.mkdir()
    for tool in ('kubeadm', 'kubelet', 'kubectl'):
        write_tool(dirs['bin'], tool, 'exit 1\n')
    env = {'PATH': '%s:/usr/sbin:/usr/bin:/sbin:/bin' % dirs['bin'],
           'K8S_MGMT_KUBERNETES_DIR': str(dirs['k8s']),
           'K8S_MGMT_STATE_DIR': str(dirs['state']),
           'K8S_MGMT_RUN_DIR': str(dirs['run'])}
    if any(os.path.exists(os.path.join(d, 'containerd'))
           for d in env['PATH'].split(':')):
        pytest.skip('containerd is installed on this host')
    if os.path.exists('/etc/apt/keyrings/kubernetes-apt-keyring.gpg'):
        pytest.skip('this host has the pkgs.k8s.io keyring')
    return env


def test_downloads_and_apt_are_bounded_in_the_plan(fresh_node):
    result = run_script(INSTALL, ['init', '-n', '-a', '10.0.0.11',
                                  '-c', 'none', '-w', '240'],
                        env=fresh_node)
    assert result.returncode == 0, result.stderr
    planned = [line[2:] for line in result.stdout.splitlines()
               if line.startswith('+ ')]
    apt = [c for c in planned if ' apt-get ' in c]
    assert len(apt) >= 3                      # containerd, repo, packages
    for call in apt:
        for option in ('Acquire::http::Timeout=30',
                       'Acquire::https::Timeout=30',
                       'DPkg::Lock::Timeout=240'):
            assert '-o %s' % option in call, call
    curl = [c for c in planned if c.startswith('curl ')]
    assert len(curl) == 1
    assert '--connect-timeout 15 --max-time 120' in curl[0]
    assert '--retry-max-time 300' in curl[0]


def _render_with_umask(tmp_path, mode, args, stdin):
    """Render into a new directory, the caller's umask set to 000."""
    out = tmp_path / 'rendered'
    proc = subprocess.run(
        ['bash', '-c', 'umask 000; exec bash "$0" "$@"', str(INSTALL),
         mode, '-o', str(out)] + args,
        input=stdin, capture_output=True, text=True, timeout=30,
        check=False)
    assert proc.returncode == 0, proc.stderr
    return out


def test_umask_keeps_rendered_secrets_private(tmp_path):
    # Without the script's "umask 077" the directory would be made 0777
    # and the files would be world-readable until the final chmod.
    out = _render_with_umask(
        tmp_path, 'join-master',
        ['-a', '10.0.0.12', '-e', '10.0.0.100:16443', '-t', CA_HASH,
         '-H', 'master-2', '-s', '-'],
        'token=%s\ncertificate_key=%s\nhttp_proxy=%s\n'
        % (TOKEN, CERT_KEY, PROXY_URL))
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    files = sorted(out.iterdir())
    assert 'kubeadm-join.yaml' in [f.name for f in files]
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
