"""Reading the dicts Tacker's v2 conductor sends (the shapes of
doc/design/tacker-v2-scripts.md): the VIM, the stack, the VNFCs, the
grant's servers; bad data is a ValidationError naming the field."""

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.topology import heat
from k8s_mgmt.v2 import instance
from tests.unit.params import params_helpers

INSTANCE = {
    'id': '6f1c0f34-7b0e-4a53-9b55-4b0a7f0d1e21',
    'instantiationState': 'INSTANTIATED',
    'vimConnectionInfo': {'vim1': {
        'vimId': 'b0f6', 'vimType': 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
        'interfaceInfo': {'endpoint': 'http://127.0.0.1:5000/v3',
                          'skipCertificateVerification': True},
        'accessInfo': {'username': 'nfv_user', 'password': 'devstack',
                       'project': 'nfv', 'projectDomain': 'Default',
                       'userDomain': 'Default', 'region': 'RegionOne'}}},
    'instantiatedVnfInfo': {
        'flavourId': 'complex',
        'metadata': {'stack_id': 'a1b2c3', 'tenant': 'nfv'},
        'vnfcResourceInfo': [
            {'id': 'srv-new', 'vduId': 'workerNode',
             'computeResource': {'resourceId': 'srv-new'},
             'metadata': {'stack_id': 'vnf-x-worker-b/11'}},
            {'id': 'srv-old', 'vduId': 'workerNode',
             'computeResource': {'resourceId': 'srv-old'},
             'metadata': {'stack_id': 'vnf-x-worker-a/10'}},
            {'id': 'srv-m', 'vduId': 'masterNode',
             'computeResource': {'resourceId': 'srv-m'}}],
        'vnfcInfo': [{'id': 'workerNode-srv-new', 'vduId': 'workerNode',
                      'vnfcResourceInfoId': 'srv-new'}]},
}


def changed(path, value):
    return params_helpers.changed(INSTANCE, '|'.join(path), value)


def test_the_vim_is_the_auth_dict_the_heat_client_takes():
    auth = instance.vim_auth(INSTANCE)
    assert isinstance(auth['password'], secrets.Secret)
    assert auth['password'].reveal() == 'devstack'
    assert auth['project_name'] == 'nfv' and auth['region'] == 'RegionOne'
    assert auth['cert_verify'] == 'False'
    assert 'devstack' not in repr(auth)
    session, region = heat.session_for_vim(auth)
    assert region == 'RegionOne' and session.verify is False


@pytest.mark.parametrize('value, field, words', [
    ({}, 'vnf_instance.vimConnectionInfo', 'exactly one VIM connection, '
                                           'got 0'),
    ({'a': INSTANCE['vimConnectionInfo']['vim1'],
      'b': INSTANCE['vimConnectionInfo']['vim1']},
     'vnf_instance.vimConnectionInfo', 'got 2'),
    ({'v': {'vimType': 'kubernetes'}}, 'vnf_instance.vimConnectionInfo.v'
                                       '.vimType', 'an OpenStack VIM'),
    ({'v': {'vimType': 'ETSINFV.OPENSTACK_KEYSTONE.V_3',
            'accessInfo': {'username': 'u', 'project': 'p'},
            'interfaceInfo': {'endpoint': 'http://k:5000/v3'}}},
     'vnf_instance.vimConnectionInfo.v.accessInfo.password', 'missing'),
])
def test_a_vim_the_driver_cannot_use_is_refused_naming_the_field(
        value, field, words):
    with pytest.raises(exceptions.ValidationError) as caught:
        instance.vim_auth(changed(['vimConnectionInfo'], value))
    (path, message), = caught.value.problems
    assert path == field and words in message


def test_the_stack_and_the_flavour():
    assert instance.stack_ref(INSTANCE) == (
        'vnf-6f1c0f34-7b0e-4a53-9b55-4b0a7f0d1e21/a1b2c3')
    before_heat = changed(['instantiatedVnfInfo'], {'flavourId': 'simple'})
    assert instance.stack_ref(before_heat) is None
    assert instance.flavour(INSTANCE, {'flavourId': 'simple'}) == 'simple'
    assert instance.flavour(INSTANCE, {}) == 'complex'
    assert instance.flavour({'id': 'x'}, None) is None


def test_vnfcs_name_their_server_vdu_and_stack_newest_first():
    assert instance.vnfcs(INSTANCE) == [
        {'id': 'workerNode-srv-new', 'vdu_id': 'workerNode',
         'server_id': 'srv-new', 'stack': 'vnf-x-worker-b/11'},
        {'id': 'srv-old', 'vdu_id': 'workerNode', 'server_id': 'srv-old',
         'stack': 'vnf-x-worker-a/10'},
        {'id': 'srv-m', 'vdu_id': 'masterNode', 'server_id': 'srv-m',
         'stack': None}]
    broken = changed(['instantiatedVnfInfo', 'vnfcResourceInfo'],
                     [{'id': 'x', 'vduId': 'workerNode'}])
    with pytest.raises(exceptions.ValidationError) as caught:
        instance.vnfcs(broken)
    assert caught.value.problems[0][0] == (
        'vnf_instance.instantiatedVnfInfo.vnfcResourceInfo[0]')


def test_the_grant_names_removed_servers_and_counts_added_ones():
    grant = {'removeResources': [
        {'type': 'LINKPORT', 'resource': {'resourceId': 'port-1'}},
        {'type': 'COMPUTE', 'resourceTemplateId': 'workerNode',
         'resource': {'resourceId': 'srv-new'}}],
        'addResources': [
            {'type': 'COMPUTE', 'resourceTemplateId': 'workerNode'},
            {'type': 'COMPUTE', 'resourceTemplateId': 'workerNode'},
            {'type': 'STORAGE', 'resourceTemplateId': 'workerNode'},
            {'type': 'COMPUTE', 'resourceTemplateId': 'masterNode'}]}
    assert instance.removed_servers(grant) == ['srv-new']
    assert instance.added_count(grant, 'workerNode') == 2
    assert instance.removed_servers(None) == []
    with pytest.raises(exceptions.ValidationError):
        instance.removed_servers({'removeResources': [{'type': 'COMPUTE'}]})


@pytest.mark.parametrize('key', ['v\nvnf_instance.id: forged', 'a\rb',
                                 'x\x1b[2Jy', 'ls\u2028x', 'bidi\u202ex'])
def test_a_vim_key_in_an_error_path_is_escaped(key):
    with pytest.raises(exceptions.ValidationError) as caught:
        instance.vim_auth(changed(['vimConnectionInfo'],
                                  {key: {'vimType': 'kubernetes'}}))
    (path, _), = caught.value.problems
    assert path == 'vnf_instance.vimConnectionInfo.[%r].vimType' % key
    assert len(str(caught.value).splitlines()) == 2
