"""Heal decisions as data: VNFC ids to nodes, refusals, etcd quorum,
HAProxy backend lists per master, the cluster record's first master."""

import dataclasses

import pytest

from k8s_mgmt import secrets
from k8s_mgmt.kube import etcd
from k8s_mgmt.shared_phases import heal_plan

import op_helpers

VRRP = secrets.Secret('Vr9pass')

# Captured from etcdctl 3.4.23 (-w json), IDs shortened to this cluster's.
MEMBER_LIST = (
    '{"header":{"cluster_id":15118495548433857066,"member_id":1,'
    '"raft_term":2},"members":['
    '{"ID":13668033151171901709,"name":"master-1",'
    '"peerURLs":["http://10.254.0.11:2380"],'
    '"clientURLs":["http://10.254.0.11:2379"]},'
    '{"ID":2,"name":"master-2","peerURLs":["http://10.254.0.12:2380"],'
    '"clientURLs":["http://10.254.0.12:2379"]},'
    '{"ID":3,"name":"master-3","peerURLs":["http://10.254.0.13:2380"],'
    '"clientURLs":["http://10.254.0.13:2379"]}]}')


def _health(*down):
    items = []
    for index in (1, 2, 3):
        url = 'http://10.254.0.1%d:2379' % index
        item = {'endpoint': url, 'health': index not in down, 'took': '2ms'}
        if index in down:
            item['error'] = 'context deadline exceeded'
        items.append(item)
    import json
    return etcd.parse_endpoint_health(json.dumps(items))


def _members():
    return etcd.parse_member_list(MEMBER_LIST)


def _member(mid, name, ip):
    return etcd.Member(mid, name, ('http://%s:2380' % ip,),
                       ('http://%s:2379' % ip,) if name else ())


def test_member_list_parsed_from_json_with_64_bit_ids():
    members = _members()
    assert [m.name for m in members] == ['master-1', 'master-2', 'master-3']
    assert members[0].member_id == 13668033151171901709
    assert members[0].hex_id == 'bdae9bbc11dd390d'
    assert members[1].peer_hosts() == {'10.254.0.12'}


def test_unstarted_member_has_no_name_and_no_client_urls():
    text = ('{"members":[{"ID":18243200846488109911,'
            '"peerURLs":["http://10.254.0.14:2380"]}]}')
    (member,) = etcd.parse_member_list(text)
    assert member.name == '' and member.client_urls == ()


def test_endpoint_health_object_or_list():
    assert etcd.parse_endpoint_health(
        '{"endpoint":"http://a:2379","health":true}') == {
            'http://a:2379': True}
    assert _health(2) == {'http://10.254.0.11:2379': True,
                          'http://10.254.0.12:2379': False,
                          'http://10.254.0.13:2379': True}


@pytest.mark.parametrize('size,needed', [(1, 1), (2, 2), (3, 2), (4, 3),
                                         (5, 3), (7, 4)])
def test_quorum(size, needed):
    assert etcd.quorum(size) == needed


def test_removing_a_healthy_member_of_three_healthy_is_safe():
    members = _members()
    assert etcd.removal_problem(members, _health(), members[:1]) is None


def test_removing_the_dead_member_is_safe():
    members = _members()
    assert etcd.removal_problem(members, _health(1), members[:1]) is None


def test_removing_a_live_member_while_another_is_down_breaks_quorum():
    members = _members()
    problem = etcd.removal_problem(members, _health(3), members[:1])
    assert 'would break etcd quorum' in problem
    assert 'only 1 are healthy (2 needed)' in problem
    assert 'unhealthy: master-3' in problem


def test_no_removal_without_quorum_now():
    members = _members()
    problem = etcd.removal_problem(members, _health(1, 2), members[:1])
    assert 'no quorum now: 1 of 3 members healthy' in problem


def test_five_members_two_down_one_of_them_removed():
    members = tuple(_member(i, 'm%d' % i, '10.0.0.%d' % i)
                    for i in range(1, 6))
    health = {'http://10.0.0.%d:2379' % i: i > 2 for i in range(1, 6)}
    assert etcd.removal_problem(members, health, members[:1]) is None
    # A healthy one cannot go while two are down: 2 of 4 left healthy.
    assert etcd.removal_problem(members, health, members[4:]) is not None


def test_members_of_node_match_name_or_exact_peer_host():
    members = _members() + (_member(9, '', '10.254.0.1'),)
    assert [m.name for m in etcd.members_of_node(
        members, 'master-2', '10.254.0.99')] == ['master-2']
    # 10.254.0.1 must not match 10.254.0.11 (the peers' unanchored sed bug).
    found = etcd.members_of_node(members, 'gone', '10.254.0.1')
    assert [m.member_id for m in found] == [9]


def _ha(masters=3, workers=2):
    topo = op_helpers.topology(masters, workers, vip='10.254.0.100')
    return topo, op_helpers.sample_params('complex')


def test_vnfc_ids_map_to_nodes_in_request_order_without_repeats():
    topo, _ = _ha()
    request = {'vnfc_instance_id': ['vnfc-worker-2', 'vnfc-master-1',
                                    'vnfc-worker-2']}
    ids = heal_plan.requested_vnfc_ids(request)
    nodes = heal_plan.resolve_targets(topo, ids)
    assert [n.name for n in nodes] == ['worker-2', 'master-1']


def test_unknown_vnfc_id_is_refused_naming_it_and_the_known_ones():
    topo, _ = _ha(masters=1, workers=1)
    with pytest.raises(heal_plan.HealRefused) as err:
        heal_plan.resolve_targets(topo, ['vnfc-master-1', 'nope', 'gone'])
    text = str(err.value)
    assert 'nothing was changed' in text
    assert 'unknown VNFC id(s) nope, gone' in text
    assert 'vnfc-master-1, vnfc-worker-1' in text


def test_storage_vnfc_is_not_healed_one_by_one():
    topo, _ = _ha(masters=1, workers=0)
    storage = dataclasses.replace(topo.masters[0], role='storage',
                                  name='storage-1', vnfc_id='vnfc-st')
    topo = dataclasses.replace(topo, storage=(storage,))
    with pytest.raises(heal_plan.HealRefused, match='storage node'):
        heal_plan.resolve_targets(topo, ['vnfc-st'])


def test_only_master_of_simple_flavour_is_refused_with_seed_limitation():
    topo = op_helpers.topology(1, 2)
    params = op_helpers.sample_params('simple')
    reason = heal_plan.master_refusal(params, topo, topo.masters)
    assert 'master-1 is the only master' in reason
    assert 'only master' in reason and 'whole VNF' in reason


def test_all_masters_at_once_is_refused_one_is_fine_workers_ignored():
    topo, params = _ha()
    assert 'every master' in heal_plan.master_refusal(params, topo,
                                                      topo.masters)
    assert heal_plan.master_refusal(params, topo, topo.masters[1:2]) is None
    assert heal_plan.master_refusal(params, topo, topo.workers) is None


def test_etcd_refusal_uses_the_targets_members():
    topo, _ = _ha()
    members = _members()
    assert heal_plan.etcd_refusal(members, _health(), topo.masters[:1]) is \
        None
    assert 'break etcd quorum' in heal_plan.etcd_refusal(
        members, _health(2), topo.masters[:1])
    # A worker has no member: nothing leaves etcd, nothing to refuse,
    # even when etcd is unwell.
    assert heal_plan.leaving_members(members, topo.workers[:1]) == ()
    assert heal_plan.etcd_refusal(members, _health(2),
                                  topo.workers[:1]) is None


def _argv(call):
    return dict(zip(call.argv[::2], call.argv[1::2]))


def test_heal_start_lb_runs_on_the_other_reachable_masters_without_target():
    topo, _ = _ha()
    change = heal_plan.lb_without(topo, topo.masters[:1],
                                  {'master-2', 'master-3'}, 24, VRRP)
    assert change.backends == ('master-2', 'master-3')
    assert [c.node for c in change.calls] == ['master-2', 'master-3']
    for call in change.calls:
        opts = _argv(call)
        assert opts['-b'] == 'master-2=10.254.0.12,master-3=10.254.0.13'
        assert opts['-v'] == '10.254.0.100/24'
        assert call.stdin_secrets == (('auth_pass', VRRP),)
    # Priorities stay those of instantiate: nobody else's VRRP role moves.
    assert [_argv(c)['-P'] for c in change.calls] == ['240', '230']


def test_heal_start_lb_skips_an_unreachable_other_master():
    topo, _ = _ha()
    change = heal_plan.lb_without(topo, topo.masters[1:2], {'master-1'}, 24,
                                  VRRP)
    assert [c.node for c in change.calls] == ['master-1']
    assert _argv(change.calls[0])['-b'] == \
        'master-1=10.254.0.11,master-3=10.254.0.13'


def test_heal_end_lb_is_instantiates_on_every_master():
    topo, _ = _ha()
    change = heal_plan.lb_full(topo, 24, VRRP)
    # What instantiate runs: every master, its priority by its place.
    assert [dict(zip(c.argv[::2], c.argv[1::2]))['-P']
            for c in change.calls] == ['250', '240', '230']
    assert [c.node for c in change.calls] == ['master-1', 'master-2',
                                              'master-3']
    partial = heal_plan.lb_full(topo, 24, VRRP, {'master-1', 'master-3'})
    assert [c.node for c in partial.calls] == ['master-1', 'master-3']
    assert _argv(partial.calls[1])['-b'].count('=') == 3


def test_stale_members_by_name_and_unstarted_foreign_peers():
    topo, _ = _ha()
    healed = dataclasses.replace(topo.masters[0], name='master-new',
                                 server_id='srv-new')
    topo = dataclasses.replace(topo, masters=(healed,) + topo.masters[1:])
    members = _members() + (_member(7, '', '10.254.0.11'),
                            _member(8, '', '10.254.0.50'))
    stale = heal_plan.stale_members(members, topo.masters)
    # master-1's member is stale (same IP, new name); the unstarted member
    # at the healed master's IP is its join in progress; .50 is nobody's.
    assert [m.member_id for m in stale] == [13668033151171901709, 8]


def test_helper_master_prefers_the_recorded_first_master():
    topo, _ = _ha()
    record = {'init_master_server_id': 'srv-master-3'}
    helper = heal_plan.helper_master(topo, topo.masters[:1],
                                     {'master-2', 'master-3'}, record)
    assert helper.name == 'master-3'
    helper = heal_plan.helper_master(topo, topo.masters[:1], {'master-2'},
                                     record)
    assert helper.name == 'master-2'
    assert heal_plan.helper_master(topo, topo.masters[:1], set()) is None


def test_first_master_record_moves_off_a_healed_master_only():
    topo, _ = _ha()
    helper = topo.masters[1]
    record = {'init_master_server_id': 'srv-master-1'}
    assert heal_plan.first_master_update(record, topo, topo.masters[:1],
                                         helper) == 'srv-master-2'
    assert heal_plan.first_master_update(record, topo, topo.masters[2:],
                                         helper) is None
    gone = {'init_master_server_id': 'srv-replaced-long-ago'}
    assert heal_plan.first_master_update(gone, topo, (), helper) == \
        'srv-master-2'
    assert heal_plan.first_master_update({}, topo, topo.masters[:1],
                                         helper) is None
