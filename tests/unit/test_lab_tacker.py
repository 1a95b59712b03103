"""``--tacker`` on the lab's verbs: the harness's report read, the lab
record following Tacker, and a clear message without Tacker."""

import importlib.util

import pytest

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt_lab.cli import lab_tacker
from k8s_mgmt_lab.conductor.tacker_harness import labrecord
from k8s_mgmt_lab.errors import LabError

REPORT = {
    'verb': 'scale', 'vnf_instance_id': 'inst', 'op_occ_id': 'occ',
    'instantiation_state': 'INSTANTIATED', 'operation': 'SCALE',
    'operation_state': 'COMPLETED', 'error': None,
    'instantiated_vnf_info': {'stack_id': 'stk', 'vnfc_resource_info': [
        {'id': 'vnfc-m', 'vdu_id': 'masterNode', 'server': 'srv-m'},
        {'id': 'vnfc-w', 'vdu_id': 'workerNode', 'server': 'srv-w'},
        {'id': 'vnfc-x', 'vdu_id': 'workerNode', 'server': None}]},
    'cluster': {'endpoint': 'https://vip:6443', 'vim_id': 'vim',
                'nodes': [{'name': 'master-1', 'ready': True,
                           'roles': ['control-plane']}]},
    'seconds': {'scale': 5.04}}


def test_vnfc_ids_map_servers_to_tacker_vnfc_ids():
    assert labrecord.vnfc_ids(REPORT) == {'srv-m': 'vnfc-m',
                                          'srv-w': 'vnfc-w'}


def test_summary_names_op_occ_vnfcs_and_nodes():
    text = '\n'.join(lab_tacker.summary_lines(REPORT))
    assert 'SCALE op occ occ COMPLETED' in text
    assert 'VNFC vnfc-w' in text and 'server srv-w' in text
    assert 'master-1' in text and 'Ready' in text
    assert 'scale 5.0 s' in text


def test_summary_of_a_failed_run():
    lines = lab_tacker.summary_lines({'verb': 'heal', 'error': 'boom'})
    assert lines == ['heal through Tacker failed: boom']


def test_without_tacker_says_what_to_install(monkeypatch):
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name: None)
    with pytest.raises(UserError, match=r"pip install 'k8s-mgmt\[tacker\]'"):
        lab_tacker.require_tacker()


def test_one_conductor_per_vnf():
    labrecord.check_ours({})
    labrecord.check_ours({'vnf_instance_id': 'i', 'lcm': 'tacker'})
    with pytest.raises(LabError, match='own conductor'):
        labrecord.check_ours({'vnf_instance_id': 'i'})
