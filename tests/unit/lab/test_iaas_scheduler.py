"""The stand-in's scheduler as data: hosts, their load and the group's
members in, one host (or Nova's NoValidHost) out."""

import pytest

from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import scheduler

HOSTS = ['compute01', 'compute02', 'compute03']


def test_without_a_group_the_least_loaded_host_wins_ties_by_order():
    assert scheduler.choose_host(HOSTS, {}) == 'compute01'
    assert scheduler.choose_host(HOSTS, {'compute01': 2,
                                         'compute02': 1}) == 'compute03'


def test_affinity_follows_the_first_member_whatever_the_load():
    assert scheduler.choose_host(HOSTS, {'compute02': 9}, 'affinity',
                                 ['compute02']) == 'compute02'


def test_anti_affinity_takes_a_free_host_or_finds_none():
    load = {'compute01': 1, 'compute02': 5}
    assert scheduler.choose_host(HOSTS, load, 'anti-affinity',
                                 ['compute03']) == 'compute01'
    with pytest.raises(scheduler.NoValidHost) as none:
        scheduler.choose_host(HOSTS, load, 'anti-affinity', HOSTS)
    assert none.value.message.startswith('No valid host was found.')


def test_soft_policies_prefer_but_never_fail():
    assert scheduler.choose_host(HOSTS, {}, 'soft-anti-affinity',
                                 HOSTS + ['compute01']) == 'compute02'
    assert scheduler.choose_host(HOSTS, {'compute03': 1},
                                 'soft-affinity',
                                 ['compute03', 'compute01',
                                  'compute03']) == 'compute03'


def test_an_unknown_policy_or_no_host_is_refused():
    with pytest.raises(model.BadRequest):
        scheduler.choose_host(HOSTS, {}, 'spread', ['compute01'])
    with pytest.raises(scheduler.NoValidHost):
        scheduler.choose_host([], {})
