"""Worker labels decided from placement data and the grant."""

import dataclasses

from k8s_mgmt.shared_phases import labels
from k8s_mgmt.kube import NodeState

import op_helpers


def test_cis_node_only_when_workers_are_in_an_anti_affinity_group():
    spread = op_helpers.topology(3, 2, vip='10.0.0.9', anti_affinity=True)
    assert labels.worker_labels(spread) == {
        'worker-1': {'CIS-node': 'compute-1'},
        'worker-2': {'CIS-node': 'compute-2'}}
    plain = op_helpers.topology(3, 2, vip='10.0.0.9')
    assert labels.worker_labels(plain) == {}


def test_an_affinity_group_gives_no_cis_node():
    topo = op_helpers.topology(1, 2, anti_affinity=True)
    group = dataclasses.replace(topo.server_groups[0], policies=('affinity',))
    topo = dataclasses.replace(topo, server_groups=(group,))
    assert labels.worker_labels(topo) == {}


def test_invalid_compute_host_is_skipped_not_sent():
    topo = op_helpers.topology(1, 1, anti_affinity=True)
    bad = dataclasses.replace(topo.workers[0], compute_host='host with space')
    topo = dataclasses.replace(topo, workers=(bad,))
    assert labels.worker_labels(topo) == {}


def test_zone_from_a_tacker_shaped_grant():
    topo = op_helpers.topology(1, 2)
    grant = {'zones': [{'id': 'z1', 'zone_id': 'az-1'},
                       {'id': 'z2', 'zone_id': 'az-2'}],
             'add_resources': [
                 {'resource_definition_id': 'vnfc-worker-1', 'zone_id': 'z1'},
                 {'resource_definition_id': 'vnfc-worker-2', 'zone_id': 'z2'}]}
    assert labels.worker_labels(topo, grant) == {
        'worker-1': {labels.ZONE: 'az-1'}, 'worker-2': {labels.ZONE: 'az-2'}}


def test_single_zone_in_a_camelcase_grant_applies_to_every_worker():
    topo = op_helpers.topology(1, 2, anti_affinity=True)
    grant = {'zones': [{'id': 'z1', 'zoneId': 'nova'}], 'addResources': []}
    result = labels.worker_labels(topo, grant)
    assert result['worker-2'] == {'CIS-node': 'compute-2', labels.ZONE: 'nova'}


def test_missing_labels_are_what_the_nodes_lack():
    wanted = {'worker-1': {'CIS-node': 'c1'}, 'worker-2': {'CIS-node': 'c2'}}
    states = {'worker-1': NodeState('worker-1', True, {'CIS-node': 'c1'}),
              'worker-2': NodeState('worker-2', True, {'CIS-node': 'old'})}
    assert labels.missing_labels(wanted, states) == {
        'worker-2': {'CIS-node': 'c2'}}
