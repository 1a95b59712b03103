"""Every LCM operation through Tacker's own conductor, on one complex lab.

``k8s-mgmt lab <verb> --tacker`` runs Tacker 16 (from PyPI) in a process of
its own: its v1 VNF LCM controller and conductor, its OpenStack infra
driver talking to the lab's Heat over REST, its driver manager loading our
MgmtDriver from the entry point. The operations run in order on one lab,
as an operator would run them; after each, the test reads Tacker's
database itself (SQLite, next to the lab's state) and the cluster from
inside a master VM, not the harness's report alone.

Real: Tacker's code paths, python-heatclient, the lab's VMs with OpenSSH,
HAProxy, keepalived and etcd. Stand-ins: the OpenStack APIs (the lab's),
the Kubernetes binaries, and for Tacker the message bus (calls delivered
in-process), Barbican (a file key manager) and MySQL (SQLite).
"""

import contextlib
import json
import os
import sqlite3

import pytest

from lab_cli import LabCLI

from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import hook_trace
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import lcm_heal
from k8s_mgmt_lab.conductor import lcm_scale

pytest.importorskip('tacker', reason='tacker extra not installed')

pytestmark = pytest.mark.tacker

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-tacker'
DATABASE = os.path.join(STATE_DIR, 'tacker', 'tacker.sqlite')
k8s_mgmt = LabCLI(STATE_DIR, bridge='k8slabtt', tag='ktt', timeout=900)


class NoCluster(object):
    """A driver whose hooks do nothing: the lab's conductor is traced for
    what it passes, not for a cluster."""

    def _nothing(self, **kwargs):
        return None

    instantiate_start = instantiate_end = _nothing
    scale_start = scale_end = heal_start = heal_end = _nothing
    terminate_start = terminate_end = _nothing


def _up():
    # Tacker's v1 infra driver names no region: the lab's stand-ins must
    # be in RegionOne, of a control plane of its own.
    k8s_mgmt('up', '--flavour', 'complex', '--workers', '1',
             '--subnet', '10.254.251.0/24', '--own-control-plane')


def _lab_conductor_trace(path):
    """The operations of this module through the lab's own conductor."""
    settings = manager.LabSettings(state_dir=STATE_DIR)
    driver = hook_trace.Recorder(NoCluster(), path)
    lcm.instantiate(settings, driver=driver)
    lcm_scale.scale(settings, lcm_scale.SCALE_OUT, driver=driver)
    lcm_scale.scale(settings, lcm_scale.SCALE_IN, driver=driver)
    for role in ('worker', 'master'):
        lcm_heal.heal(settings, _vnfc_of(_status(), role)['vnfc_id'],
                      driver=driver)
    lcm_heal.heal(settings, None, driver=driver)
    lcm_scale.terminate(settings, driver=driver)
    return hook_trace.read(path)


@pytest.fixture(scope='module')
def lab(assert_lab_clean, tmp_path_factory):
    with k8s_mgmt.fresh(assert_lab_clean):
        _up()
        trace = _lab_conductor_trace(
            str(tmp_path_factory.mktemp('trace') / 'lab.jsonl'))
        k8s_mgmt('down')
        # A plain "lab up" (its own stack): instantiate --tacker replaces
        # it with the stack Tacker creates.
        _up()
        k8s_mgmt.lab_trace = trace
        yield k8s_mgmt


def _run(*args):
    proc = k8s_mgmt(*(args + ('--tacker', '--json')))
    return json.loads(proc.stdout)


def _db(query, *params):
    with contextlib.closing(sqlite3.connect(DATABASE)) as conn:
        return conn.execute(query, params).fetchall()


def _data(stored):
    """A versioned object's fields as Tacker stores them in a JSON
    column (its primitive form), or a plain dict as it is."""
    return stored.get('tacker_object.data', stored)


def _instance():
    (row,) = _db('SELECT id, instantiation_state, task_state '
                 'FROM vnf_instances WHERE deleted = 0')
    return row


def _last_op():
    return _db('SELECT operation, operation_state, error FROM '
               'vnf_lcm_op_occs ORDER BY start_time DESC, '
               'state_entered_time DESC LIMIT 1')[0]


def _status():
    return json.loads(k8s_mgmt('status', '--json').stdout)


def _cluster_nodes(status):
    """{node name: Ready} as the API server inside a master reports."""
    master = next(vm for vm in status['vms'] if vm['role'] == 'master')
    proc = k8s_mgmt('exec', master['server_id'], '--', 'kubectl',
                    '--kubeconfig', '/etc/kubernetes/admin.conf', 'get',
                    'nodes', '-o', 'json')
    nodes = {}
    for item in json.loads(proc.stdout)['items']:
        ready = [c for c in item['status']['conditions']
                 if c['type'] == 'Ready']
        nodes[item['metadata']['name']] = bool(
            ready and ready[0]['status'] == 'True')
    return nodes


def _assert_done(operation, masters, workers):
    """Tacker's database and the cluster agree with the lab's Heat."""
    inst_id, state, task_state = _instance()
    assert state == 'INSTANTIATED' and task_state is None
    op, op_state, error = _last_op()
    assert (op, op_state) == (operation, 'COMPLETED'), error
    status = _status()
    roles = sorted(vm['role'] for vm in status['vms'])
    assert roles == ['master'] * masters + ['worker'] * workers
    nodes = _cluster_nodes(status)
    assert len(nodes) == masters + workers and all(nodes.values()), nodes
    return inst_id, status


def test_instantiate_through_tacker(lab):
    report = _run('instantiate')
    assert report['instantiation_state'] == 'INSTANTIATED'
    inst_id, status = _assert_done('INSTANTIATE', 3, 1)
    # Tacker's stack and Tacker's VNFC ids, as the lab now shows them.
    assert status['heat']['stack_name'] == 'vnflcm_%s' % inst_id
    (info,) = _db('SELECT vnfc_resource_info FROM vnf_instantiated_info '
                  'WHERE vnf_instance_id = ?', inst_id)
    vnfcs = {_data(_data(v)['compute_resource'])['resource_id']:
             _data(v)['id'] for v in json.loads(info[0])}
    assert {vm['server_id']: vm['vnfc_id'] for vm in status['vms']} == vnfcs


def test_scale_out_and_in_through_tacker(lab):
    _run('scale', '--type', 'SCALE_OUT')
    _, status = _assert_done('SCALE', 3, 2)
    before = {vm['name'] for vm in status['vms'] if vm['role'] == 'worker'}
    _run('scale', '--type', 'SCALE_IN')
    _, status = _assert_done('SCALE', 3, 1)
    after = {vm['name'] for vm in status['vms'] if vm['role'] == 'worker'}
    assert after < before


def _vnfc_of(status, role):
    return next(vm for vm in status['vms'] if vm['role'] == role)


def _heal_vnfc(role):
    """Heal one VNFC by Tacker's id: same VNFC, a new server."""
    before = _vnfc_of(_status(), role)
    _run('heal', '--vnfc', before['vnfc_id'])
    _, status = _assert_done('HEAL', 3, 1)
    healed = next(vm for vm in status['vms']
                  if vm['vnfc_id'] == before['vnfc_id'])
    assert healed['server_id'] != before['server_id']


def test_heal_a_worker_through_tacker(lab):
    _heal_vnfc('worker')


def test_heal_a_master_through_tacker(lab):
    _heal_vnfc('master')


def test_heal_the_whole_vnf_through_tacker(lab):
    before = _status()
    _run('heal')
    _, status = _assert_done('HEAL', 3, 1)
    old = {vm['server_id'] for vm in before['vms']}
    assert not old & {vm['server_id'] for vm in status['vms']}


def test_terminate_through_tacker(lab):
    _run('terminate')
    _inst_id, state, _task = _instance()
    assert state == 'NOT_INSTANTIATED'
    op, op_state, error = _last_op()
    assert (op, op_state) == ('TERMINATE', 'COMPLETED'), error
    assert not _status()['vms']


def test_the_lab_conductor_passes_what_tackers_passes(lab):
    """Same hooks in the same order, same arguments' shapes; the lab-only
    keyword arguments are left out of both (hook_trace.LAB_ONLY_KWARGS)."""
    tacker = hook_trace.read(os.path.join(STATE_DIR, 'tacker',
                                          'hooks.jsonl'))
    assert [c['hook'] for c in tacker] == [
        'instantiate_start', 'instantiate_end', 'scale_end', 'scale_start',
        'heal_start', 'heal_end', 'heal_start', 'heal_end', 'heal_start',
        'heal_end', 'terminate_start', 'terminate_end']
    found = hook_trace.differences(lab.lab_trace, tacker)
    assert not found, '\n'.join(found + [json.dumps(tacker)])
