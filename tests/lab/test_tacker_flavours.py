"""The storage, kubespray and podaffinity flavours instantiated and
terminated through Tacker's own conductor (``lab ... --tacker``), one lab
each.

test_tacker_loop.py runs every operation on the complex flavour; this
module checks that the other flavours come up through Tacker too: the two
with VMs of other kinds (the NFS storage server and its Cinder volume; the
external load balancer, with the Ansible server outside the stack) and the
one that labels workers with the compute host Nova placed them on.
Tacker's database is read directly (states, and one VNFC per VM of the
stack), the cluster through the Kubernetes VIM the driver registered in
Tacker, the PersistentVolumes and node labels from inside a master.
"""

import collections
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


VDUS = {'master': 'masterNode', 'worker': 'workerNode',
        'storage': 'storage_server', 'external_lb': 'externalLB'}


def _kubectl(master, *args):
    return k8s_mgmt('exec', master['server_id'], '--', 'kubectl',
                    '--kubeconfig', '/etc/kubernetes/admin.conf',
                    *args).stdout


@pytest.mark.parametrize('flavour, roles', [
    ('storage', {'master': 1, 'worker': 1, 'storage': 1}),
    ('kubespray', {'master': 3, 'worker': 1, 'external_lb': 1,
                   'ansible_server': 1}),
    ('podaffinity', {'master': 3, 'worker': 1}),
])
def test_flavour_instantiates_and_terminates_through_tacker(
        assert_lab_clean, flavour, roles):
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', flavour, '--subnet', '10.254.252.0/24',
                 '--own-control-plane')    # Tacker names no region
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
        # One VNFC per VM of the stack in Tacker's instantiated_vnf_info
        # (the Ansible server is outside the stack).
        vnfcs = collections.Counter(
            v['vdu_id'] for v in
            report['instantiated_vnf_info']['vnfc_resource_info'])
        assert vnfcs == {VDUS[role]: count for role, count in roles.items()
                         if role in VDUS}
        master = next(vm for vm in status['vms'] if vm['role'] == 'master')
        if flavour == 'storage':
            pvs = _kubectl(master, 'get', 'pv', '-o', 'name').split()
            assert pvs and all(p.startswith('persistentvolume/')
                               for p in pvs)
        if flavour == 'podaffinity':
            labelled = json.loads(_kubectl(master, 'get', 'nodes', '-o',
                                           'json'))['items']
            hosts = {n['metadata']['name']:
                     n['metadata']['labels'].get('CIS-node')
                     for n in labelled}
            for vm in status['vms']:
                if vm['role'] == 'worker':
                    assert vm['compute_host'], vm
                    assert hosts[vm['name']] == vm['compute_host'], hosts
                else:
                    assert hosts[vm['name']] is None, hosts
        if flavour == 'kubespray':
            # The masters' aspect never scales: Tacker's own API refuses.
            refused = k8s_mgmt('scale', '--tacker', '--type', 'SCALE_OUT',
                               '--aspect-id', 'master_instance', check=False)
            assert refused.returncode != 0
            assert 'can not scale_out' in refused.stderr, refused.stderr
            assert _states()[0] == 'INSTANTIATED'
            assert len(json.loads(k8s_mgmt('status', '--json').stdout)[
                'vms']) == len(status['vms'])
        k8s_mgmt('terminate', '--tacker', '--json', '--quiet')
        assert _states() == ('NOT_INSTANTIATED', ('TERMINATE', 'COMPLETED'))
