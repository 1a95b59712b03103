"""The request's ``cni`` presets on the lab with the REAL upstream
manifests: flannel with Multus beside it (and Calico on a second
cluster), fetched by the install script from the lab's mirror of
raw.githubusercontent.com (``cni.mirror``), checked against the pins of
k8s_mgmt/cni_presets.py, edited where the script edits them, applied with
kubectl, and kept as applied through a scale-out.

The manifests are the projects' own files at their release tags, read
from clones on this machine (k8s_mgmt_lab.machines.cni_mirror, checked
against their pins) and served over HTTP from the bridge's gateway beside
the lab's Kubernetes apt repository; the test is skipped, saying which
manifest is missing, where the clones are not.

Real parts: namespace VMs with OpenSSH, the driver, the install script,
curl, sha256sum, the upstream manifests byte for byte, etcd. Stand-ins:
the Kubernetes binaries (kubectl and the API server take every object of
the manifests, CustomResourceDefinitions included, and store them; no
pod runs, so no CNI networks anything), the OpenStack APIs but Keystone
and Heat.
"""

import copy
import hashlib
import json
import os
import shlex

import pytest
import yaml

from k8s_mgmt import cni_presets
from k8s_mgmt import exceptions
from k8s_mgmt import shipped
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import lcm_scale
from k8s_mgmt_lab.conductor import status as lab_status
from k8s_mgmt_lab.machines import cni_mirror
from k8s_mgmt_lab.machines import net

SETTINGS = manager.LabSettings(
    state_dir='/var/lib/k8s-mgmt-lab-test-cni', subnet='10.254.218.0/24',
    bridge='k8slabcn', tag='kcn', compute_hosts=3)
ROOT = 'k8s_cluster_installation_param'
# Not flannel's own 10.244.0.0/16: the script's edit shows.
POD_CIDR = '172.20.0.0/16'
NAD_PATH = shipped.sample_package() / 'Files' / 'kubernetes' / \
    'multus-macvlan-nad.yaml'
KUBECTL = ('kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf')
MULTUS_IMAGE = 'ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0'
NAD_CRD = 'network-attachment-definitions.k8s.cni.cncf.io'
SCRIPT_DIR = '/tmp/k8s-mgmt-cni-check'
TAMPERED_DIR = manager.CNI_MIRROR_DIR + '-tampered'

MISSING = cni_mirror.missing()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))


@pytest.fixture
def lab(make_lab):
    return make_lab(SETTINGS)


def request(cni, pod_cidr=None):
    body = manager.sample_on_subnet(shipped.sample_request('simple'),
                                    SETTINGS.subnet)
    root = body['additionalParams'][ROOT]
    root['cni'] = copy.deepcopy(cni)
    if pod_cidr:
        root['master_node']['pod_cidr'] = pod_cidr
    return body


def run(lab, node, *argv, check=True, input=None):
    return lab.vms.exec(node.server_id, list(argv), check=check, input=input,
                        timeout=120.0)


def api_get(lab, node, path, check=True):
    found = run(lab, node, *KUBECTL, 'get', '--raw', path, check=check)
    return json.loads(found.stdout) if found.returncode == 0 else None


def upstream(manifest):
    """The manifest's objects as upstream ships them, by (kind, name)."""
    data = cni_mirror.read(manifest)
    return {(doc['kind'], doc['metadata']['name']): doc
            for doc in yaml.safe_load_all(data) if doc}


def mirror_fetches():
    """The lines of the lab's HTTP server's log naming the CNI mirror."""
    path = os.path.join(SETTINGS.state_dir, 'k8s-apt.log')
    with open(path) as handle:
        return [line for line in handle
                if '/%s/' % manager.CNI_MIRROR_DIR in line]


def topology():
    with open(SETTINGS.lab_file) as handle:
        return lab_status.read_topology(json.load(handle))


def versions(lab, master):
    """resourceVersion of what the presets applied (and the sample
    NetworkAttachmentDefinition)."""
    paths = ('/apis/apps/v1/namespaces/kube-flannel/daemonsets/'
             'kube-flannel-ds',
             '/api/v1/namespaces/kube-flannel/configmaps/kube-flannel-cfg',
             '/apis/apps/v1/namespaces/kube-system/daemonsets/kube-multus-ds',
             '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/'
             + NAD_CRD,
             '/apis/k8s.cni.cncf.io/v1/namespaces/default/'
             'network-attachment-definitions/data-net')
    return {path: api_get(lab, master, path)['metadata']['resourceVersion']
            for path in paths}


def assert_flannel_and_multus(lab, master):
    flannel = upstream(cni_presets.PRESETS['flannel'])
    multus = upstream(cni_presets.MULTUS)

    # flannel: its DaemonSet as upstream ships it, its net-conf's Network
    # the cluster's pod CIDR and nothing else changed.
    ds = api_get(lab, master, '/apis/apps/v1/namespaces/kube-flannel/'
                 'daemonsets/kube-flannel-ds')
    assert ds['spec'] == flannel[('DaemonSet', 'kube-flannel-ds')]['spec']
    config = api_get(lab, master, '/api/v1/namespaces/kube-flannel/'
                     'configmaps/kube-flannel-cfg')
    shipped_conf = flannel[('ConfigMap', 'kube-flannel-cfg')]['data']
    net_conf = json.loads(config['data']['net-conf.json'])
    assert net_conf['Network'] == POD_CIDR
    assert json.loads(shipped_conf['net-conf.json'])['Network'] == \
        '10.244.0.0/16'
    assert dict(net_conf, Network='10.244.0.0/16') == json.loads(
        shipped_conf['net-conf.json'])
    assert config['data']['cni-conf.json'] == shipped_conf['cni-conf.json']
    assert api_get(lab, master, '/api/v1/namespaces/kube-flannel')[
        'status']['phase'] == 'Active'

    # Multus: its DaemonSet pinned to the release's image, every container.
    ds = api_get(lab, master, '/apis/apps/v1/namespaces/kube-system/'
                 'daemonsets/kube-multus-ds')
    pod = ds['spec']['template']['spec']
    images = [c['image'] for c in pod['containers'] + pod['initContainers']]
    assert images == [MULTUS_IMAGE] * 2, images
    wanted = json.loads(json.dumps(
        multus[('DaemonSet', 'kube-multus-ds')]['spec']).replace(
            'multus-cni:snapshot', 'multus-cni:v4.3.0'))
    assert ds['spec'] == wanted
    crd = api_get(lab, master, '/apis/apiextensions.k8s.io/v1/'
                  'customresourcedefinitions/' + NAD_CRD)
    assert crd['spec']['names']['kind'] == 'NetworkAttachmentDefinition'
    assert {c['type']: c['status'] for c in crd['status']['conditions']} == {
        'NamesAccepted': 'True', 'Established': 'True'}
    # The conductor's default CNI was not applied besides.
    assert api_get(lab, master, '/apis/apps/v1/namespaces/kube-system/'
                   'daemonsets/standin-cni', check=False) is None


def tampered_mirror():
    """A second mirror in the served tree whose flannel manifest has one
    byte changed ("Network": 20.244.0.0/16), Multus's as it is: its URL
    and the changed file's SHA-256."""
    root = os.path.join(SETTINGS.state_dir, manager.REPOSITORY_DIR,
                        TAMPERED_DIR)
    written = cni_mirror.build(root)['flannel']
    with open(written, 'rb') as handle:
        data = bytearray(handle.read())
    data[data.index(b'10.244.0.0/16')] = ord(b'2')
    with open(written, 'wb') as handle:
        handle.write(bytes(data))
    url = cni_mirror.url(net.gateway_of(SETTINGS.subnet),
                         manager.REPOSITORY_PORT, TAMPERED_DIR)
    return url, hashlib.sha256(bytes(data)).hexdigest()


def install_scripts(lab, node):
    """The shipped install script and its library on ``node``, to call its
    functions there."""
    for name in (shipped.INSTALL_SCRIPT, shipped.SCRIPT_LIBRARY):
        run(lab, node, 'install', '-D', '-m', '0755', '/dev/stdin',
            '%s/%s' % (SCRIPT_DIR, name),
            input=shipped.script(name).read_text())


def install_cni(lab, node, url):
    """The script's install_cni on ``node`` for flannel at ``url``, with
    its pin and edit, as the driver's -c/-d/-N give them."""
    flannel = cni_presets.PRESETS['flannel']
    shell = ('source %s/%s && CNI_MANIFEST=%s CNI_SHA256=%s '
             'CNI_EDIT=flannel-network POD_CIDR=%s install_cni' % (
                 SCRIPT_DIR, shipped.INSTALL_SCRIPT, shlex.quote(url),
                 flannel.sha256, POD_CIDR))
    return run(lab, node, 'env', 'K8S_MGMT_STATE_DIR=%s/state' % SCRIPT_DIR,
               'bash', '-c', shell, check=False)


def test_flannel_and_multus_from_the_mirror_through_a_scale_out(lab):
    body = request({'preset': 'flannel', 'multus': True,
                    'mirror': manager.cni_mirror_url(SETTINGS.subnet)},
                   POD_CIDR)
    lab.up(body, workers=1)
    mirror = manager.build_cni_mirror(SETTINGS)
    assert mirror == body['additionalParams'][ROOT]['cni']['mirror']
    lcm.instantiate(SETTINGS, request_body=body)

    first = topology()
    master = first.masters[0]
    # Fetched from the lab's mirror, once each: flannel's, then Multus's.
    fetched = mirror_fetches()
    flannel, multus = cni_presets.PRESETS['flannel'], cni_presets.MULTUS
    assert [line.split('"GET /', 1)[1].split()[0] for line in fetched] == [
        '%s/%s' % (manager.CNI_MIRROR_DIR, flannel.path),
        '%s/%s' % (manager.CNI_MIRROR_DIR, multus.path)], fetched
    assert all(line.startswith(master.nic_ip + ' ') and '" 200 ' in line
               for line in fetched), fetched
    assert run(lab, master, 'cat', '/var/lib/k8s-mgmt/cni.applied').stdout \
        == flannel.url(mirror) + '\n'
    assert run(lab, master, 'cat', '/var/lib/k8s-mgmt/multus.applied'
               ).stdout == multus.url(mirror) + '\n'
    for node in first.masters:
        assert_flannel_and_multus(lab, node)

    # The package's sample NetworkAttachmentDefinition goes in once the
    # CRD is there, and reads back through its plural and short name.
    nad = NAD_PATH.read_text()
    applied = run(lab, master, *KUBECTL, 'apply', '-f', '-', input=nad)
    assert applied.stdout.strip() == \
        'networkattachmentdefinition.k8s.cni.cncf.io/data-net created'
    again = run(lab, master, *KUBECTL, 'apply', '-f', '-', input=nad)
    assert again.stdout.strip().endswith('/data-net unchanged')
    for word in ('network-attachment-definitions', 'nad'):
        got = json.loads(run(lab, master, *KUBECTL, 'get', word, '-n',
                             'default', 'data-net', '-o', 'json').stdout)
        assert got['kind'] == 'NetworkAttachmentDefinition'
        assert got['spec'] == yaml.safe_load(nad)['spec']

    # A worker joining later changes none of it, and nothing is fetched.
    before = versions(lab, master)
    lcm_scale.scale(SETTINGS, 'SCALE_OUT')
    after = topology()
    added = [w for w in after.workers
             if w.server_id not in {x.server_id for x in first.workers}]
    assert len(added) == 1
    nodes = api_get(lab, master, '/api/v1/nodes')
    assert added[0].name in {n['metadata']['name'] for n in nodes['items']}
    assert versions(lab, master) == before
    assert mirror_fetches() == fetched
    for node in after.masters:
        assert_flannel_and_multus(lab, node)

    # A mirror serving flannel's manifest with one byte changed: the
    # script, on the master, refuses it naming both checksums, and
    # applies nothing.
    tampered_url, changed = tampered_mirror()
    install_scripts(lab, master)
    tampered = flannel.url(tampered_url)
    refused = install_cni(lab, master, tampered)
    assert refused.returncode != 0
    assert 'the CNI manifest %s has sha256:%s, not the pinned sha256:%s: ' \
        'refused' % (tampered, changed, flannel.sha256) in refused.stderr, \
        refused.stderr
    assert run(lab, master, 'test', '-e', SCRIPT_DIR + '/state/cni.applied',
               check=False).returncode == 1
    assert versions(lab, master) == before
    # The same call on the lab's true mirror passes the check and applies
    # (kubectl: every object unchanged).
    passed = install_cni(lab, master, flannel.url(mirror))
    assert passed.returncode == 0, passed.stderr
    assert versions(lab, master) == before


def test_calico_from_the_mirror(lab):
    body = request({'preset': 'calico',
                    'mirror': manager.cni_mirror_url(SETTINGS.subnet)})
    lab.up(body, workers=1)
    manager.build_cni_mirror(SETTINGS)
    lcm.instantiate(SETTINGS, request_body=body)

    master = topology().masters[0]
    calico = upstream(cni_presets.PRESETS['calico'])
    for (kind, name), doc in calico.items():
        if kind == 'CustomResourceDefinition':
            crd = api_get(lab, master, '/apis/apiextensions.k8s.io/v1/'
                          'customresourcedefinitions/' + name)
            assert crd['spec']['versions'] == doc['spec']['versions']
            established = [c for c in crd['status']['conditions']
                           if c['type'] == 'Established']
            assert established[0]['status'] == 'True', name
    ds = api_get(lab, master, '/apis/apps/v1/namespaces/kube-system/'
                 'daemonsets/calico-node')
    assert ds['spec'] == calico[('DaemonSet', 'calico-node')]['spec']
    deployment = api_get(lab, master, '/apis/apps/v1/namespaces/kube-system/'
                         'deployments/calico-kube-controllers')
    assert deployment['spec'] == calico[
        ('Deployment', 'calico-kube-controllers')]['spec']
    assert api_get(lab, master, '/apis/policy/v1/namespaces/kube-system/'
                   'poddisruptionbudgets/calico-kube-controllers')
    # Its custom resources are served (none is made: nothing runs).
    pools = api_get(lab, master, '/apis/crd.projectcalico.org/v1/ippools')
    assert pools['kind'] == 'IPPoolList' and pools['items'] == []
    assert api_get(lab, master, '/apis/apps/v1/namespaces/kube-system/'
                   'daemonsets/kube-multus-ds', check=False) is None


def test_a_mirror_serving_a_changed_byte_fails_instantiate_naming_both(
        lab):
    """Through the driver: the operator reads both checksums in the
    error (the driver masks bare 64-digit hex runs; the script names
    them as sha256:HEX), and nothing of the CNI was applied."""
    url = cni_mirror.url(net.gateway_of(SETTINGS.subnet),
                         manager.REPOSITORY_PORT, TAMPERED_DIR)
    body = request({'preset': 'flannel', 'multus': True, 'mirror': url},
                   POD_CIDR)
    lab.up(body, workers=1)
    served, changed = tampered_mirror()
    assert served == url
    with pytest.raises(exceptions.MgmtDriverError) as caught:
        lcm.instantiate(SETTINGS, request_body=body)
    flannel = cni_presets.PRESETS['flannel']
    text = str(caught.value)
    assert 'the CNI manifest %s has sha256:%s, not the pinned sha256:%s: ' \
        'refused' % (flannel.url(url), changed, flannel.sha256) in text, text
    master = topology().masters[0]
    assert api_get(lab, master, '/api/v1/namespaces/kube-flannel',
                   check=False) is None
    assert api_get(lab, master, '/apis/apps/v1/namespaces/kube-system/'
                   'daemonsets/kube-multus-ds', check=False) is None
    assert run(lab, master, 'test', '-e', '/var/lib/k8s-mgmt/cni.applied',
               check=False).returncode == 1
