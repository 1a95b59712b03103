"""merge_overrides: scale/heal request parameters over the stored ones."""

import pytest

from k8s_mgmt import params

import params_helpers as h

M = 'k8s_cluster_installation_param.master_node'


@pytest.fixture
def stored():
    return params.load_cluster_params(h.base_params(), flavour='simple')


def test_empty_request_keeps_everything(stored):
    merged = params.merge_overrides(stored, None, 'scale')
    assert merged.master_node == stored.master_node
    assert merged.worker_node == stored.worker_node
    assert merged.operation == 'scale' and merged.force_drain is False


@pytest.mark.parametrize('operation', ['scale', 'heal'])
def test_force_drain(stored, operation):
    merged = params.merge_overrides(stored, {'force_drain': True}, operation)
    assert merged.force_drain is True
    problems = h.problems_of(params.merge_overrides, stored,
                             {'forceDrain': 'yes'}, operation)
    assert problems == [('force_drain', 'expected true or false, got a '
                                        'string')]


def test_storage_volume_recreate_is_a_heal_option(stored):
    merged = params.merge_overrides(
        stored, {'storage_volume_recreate': True}, 'heal')
    assert merged.storage_volume_recreate is True
    assert params.merge_overrides(stored, {}, 'heal') \
        .storage_volume_recreate is False
    problems = h.problems_of(params.merge_overrides, stored,
                             {'storageVolumeRecreate': 'true'}, 'heal')
    assert problems == [('storage_volume_recreate', 'expected true or '
                                                    'false, got a string')]
    scale = params.merge_overrides(
        stored, {'storage_volume_recreate': True}, 'scale')
    assert scale.unknown_keys == ('storage_volume_recreate',)


@pytest.mark.parametrize('value', ['false', 0, None, 'no'])
def test_the_heal_block_storage_key_must_be_a_boolean(stored, value):
    """Tacker reads any truthy value, the string "false" too, as true."""
    key = 'tacker_extension_heal_include_block_storage'
    problems = h.problems_of(params.merge_overrides, stored, {key: value},
                             'heal')
    assert len(problems) == 1 and problems[0][0] == key
    assert 'expected true or false' in problems[0][1]
    kept = params.merge_overrides(stored, {key: False}, 'heal')
    assert kept.unknown_keys == () and kept.warnings == ()


def test_force_drain_is_unknown_to_instantiate():
    result = params.load_cluster_params(
        dict(h.base_params(), force_drain=True), flavour='simple')
    assert result.force_drain is False
    assert result.unknown_keys == ('force_drain',)


def test_credentials_can_be_rotated_in_either_casing(stored):
    merged = params.merge_overrides(stored, {
        'k8sClusterInstallationParam': {
            'workerNode': {'password': 'rotated-pw'}}}, 'scale')
    assert merged.worker_node.password.reveal() == 'rotated-pw'
    assert merged.master_node.password == stored.master_node.password


def test_a_private_key_replaces_the_stored_password(stored):
    pem = ('-----BEGIN RSA PRIVATE KEY-----\nabc\n'
           '-----END RSA PRIVATE KEY-----\n')
    merged = params.merge_overrides(stored, {h.ROOT: {
        'master_node': {'ssh_private_key': pem}}}, 'heal')
    assert merged.master_node.password is None
    assert merged.master_node.ssh_private_key.reveal() == pem


def test_fixed_parameters_cannot_change(stored):
    problems = h.problems_of(params.merge_overrides, stored, {h.ROOT: {
        'master_node': {'pod_cidr': '10.1.0.0/16'},
        'script_path': 'Scripts/other.sh'}}, 'scale')
    assert sorted(problems) == [
        ('k8s_cluster_installation_param.master_node.pod_cidr',
         'cannot be changed after instantiate'),
        ('k8s_cluster_installation_param.script_path',
         'cannot be changed after instantiate')]


def test_repeating_a_fixed_value_is_fine(stored):
    merged = params.merge_overrides(stored, {h.ROOT: {
        'master_node': {'pod_cidr': '192.168.0.0/16'}}}, 'scale')
    assert merged.master_node.pod_cidr == '192.168.0.0/16'


def test_override_values_are_validated(stored):
    problems = h.problems_of(params.merge_overrides, stored, {h.ROOT: {
        'worker_node': {'username': 'a b'}}}, 'scale')
    assert h.paths(problems) == [
        'k8s_cluster_installation_param.worker_node.username']


def test_merge_keeps_the_stored_version():
    additional = h.base_params()
    additional[h.ROOT]['kubernetes_version'] = '1.33.4'
    stored = params.load_cluster_params(additional, flavour='simple')
    assert params.merge_overrides(stored, {}, 'scale').kubernetes_version \
        == '1.33.4'


def test_scale_of_stored_params_without_worker_aspect_is_refused():
    additional = h.base_params()
    del additional[h.ROOT]['worker_node']['aspect_id']
    del additional['lcm-operation-user-data']
    del additional['lcm-operation-user-data-class']
    stored = params.load_cluster_params(additional, flavour='simple')
    problems = h.problems_of(params.merge_overrides, stored, {}, 'scale')
    assert h.paths(problems) == [
        'k8s_cluster_installation_param.worker_node.aspect_id']


@pytest.mark.parametrize('request_params', [
    [], 'x', 5, {h.ROOT: []}, {h.ROOT: {'master_node': None}},
    {h.ROOT: {'master_node': [1]}}, {h.ROOT: {'proxy': 'x'}},
])
def test_bad_requests_are_problems_not_crashes(stored, request_params):
    with pytest.raises(params_errors()):
        params.merge_overrides(stored, request_params, 'scale')


def params_errors():
    from k8s_mgmt import exceptions
    return exceptions.ValidationError


def test_tackers_keep_volumes_switch_is_no_unknown_parameter(stored):
    merged = params.merge_overrides(
        stored, {'tacker_extension_heal_include_block_storage': False},
        'heal')
    assert not merged.warnings
    merged = params.merge_overrides(stored, {'no_such_switch': False},
                                    'heal')
    assert merged.warnings
