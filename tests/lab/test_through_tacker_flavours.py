"""The simple, storage, kubespray and podaffinity flavours through the lab's
real Tacker, one lab each (test_through_tacker.py runs every operation on
the complex flavour).

The simple flavour goes through the operator's own client: the README's
session with python-tackerclient (readme_session), scale and heal
included. The others are instantiated and terminated through Tacker's v1
API as ``k8s-mgmt lab`` calls it; the storage
flavour's server is healed too: refused by the driver when nothing says
what becomes of its volume (the operation fails, and the operator gives
it up with ``lab fail``), then healed with its volume kept and its data
still there. What Tacker says is read with python-tackerclient, the
cluster from inside a master.
"""

import collections
import json

import pytest

import readme_session
from lab_cli import LabCLI

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-tacker-fl'
k8s_mgmt = LabCLI(STATE_DIR, bridge='k8slabtf', tag='ktf', timeout=1800)
SUBNET = '10.254.252.0/24'

VDUS = {'master': 'masterNode', 'worker': 'workerNode',
        'storage': 'storage_server', 'external_lb': 'externalLB'}


def _kubectl(master, *args):
    return k8s_mgmt('exec', master['server_id'], '--', 'kubectl',
                    '--kubeconfig', '/etc/kubernetes/admin.conf',
                    *args).stdout


def _status():
    return json.loads(k8s_mgmt('status', '--json').stdout)


def _op_state(op_id):
    return readme_session.openstack_json(k8s_mgmt, 'vnflcm', 'op', 'show',
                                         op_id)


def _check_podaffinity(status, master):
    labelled = json.loads(_kubectl(master, 'get', 'nodes', '-o',
                                   'json'))['items']
    hosts = {n['metadata']['name']: n['metadata']['labels'].get('CIS-node')
             for n in labelled}
    for vm in status['vms']:
        if vm['role'] == 'worker':
            assert vm['compute_host'], vm
            assert hosts[vm['name']] == vm['compute_host'], hosts
        else:
            assert hosts[vm['name']] is None, hosts


def _check_kubespray():
    # The masters' aspect never scales: Tacker's own API refuses it.
    before = len(_status()['vms'])
    refused = k8s_mgmt('scale', '--type', 'SCALE_OUT', '--aspect-id',
                       'master_instance', check=False)
    assert refused.returncode == 1
    assert 'can not scale_out' in refused.stderr, refused.stderr
    assert len(_status()['vms']) == before


def _check_storage_heal(status, master):
    pvs = _kubectl(master, 'get', 'pv', '-o', 'name').split()
    assert pvs and all(p.startswith('persistentvolume/') for p in pvs)
    storage = next(vm for vm in status['vms'] if vm['role'] == 'storage')
    k8s_mgmt('exec', storage['server_id'], '--', 'sh', '-c',
             'echo kept > /volume/tacker-heal-marker')
    # Nothing says what becomes of the volume: the driver refuses.
    refused = k8s_mgmt('heal', '--vnfc', storage['vnfc_id'], check=False)
    assert refused.returncode == 1
    line = refused.stderr.strip().splitlines()[-1]
    assert 'FAILED_TEMP' in line and 'Heal refused' in line, line
    assert 'new, empty Cinder volume' in line, line
    k8s_mgmt('fail')
    assert _op_state(_status()['tacker']['last_op']['id'])[
        'operationstate'] == 'FAILED'
    # Kept: a new server, the same volume, the data still there.
    report = json.loads(k8s_mgmt('heal', '--vnfc', storage['vnfc_id'],
                                 '--keep-volumes', '--json').stdout)
    assert report['operation_state'] == 'COMPLETED'
    healed = next(vm for vm in _status()['vms'] if vm['role'] == 'storage')
    assert healed['server_id'] != storage['server_id']
    marker = k8s_mgmt('exec', healed['server_id'], '--', 'cat',
                      '/volume/tacker-heal-marker').stdout
    assert marker.strip() == 'kept'


def test_the_simple_flavour_through_the_operators_own_client(
        assert_lab_clean, tmp_path):
    """The README's session (readme_session) with python-tackerclient,
    for the simple flavour: package, instance, instantiate, scale out, heal
    a worker, terminate, delete; the cluster Ready after each."""
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', 'simple', '--subnet', SUBNET,
                 '--own-control-plane')
        session = readme_session.Session(
            k8s_mgmt, str(tmp_path), _status()['tacker']['vim_id'],
            flavour='simple')
        session.run()
        # Instantiated: 1 master, 1 worker; scaled out: 2 workers; healed.
        assert [len(nodes) for nodes in session.ready_nodes] == [2, 3, 3]
        assert not json.loads(k8s_mgmt('openstack', 'vnflcm', 'list', '-f',
                                       'json').stdout)


@pytest.mark.parametrize('flavour, roles', [
    ('storage', {'master': 1, 'worker': 1, 'storage': 1}),
    ('kubespray', {'master': 3, 'worker': 1, 'external_lb': 1,
                   'ansible_server': 1}),
    ('podaffinity', {'master': 3, 'worker': 1}),
])
def test_flavour_through_tacker(assert_lab_clean, flavour, roles):
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', flavour, '--subnet', SUBNET,
                 '--own-control-plane')
        report = json.loads(k8s_mgmt('instantiate', '--json').stdout)
        assert report['operation_state'] == 'COMPLETED'
        nodes = report['cluster']['nodes']
        assert len(nodes) == roles['master'] + roles['worker']
        assert all(n['ready'] for n in nodes), nodes
        status = _status()
        found = collections.Counter(vm['role'] for vm in status['vms'])
        assert found == roles
        assert status['heat']['stack_name'] == (
            'vnflcm_%s' % report['vnf_instance_id'])
        # One VNFC per VM of the stack (the Ansible server is outside it).
        assert collections.Counter(v['vdu_id'] for v in report['vnfcs']) \
            == {VDUS[role]: n for role, n in roles.items() if role in VDUS}
        master = next(vm for vm in status['vms'] if vm['role'] == 'master')
        if flavour == 'storage':
            _check_storage_heal(status, master)
        if flavour == 'podaffinity':
            _check_podaffinity(status, master)
        if flavour == 'kubespray':
            _check_kubespray()
        done = json.loads(k8s_mgmt('terminate', '--json').stdout)
        assert done['instantiation_state'] == 'NOT_INSTANTIATED'
        assert _op_state(done['op_occ_id'])['operationstate'] == 'COMPLETED'
