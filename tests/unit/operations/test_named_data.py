"""The small values that travel between phases: each group's credentials
by role, what runs alongside the init, the scripts' features."""

import collections

import pytest

from k8s_mgmt.engine import uploads
from k8s_mgmt.params import model
from k8s_mgmt.secrets import Secret
from k8s_mgmt.shared_phases import node_work

Node = collections.namedtuple('Node', 'name')


def test_group_by_role():
    params = model.ClusterParams(
        kubernetes_version='1.35', flavour='simple',
        master_node=model.MasterNodeParams(username='m'),
        worker_node=model.WorkerNodeParams(username='w'),
        external_lb_param=model.ExternalLbParams(
            ssh_username='lb', ssh_password=Secret('p')),
        ansible=model.AnsibleParams(username='a'))
    assert params.group('master') is params.master_node
    assert params.group('worker') is params.worker_node
    lb = params.group('lb')
    assert (lb.username, lb.password.reveal()) == ('lb', 'p')
    assert params.group('ansible').username == 'a'
    with pytest.raises(ValueError, match='no credentials for a storage'):
        params.group('storage')


def test_alongside_adds_calls_before_or_after_and_nodes_once():
    a, b, c = Node('a'), Node('b'), Node('c')
    first = node_work.Alongside((a, b), {'a': ['x'], 'b': []})
    second = first.adding((b, c), {'b': ['p'], 'c': ['p']}, before=True)
    third = second.adding((a,), {'a': ['lb']})
    assert third.nodes == (a, b, c)
    assert third.calls == {'a': ['x', 'lb'], 'b': ['p'], 'c': ['p']}
    assert first.calls == {'a': ['x'], 'b': []}


def test_features_read_from_both_scripts():
    features = uploads.Features.of(
        frozenset({'prepare', 'init-report', 'apt-turn'}),
        frozenset({'bootstrap'}))
    assert features.prepare and features.init_report
    assert features.lb_bootstrap
    assert not (features.apt_turn or features.join_first or
                features.prepared)
