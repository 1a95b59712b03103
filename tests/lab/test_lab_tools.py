"""``k8s-mgmt lab exec`` and ``lab fault`` as an operator runs them.

Real parts: the lab VM (namespace, overlay root, OpenSSH), nsenter, the
VM's own apt-get and shell, the lab's signed Kubernetes apt repository and
Debian's containerd. Stand-ins: kubeadm and kubectl, the packages' payload
(the faults' failures are theirs).
"""

import json
import pathlib
import subprocess

import pytest

from k8s_mgmt_lab import manager
from lab_cli import LabCLI

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-tools'
k8s_mgmt = LabCLI(STATE_DIR, bridge='k8slabtl', tag='ltl')
SUBNET = '10.254.244.0/24'
SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / 'k8s_mgmt' / 'scripts'
INSTALL = SCRIPTS / 'install_k8s_cluster.sh'
LIBRARY = SCRIPTS / 'k8s_mgmt_lib.sh'
INIT_CONFIG = '''apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: "%s"
'''


@pytest.fixture(scope='module')
def one_vm(assert_lab_clean):
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', 'simple', '--workers', '1',
                 '--subnet', SUBNET)
        vms = json.loads(k8s_mgmt('status', '--json').stdout)['vms']
        assert len(vms) == 2
        yield [vm for vm in vms if vm['role'] == 'master'][0]


def test_exec_passes_stdio_and_status_and_faults_fail_like_the_tools(
        one_vm):
    name = one_vm['name']
    # Inside the VM: its hostname, root; stdin in, stdout out, status back.
    proc = k8s_mgmt('exec', name, '--', 'sh', '-c',
                    'cat > /tmp/in; id -u; hostname; echo oops >&2; exit 7',
                    stdin='hello\n', check=False)
    assert proc.returncode == 7
    uid, hostname = proc.stdout.split()
    assert uid == '0' and hostname != subprocess.run(
        ['hostname'], capture_output=True, text=True).stdout.strip()
    assert proc.stderr == 'oops\n'
    # The server id names the same VM; the file is in the VM, not here.
    same = k8s_mgmt('exec', one_vm['server_id'], '--', 'cat', '/tmp/in')
    assert same.stdout == 'hello\n'

    # A fresh VM has no Kubernetes tools: the install script installs them.
    kubeadm = k8s_mgmt('exec', name, '--', 'kubeadm', 'version', '-o',
                       'short', check=False)
    assert kubeadm.returncode == 127, kubeadm
    assert 'kubeadm: No such file' in kubeadm.stderr
    # apt: the mirror is gone.
    k8s_mgmt('fault', name, 'apt')
    apt = k8s_mgmt('exec', name, '--', 'apt-get', 'update', check=False)
    assert apt.returncode == 100
    assert apt.stderr.splitlines()[-1].startswith('E: ')
    assert 'fault "apt"' in apt.stderr
    # The install script's prepare stops at the repository, in one line.
    k8s_mgmt('exec', name, '--', 'sh', '-c', 'cat > /root/install.sh',
             stdin=INSTALL.read_text())
    k8s_mgmt('exec', name, '--', 'sh', '-c', 'cat > /root/' + LIBRARY.name,
             stdin=LIBRARY.read_text())
    mirror = manager.repository_url(SUBNET)
    prepare = ['bash', '/root/install.sh', 'prepare', '-r', mirror,
               '-V', '1.34.1', '-k', '1.34', '-w', '20']
    install = k8s_mgmt('exec', name, '--', *prepare, check=False)
    assert install.returncode == 1, install.stderr
    assert install.stderr.splitlines()[-1].startswith(
        'install_k8s_cluster.sh: Kubernetes package repository: cannot '
        'read the Kubernetes package repository %sv1.34/deb/: E: '
        % mirror), install.stderr
    assert 'cleared' in k8s_mgmt('fault', name, 'apt', '--clear').stdout
    # Without it, the same prepare installs the version asked for.
    k8s_mgmt('exec', name, '--', *prepare)
    again = k8s_mgmt('exec', name, '--', 'kubeadm', 'version', '-o',
                     'short')
    assert again.stdout.strip() == 'v1.34.1'

    # kubeadm-init: fails in wait-control-plane, leaving the CA behind.
    k8s_mgmt('fault', name, 'kubeadm-init')
    init = k8s_mgmt('exec', name, '--', 'sh', '-c',
                    'cat > /run/init.yaml && '
                    'kubeadm init --config /run/init.yaml',
                    stdin=INIT_CONFIG % one_vm['ip'], check=False)
    assert init.returncode == 1, init.stderr
    assert ('error execution phase wait-control-plane: failed while '
            'waiting for the kubelet') in init.stderr
    assert init.stderr.splitlines()[-1].startswith('To see the stack trace')
    k8s_mgmt('exec', name, '--', 'test', '-f',
             '/etc/kubernetes/pki/ca.crt')
    k8s_mgmt('fault', name, 'kubeadm-init', '--clear')
    # The fault lived in the VM's root.
    k8s_mgmt('exec', name, '--', 'test', '!', '-e',
             '/etc/k8s-mgmt-lab/faults/kubeadm-init')


def test_unknown_vm_and_step_are_one_line_errors(one_vm):
    proc = k8s_mgmt('exec', 'no-such-vm', '--', 'true', check=False)
    assert proc.returncode == 1 and proc.stderr.count('\n') == 1
    assert "no lab VM 'no-such-vm'" in proc.stderr
    assert one_vm['name'] in proc.stderr          # it lists the VMs
    bad = k8s_mgmt('fault', one_vm['name'], 'etcd', check=False)
    assert bad.returncode == 2 and 'invalid choice' in bad.stderr
    empty = k8s_mgmt('exec', one_vm['name'], check=False)
    assert empty.returncode == 1 and 'needs a command' in empty.stderr
