"""A complex cluster connected to a private registry over HTTPS, with
Helm on its masters and the operator's own CNI manifest from the VNF
package, kept so through a scale-out and a master heal.

The registry is a lab VM where this project's setup_registry.sh installs
Debian's real docker-registry with apt-get and serves it over HTTPS with
a self-signed certificate it makes; the request names it by a host
name, with Tacker's ``private_registry_connection_info`` (the
certificate as its CA, a file of the VNF package; a hosts line for the
name). On every node the real containerd fetches an image pushed into
it, reading the driver's ``hosts.toml``; curl reaches ``/v2/`` with the
trust the driver installed and is refused when it trusts another CA.

Real parts: namespace VMs with OpenSSH, the driver, the install script,
apt-get and dpkg, Debian's containerd and docker-registry, curl,
update-ca-certificates, etcd, HAProxy and keepalived. Stand-ins: the
Kubernetes binaries, the OpenStack APIs but Keystone and Heat, and Helm's
client (a script answering ``helm version`` as Helm 3.16.2 does, in a
release archive laid out as Helm's; no Helm binary can be downloaded
here): what is checked of Helm is the install script's path, the archive
from the package, checked and installed on every master.
"""

import copy
import hashlib
import io
import ipaddress
import json
import os
import tarfile
import uuid

import pytest
import yaml

from k8s_mgmt import shipped
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import lcm_heal
from k8s_mgmt_lab.conductor import lcm_scale
from k8s_mgmt_lab.conductor import status as lab_status
from k8s_mgmt_lab.kube import layer
from k8s_mgmt_lab.machines import image_registry

SETTINGS = manager.LabSettings(
    state_dir='/var/lib/k8s-mgmt-lab-test-registry', subnet='10.254.217.0/24',
    bridge='k8slabrg', tag='krg', compute_hosts=4)
ROOT = 'k8s_cluster_installation_param'
NAME = 'registry.lab'
SERVER = '%s:%d' % (NAME, image_registry.PORT)
IMAGE = SERVER + '/lab/hello:1'
CA_PATH = 'Files/registry/ca.crt'
# The request's CNI, a manifest of the package: the lab's stand-in CNI
# under another name, so that it shows which manifest was applied.
CNI_PATH = 'Files/kubernetes/operator-cni.yaml'
CNI_YAML = layer.CNI_YAML.replace('standin-cni', 'operator-cni')
DAEMONSETS = '/apis/apps/v1/namespaces/kube-system/daemonsets/'
HELM = '3.16.2'
HELM_PATH = 'Files/helm/helm-v%s-linux-amd64.tar.gz' % HELM
HELM_STANDIN = b"""#!/bin/sh
# The lab's stand-in for Helm's client: "helm version" as Helm %s
# answers it, nothing else.
if [ "$1" = version ]; then
    if [ "$2" = --template ]; then printf 'v%s'; exit 0; fi
    echo 'version.BuildInfo{Version:"v%s", GoVersion:"lab stand-in"}'
    exit 0
fi
echo "helm (lab stand-in): only 'version'" >&2
exit 1
""" % ((HELM.encode(),) * 3)


@pytest.fixture
def lab(make_lab):
    return make_lab(SETTINGS)


def registry_ip():
    """Below the Ansible server's address: the lab cloud hands addresses
    out lowest first, and this cluster takes a dozen."""
    return str(ipaddress.ip_network(SETTINGS.subnet).broadcast_address - 2)


def helm_archive():
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode='w:gz') as archive:
        info = tarfile.TarInfo('linux-amd64/helm')
        info.size, info.mode = len(HELM_STANDIN), 0o755
        archive.addfile(info, io.BytesIO(HELM_STANDIN))
    return data.getvalue()


def plain_request():
    return manager.sample_on_subnet(shipped.sample_request('complex'),
                                    SETTINGS.subnet)


def request(ip):
    """The complex sample with the add-ons; their files go into the
    package at instantiate (``lab up`` checks a request against the
    package as it is then, without them)."""
    body = plain_request()
    body['additionalParams'][ROOT].update(copy.deepcopy({
        'private_registry_connection_info': [{
            'connection_type': 1, 'server': SERVER,
            'certificate_path': CA_PATH,
            'hosts_string': '%s %s' % (ip, NAME)}],
        'helm': {'version': HELM, 'archive_path': HELM_PATH},
        'cni': {'manifest': CNI_PATH}}))
    return body


def run(lab, node, *argv, check=True, input=None):
    return lab.vms.exec(node.server_id, list(argv), check=check, input=input,
                        timeout=120.0)


def assert_pulls_from_the_registry(lab, node, other_ca, digest):
    """containerd fetches the image through the driver's hosts.toml; the
    node trusts the registry's CA and no other."""
    hosts = run(lab, node, 'cat', '/etc/containerd/certs.d/%s/hosts.toml'
                % SERVER).stdout
    assert 'server = "https://%s"' % SERVER in hosts, (node.name, hosts)
    assert run(lab, node, 'getent', 'hosts', NAME).stdout.split()[0] == \
        registry_ip()
    assert run(lab, node, 'curl', '-fsS', '--max-time', '20',
               'https://%s/v2/' % SERVER).stdout.strip() == '{}'
    run(lab, node, 'install', '-m', '0644', '/dev/stdin', '/tmp/other-ca.pem',
        input=other_ca)
    # Another CA only: curl's default CA directory, /etc/ssl/certs, holds
    # the installed one, so an empty one replaces it.
    run(lab, node, 'install', '-d', '/tmp/no-ca')
    refused = run(lab, node, 'curl', '-sS', '--max-time', '20', '--cacert',
                  '/tmp/other-ca.pem', '--capath', '/tmp/no-ca',
                  'https://%s/v2/' % SERVER, check=False)
    # 60: the peer's certificate cannot be verified with the given CA.
    assert refused.returncode == 60, (node.name, refused.stderr)
    fetched = run(lab, node, 'ctr', 'content', 'fetch', '--hosts-dir',
                  '/etc/containerd/certs.d', IMAGE, check=False)
    assert fetched.returncode == 0, (node.name, fetched.stderr)
    assert digest in run(lab, node, 'ctr', 'content', 'ls').stdout


def assert_helm(lab, node):
    assert run(lab, node, 'helm', 'version', '--template',
               '{{.Version}}').stdout == 'v' + HELM, node.name


def topology():
    with open(SETTINGS.lab_file) as handle:
        return lab_status.read_topology(json.load(handle))


def test_every_node_pulls_from_the_registry_and_masters_have_helm(lab):
    ip = registry_ip()
    lab.up(plain_request())
    vm_id = str(uuid.uuid4())
    lab.vms.create(vm_id, 'registry-1', ip)
    base, ca_pem = image_registry.set_up(lab.vms, vm_id, ip, [NAME])
    digest = image_registry.push(base, ca_pem, 'lab/hello', '1',
                                 {'hello.txt': b'from the lab registry\n'})
    other_ca = image_registry.other_ca()
    archive = helm_archive()
    body = request(ip)
    body['additionalParams'][ROOT]['helm']['sha256'] = hashlib.sha256(
        archive).hexdigest()
    result = lcm.instantiate(SETTINGS, request_body=body, package_files={
        CA_PATH: ca_pem, HELM_PATH: archive, CNI_PATH: CNI_YAML.encode()})
    # Registered as a VIM Tacker's v2 API deploys Helm charts on.
    with open(os.path.join(result.driver_state, 'vim_config.yaml')) as src:
        assert yaml.safe_load(src)['extra'] == {'use_helm': True}

    first = topology()
    # The request's CNI manifest was applied, not the conductor's.
    kubectl = ('kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf',
               'get', '--raw')
    applied = json.loads(run(lab, first.masters[0], *kubectl,
                             DAEMONSETS + 'operator-cni').stdout)
    assert applied['metadata']['name'] == 'operator-cni'
    assert run(lab, first.masters[0], *kubectl, DAEMONSETS + 'standin-cni',
               check=False).returncode != 0
    for node in first.masters + first.workers:
        assert_pulls_from_the_registry(lab, node, other_ca, digest)
    for node in first.masters:
        assert_helm(lab, node)

    lcm_scale.scale(SETTINGS, 'SCALE_OUT')
    after_scale = topology()
    added = [node for node in after_scale.workers
             if node.server_id not in {w.server_id for w in first.workers}]
    assert added
    for node in added:
        assert_pulls_from_the_registry(lab, node, other_ca, digest)

    master = after_scale.masters[1]
    result = lcm_heal.heal(SETTINGS, master.vnfc_id)
    healed = topology().by_vnfc_id(master.vnfc_id)
    assert healed.server_id == result.new != master.server_id
    assert_pulls_from_the_registry(lab, healed, other_ca, digest)
    assert_helm(lab, healed)
