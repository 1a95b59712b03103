"""The registry VNF and a complex cluster that pulls from it, on one lab
network: the registry kept through a heal of its VM (images, address and
certificate), the cluster connected to it with Helm on every master and
Multus installed, kept so through a scale-out and a master heal.

The registry flavour's VM is built by the driver from the sample
package's registry flavour (Heat stack: VM, port, Cinder volume): the
volume prepared by ``setup_storage.sh volumes``, Debian's real
docker-registry installed by ``setup_registry.sh`` over HTTPS with a
self-signed certificate for a host name, made once on the volume. A heal
that would give it an empty volume is refused in words; one that keeps
the volume brings the same images, address and certificate back on a new
VM. The cluster names the registry by that host name, with Tacker's
``private_registry_connection_info`` (the published CA as a file of the
VNF package, a hosts line); on every node the real containerd fetches an
image pushed into the registry, reading the driver's ``hosts.toml``, and
curl is refused when it trusts another CA.

Its CNI is the operator's own manifest from the package, and Multus the
pinned upstream release manifest (byte for byte, checked against its
SHA-256 by the install script) from the lab's mirror of GitHub's raw
file host, with its image pinned to the release's tag.

Real parts: namespace VMs with OpenSSH, the driver, the node scripts,
apt-get and dpkg, ext4 on a loop device for the Cinder volume, Debian's
containerd and docker-registry, curl, update-ca-certificates, etcd,
HAProxy, keepalived, Keystone and Heat. Stand-ins: the Kubernetes
binaries (objects are stored, no pod runs), Nova, Neutron, Cinder and
Glance, and Helm's client (a script answering ``helm version`` in a
release archive laid out as Helm's).
"""

import base64
import hashlib
import io
import json
import os
import tarfile

import pytest

from k8s_mgmt import cni_presets
from k8s_mgmt import exceptions
from k8s_mgmt import shipped
from k8s_mgmt_lab import companions
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import lcm_heal
from k8s_mgmt_lab.conductor import lcm_scale
from k8s_mgmt_lab.conductor import status as lab_status
from k8s_mgmt_lab.kube import layer
from k8s_mgmt_lab.machines import cni_mirror
from k8s_mgmt_lab.machines import image_registry

SETTINGS = manager.LabSettings(
    state_dir='/var/lib/k8s-mgmt-lab-test-registry-vnf',
    subnet='10.254.219.0/24', bridge='k8slabrv', tag='krv', compute_hosts=5)
ROOT = 'k8s_cluster_installation_param'
REGISTRY_ROOT = 'private_registry_installation_param'
NAME = 'registry.lab'
SERVER = '%s:%d' % (NAME, image_registry.PORT)
IMAGE = SERVER + '/lab/hello:1'
CA_PATH = 'Files/registry/ca.crt'
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
# A login every node's containerd keeps for the registry (this registry
# asks for none: what is checked is that containerd reads it).
LOGIN = ('robot$lab', 'Pu11-pw')


@pytest.fixture
def lab(make_lab):
    return make_lab(SETTINGS)


def helm_archive():
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode='w:gz') as archive:
        info = tarfile.TarInfo('linux-amd64/helm')
        info.size, info.mode = len(HELM_STANDIN), 0o755
        archive.addfile(info, io.BytesIO(HELM_STANDIN))
    return data.getvalue()


def registry_request():
    body = manager.sample_on_subnet(shipped.sample_request('registry'),
                                    SETTINGS.subnet)
    body['additionalParams'][REGISTRY_ROOT]['tls'] = {'host_names': [NAME]}
    return body


def cluster_request(registry_ip, mirror):
    body = manager.sample_on_subnet(shipped.sample_request('complex'),
                                    SETTINGS.subnet)
    body['additionalParams'][ROOT].update({
        'private_registry_connection_info': [{
            'connection_type': 1, 'server': SERVER,
            'certificate_path': CA_PATH,
            'hosts_string': '%s %s' % (registry_ip, NAME),
            'username': LOGIN[0], 'password': LOGIN[1]}],
        'helm': {'version': HELM, 'archive_path': HELM_PATH,
                 'sha256': hashlib.sha256(helm_archive()).hexdigest()},
        'cni': {'manifest': CNI_PATH, 'multus': True, 'mirror': mirror}})
    return body


def run(lab, node, *argv, check=True, input=None):
    return lab.vms.exec(node.server_id, list(argv), check=check, input=input,
                        timeout=120.0)


def topology(settings):
    with open(settings.lab_file) as handle:
        return lab_status.read_topology(json.load(handle))


def published(result):
    with open(os.path.join(result.driver_state, 'registry.json')) as src:
        return json.load(src)


def assert_pulls_from_the_registry(lab, node, registry_ip, other_ca, digest):
    """containerd fetches the image through the driver's hosts.toml; the
    node trusts the registry's CA and no other."""
    hosts = run(lab, node, 'cat', '/etc/containerd/certs.d/%s/hosts.toml'
                % SERVER).stdout
    assert 'server = "https://%s"' % SERVER in hosts, (node.name, hosts)
    assert run(lab, node, 'getent', 'hosts', NAME).stdout.split()[0] == \
        registry_ip
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


def assert_login_kept_for_containerd(lab, node):
    """The login is in containerd's configuration, as containerd itself
    reads it (``containerd config dump``), in a file only root reads."""
    config = '/etc/containerd/config.toml'
    assert run(lab, node, 'stat', '-c', '%a', config).stdout.strip() == \
        '600', node.name
    dumped = run(lab, node, 'containerd', 'config', 'dump').stdout
    auth = base64.b64encode(('%s:%s' % LOGIN).encode()).decode()
    lines = dumped.splitlines()
    header = [i for i, line in enumerate(lines) if line.strip().endswith(
        '.registry.configs."%s".auth]' % SERVER)]
    assert len(header) == 1, (node.name, dumped)
    body = []
    for line in lines[header[0] + 1:]:
        if line.strip().startswith('['):
            break
        body.append(line.strip())
    assert 'auth = "%s"' % auth in body, (node.name, body)


def assert_helm(lab, node):
    assert run(lab, node, 'helm', 'version', '--template',
               '{{.Version}}').stdout == 'v' + HELM, node.name


def assert_cni_and_multus(lab, master):
    kubectl = ('kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf',
               'get', '--raw')
    applied = json.loads(run(lab, master, *kubectl,
                             DAEMONSETS + 'operator-cni').stdout)
    assert applied['metadata']['name'] == 'operator-cni'
    multus = json.loads(run(lab, master, *kubectl,
                            DAEMONSETS + 'kube-multus-ds').stdout)
    images = {c['image'] for c in multus['spec']['template']['spec'][
        'containers']}
    assert images == {'ghcr.io/k8snetworkplumbingwg/multus-cni:%s'
                      % cni_presets.multus_image_tag()}, images
    run(lab, master, *kubectl, '/apis/apiextensions.k8s.io/v1/'
        'customresourcedefinitions/network-attachment-definitions.'
        'k8s.cni.cncf.io')


def test_a_cluster_pulls_from_the_registry_vnf_through_its_heals(lab):
    missing = cni_mirror.missing()
    if missing:
        pytest.skip('the CNI mirror cannot be built here: %s' % missing)
    lab.up(manager.sample_on_subnet(shipped.sample_request('complex'),
                                    SETTINGS.subnet))
    mirror = manager.build_cni_mirror(SETTINGS)

    # The registry VNF, beside the cluster's stack on the lab network.
    registry = companions.add(lab, 'registry', registry_request())
    made = lcm.instantiate(registry)
    record = published(made)
    [vm] = topology(registry).registries
    assert record['url'] == 'https://%s:5000' % vm.nic_ip
    assert record['certificate'] == 'certificate made'
    ca_pem = record['ca_pem'].encode()
    assert ca_pem == run(lab, vm, 'cat',
                         image_registry.DATA_DIR + '/tls/tls.crt').stdout \
        .encode()
    mount = run(lab, vm, 'findmnt', '-rn', '-o', 'FSTYPE,OPTIONS',
                image_registry.DATA_DIR).stdout
    assert mount.startswith('ext4 ') and 'nosuid' in mount, mount
    base = record['url']
    digest = image_registry.push(base, ca_pem, 'lab/hello', '1',
                                 {'hello.txt': b'from the registry VNF\n'})

    # A heal that would empty the volume is refused before any change.
    with pytest.raises(exceptions.MgmtDriverError) as refused:
        lcm_heal.heal(registry, vm.vnfc_id)
    assert 'every image in the registry %s' % base in str(refused.value)
    assert topology(registry).registries[0].server_id == vm.server_id
    # Kept: a new VM on the same volume, address and certificate.
    healed = lcm_heal.heal(registry, vm.vnfc_id, keep_volumes=True)
    assert healed.new != vm.server_id
    again = published(made)
    assert again['ca_pem'] == record['ca_pem']
    assert again['certificate'] == 'certificate kept'
    assert again['url'] == base
    assert image_registry.manifest_digest(base, ca_pem, 'lab/hello',
                                          '1') == digest

    # The cluster, connected to it by host name.
    other_ca = image_registry.other_ca()
    body = cluster_request(vm.nic_ip, mirror)
    result = lcm.instantiate(SETTINGS, request_body=body, package_files={
        CA_PATH: ca_pem, HELM_PATH: helm_archive(),
        CNI_PATH: CNI_YAML.encode()})
    with open(os.path.join(result.driver_state, 'vim_config.yaml')) as src:
        assert 'use_helm: true' in src.read()
    first = topology(SETTINGS)
    assert_cni_and_multus(lab, first.masters[0])
    for node in first.masters + first.workers:
        assert_pulls_from_the_registry(lab, node, vm.nic_ip, other_ca,
                                       digest)
    for node in first.masters:
        assert_helm(lab, node)
    assert_login_kept_for_containerd(lab, first.workers[0])

    lcm_scale.scale(SETTINGS, 'SCALE_OUT')
    after_scale = topology(SETTINGS)
    added = [node for node in after_scale.workers
             if node.server_id not in {w.server_id for w in first.workers}]
    assert added
    for node in added:
        assert_pulls_from_the_registry(lab, node, vm.nic_ip, other_ca,
                                       digest)

    master = after_scale.masters[1]
    result = lcm_heal.heal(SETTINGS, master.vnfc_id)
    healed_master = topology(SETTINGS).by_vnfc_id(master.vnfc_id)
    assert healed_master.server_id == result.new != master.server_id
    assert_pulls_from_the_registry(lab, healed_master, vm.nic_ip, other_ca,
                                   digest)
    assert_helm(lab, healed_master)
    assert_cni_and_multus(lab, healed_master)
    assert_login_kept_for_containerd(lab, healed_master)

    # The registry VNF terminated: its state forgotten.
    lcm_scale.terminate(registry)
    assert not os.path.exists(made.driver_state)
