"""The text Tacker 16 records as a MODIFY_INFO occurrence's operationParams
(a Python literal), rewritten as JSON; JSON and anything else left alone."""

import json

import pytest

from k8s_mgmt import tacker_modify_info


@pytest.mark.parametrize('body', [
    {'metadata': {'k8sMgmtUpgrade': '1.36'}},
    {'metadata': {'k8sMgmtCertificates': 'renew', 'gone': None,
                  'flag': False, 'n': 3, 'x': 1.5}},
    {'vnfInstanceName': "it's \"quoted\" \u00e9", 'metadata': {}},
    {'vimConnectionInfo': [{'id': 'v', 'extra': {'a': [1, {'b': True}]}}]},
])
def test_what_tacker_16_records_becomes_the_json_of_the_same_body(body):
    fixed = tacker_modify_info.as_json(str(body))
    assert json.loads(fixed) == body


@pytest.mark.parametrize('text', [
    None, '', '   ', 42,
    json.dumps({'metadata': {'k8sMgmtUpgrade': '1.36'}}),  # JSON already
    '"a json string"', '[1, 2]',
    "['a', 'list']",                   # a literal, but no dict
    "{'a': __import__('os')}",         # no literal: nothing is evaluated
    "{'a': 1",                         # cut short
    "{'a': {1, 2}}",                   # a set: no JSON for it
])
def test_anything_else_is_left_alone(text):
    assert tacker_modify_info.as_json(text) is None


def test_nothing_happens_outside_a_tacker_conductor():
    # No Tacker context (the lab's own conductor, plan, tests): no database.
    assert tacker_modify_info.repair({'auth_token': 'x'}, 'i-1') == []
    assert tacker_modify_info.repair(None, 'i-1') == []
    assert tacker_modify_info.repair(object(), '') == []


@pytest.mark.parametrize('text', [
    json.dumps({'metadata': {'k8sMgmtState': None}}),
    str({'metadata': {'k8sMgmtState': None}})])
def test_the_patch_tacker_recorded_reads_as_a_dict_in_either_form(text):
    assert tacker_modify_info.as_dict(text) == {
        'metadata': {'k8sMgmtState': None}}


@pytest.mark.parametrize('text', [None, '', '[1]', "{'a': __import__('os')}",
                                  '"text"'])
def test_anything_else_reads_as_no_patch(text):
    assert tacker_modify_info.as_dict(text) is None


def test_no_patch_is_read_outside_a_tacker_conductor():
    assert tacker_modify_info.processing_request(None, 'i-1') is None
