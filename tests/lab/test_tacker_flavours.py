"""The storage and kubespray flavours instantiated and terminated through
Tacker's own conductor (``lab ... --tacker``), one lab each.

test_tacker_loop.py runs every operation on the complex flavour; this
module checks that the two flavours with VMs of other kinds (the NFS
storage server and its Cinder volume; the external load balancer, with the
Ansible server outside the stack) come up through Tacker too: Tacker's
database read directly, the cluster read through the Kubernetes VIM the
driver registered in Tacker, the storage server's PersistentVolumes from
inside the master.
"""

import contextlib
import json
import os
import sqlite3

import pytest

from lab_cli import LabCLI

pytest.importorskip('tacker', reason='tacker extra not installed')

pytestmark = pytest.mark.tacker

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-tacker-fl'
DATABASE = os.path.join(STATE_DIR, 'tacker', 'tacker.sqlite')
k8s_mgmt = LabCLI(STATE_DIR, bridge='k8slabtf', tag='ktf', timeout=900)


def _states():
    with contextlib.closing(sqlite3.connect(DATABASE)) as conn:
        (state,) = conn.execute('SELECT instantiation_state FROM '
                                'vnf_instances WHERE deleted = 0').fetchone()
        op = conn.execute('SELECT operation, operation_state FROM '
                          'vnf_lcm_op_occs ORDER BY start_time DESC, '
                          'state_entered_time DESC LIMIT 1').fetchone()
    return state, tuple(op)


@pytest.mark.parametrize('flavour, roles', [
    ('storage', {'master': 1, 'worker': 1, 'storage': 1}),
    ('kubespray', {'master': 3, 'worker': 1, 'external_lb': 1,
                   'ansible_server': 1}),
])
def test_flavour_instantiates_and_terminates_through_tacker(
        assert_lab_clean, flavour, roles):
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', flavour, '--subnet', '10.254.252.0/24')
        report = json.loads(k8s_mgmt('instantiate', '--tacker', '--json',
                                     '--quiet').stdout)
        assert _states() == ('INSTANTIATED', ('INSTANTIATE', 'COMPLETED'))
        nodes = report['cluster']['nodes']
        assert len(nodes) == roles['master'] + roles['worker']
        assert all(n['ready'] for n in nodes), nodes
        status = json.loads(k8s_mgmt('status', '--json').stdout)
        found = {}
        for vm in status['vms']:
            found[vm['role']] = found.get(vm['role'], 0) + 1
        assert found == roles
        assert status['heat']['stack_name'] == (
            'vnflcm_%s' % report['vnf_instance_id'])
        if flavour == 'storage':
            master = next(vm for vm in status['vms']
                          if vm['role'] == 'master')
            pvs = k8s_mgmt('exec', master['server_id'], '--', 'kubectl',
                           '--kubeconfig', '/etc/kubernetes/admin.conf',
                           'get', 'pv', '-o', 'name').stdout.split()
            assert pvs and all(p.startswith('persistentvolume/')
                               for p in pvs)
        k8s_mgmt('terminate', '--tacker', '--json', '--quiet')
        assert _states() == ('NOT_INSTANTIATED', ('TERMINATE', 'COMPLETED'))
