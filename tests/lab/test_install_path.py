"""The install script's real install path on the lab: every node of a
complex cluster gets kubeadm, kubelet and kubectl from the lab's signed
Kubernetes apt repository by apt-get (the request's exact version, held,
the source signed-by its key) and containerd from Debian's package,
configured with the systemd cgroup driver and running; a repository the
nodes cannot reach fails the prepare step with one line naming it.

Real parts: namespace VMs with OpenSSH, the driver, the install script,
apt-get, dpkg, gpg and the signed repository served over HTTP from the
bridge's gateway, Debian's containerd and runc (the daemon runs in every
VM), etcd, HAProxy and keepalived. Stand-ins: the packages' payload
(kubeadm, kubelet, kubectl), the kube-apiserver, the OpenStack APIs but
Keystone and Heat.
"""

import copy
import json
import os

import pytest
import yaml

from k8s_mgmt import exceptions
from k8s_mgmt import kube
from k8s_mgmt import shipped
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import status as lab_status

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-install-path'
SETTINGS = manager.LabSettings(state_dir=STATE_DIR, subnet='10.254.215.0/24',
                               bridge='k8slabip', tag='kip', compute_hosts=4)
ROOT = 'k8s_cluster_installation_param'
VERSION = '1.34.1'
KEYRING = '/etc/apt/keyrings/kubernetes-apt-keyring.gpg'


@pytest.fixture
def lab(make_lab):
    return make_lab(SETTINGS)


def request(flavour, **root):
    body = manager.sample_on_subnet(shipped.sample_request(flavour),
                                    SETTINGS.subnet)
    body['additionalParams'][ROOT].update(copy.deepcopy(root))
    return body


def vm_text(lab, node, *argv):
    return lab.vms.exec(node.server_id, list(argv)).stdout


def test_every_node_installs_from_the_repository_with_apt(lab):
    mirror = manager.repository_url(SETTINGS.subnet)
    body = request('complex', kubernetes_version=VERSION)
    record = lab.up(body)
    topology = lab_status.read_topology(record)
    nodes = topology.masters + topology.workers
    assert len(topology.masters) == 3 and topology.workers
    result = lcm.instantiate(SETTINGS, request_body=body)

    for node in nodes:
        versions = dict(line.split() for line in vm_text(
            lab, node, 'dpkg-query', '-W', '-f=${Package} ${Version}\\n',
            'kubeadm', 'kubelet', 'kubectl', 'cri-tools', 'kubernetes-cni',
            'containerd', 'runc').splitlines())
        assert [versions[tool] for tool in ('kubeadm', 'kubelet',
                                            'kubectl')] == [
            VERSION + '-1.1'] * 3, (node.name, versions)
        assert versions['cri-tools'] == '1.34.0-1.1'
        # Debian's containerd and runc (their Debian revision, "~ds").
        assert '~ds' in versions['containerd'], versions
        assert '+ds' in versions['runc'], versions
        assert vm_text(lab, node, 'apt-mark', 'showhold').split() == [
            'kubeadm', 'kubectl', 'kubelet']
        assert vm_text(lab, node, 'cat',
                       '/etc/apt/sources.list.d/kubernetes.list') == (
            'deb [signed-by=%s] %sv1.34/deb/ /\n' % (KEYRING, mirror))
        # The key the source names is the one apt checked the index with.
        policy = vm_text(lab, node, 'apt-cache', 'policy', 'kubeadm')
        assert mirror + 'v1.34/deb' in policy
        assert vm_text(lab, node, 'kubeadm', 'version', '-o',
                       'short').strip() == 'v' + VERSION
        config = vm_text(lab, node, 'cat', '/etc/containerd/config.toml')
        assert 'SystemdCgroup = true' in config
        assert 'SystemdCgroup = false' not in config
        assert vm_text(lab, node, 'systemctl', 'is-active',
                       'containerd').strip() == 'active'
        # The real daemon answers on its socket, as the package's.
        server = vm_text(lab, node, 'ctr', 'version').split('Server:')[1]
        assert versions['containerd'].split('-')[0] in server

    with open(os.path.join(result.driver_state, 'vim_config.yaml')) as src:
        vim = yaml.safe_load(src)
    with kube.ClusterAPI(vim['auth_url'], vim['bearer_token'],
                         vim['ssl_ca_cert']) as api:
        ready = api.nodes()
    assert {n.name for n in nodes} == set(ready)
    assert all(node.ready for node in ready.values())


def test_an_unreachable_repository_fails_prepare_naming_it(lab):
    # The gateway answers on the repository's port only: one port up,
    # nothing listens, and the connection is refused at once.
    mirror = manager.repository_url(SETTINGS.subnet)
    wrong = mirror.replace(':%d/' % manager.REPOSITORY_PORT,
                           ':%d/' % (manager.REPOSITORY_PORT + 1))
    assert wrong != mirror
    body = request('simple', kubernetes_apt_repository={'url': wrong})
    lab.up(body)
    with pytest.raises(exceptions.MgmtDriverError) as caught:
        lcm.instantiate(SETTINGS, request_body=body)
    text = str(caught.value)
    assert 'Traceback' not in text and '\n' not in text, text
    assert ('cannot fetch the signing key of the Kubernetes package '
            'repository from %sv1.35/deb/Release.key' % wrong) in text, text
    # Nothing was installed from anywhere.
    record = json.loads(open(SETTINGS.lab_file).read())
    for node in lab_status.read_topology(record).all_nodes():
        assert lab.vms.exec(node.server_id, ['dpkg-query', '-W', 'kubeadm'],
                            check=False).returncode == 1
