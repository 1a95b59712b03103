"""snake_case <-> camelCase of parameter keys, as Tacker stores them."""

import pytest

from k8s_mgmt.params import casing


@pytest.mark.parametrize('snake, camel', [
    ('k8s_cluster_installation_param', 'k8sClusterInstallationParam'),
    ('k8s_node_cidr', 'k8sNodeCidr'),
    ('ssh_cp_name', 'sshCpName'),
    ('cinder_volume_setup_params', 'cinderVolumeSetupParams'),
    ('pod_cidr', 'podCidr'),
    ('username', 'username'),
])
def test_round_trip(snake, camel):
    assert casing.snake_to_camel(snake) == camel
    assert casing.camel_to_snake(camel) == snake
    assert casing.camel_to_snake(snake) == snake


def test_pick_either_spelling_and_conflicts():
    assert casing.pick({'sshCpName': 'a'}, 'ssh_cp_name') == (True, 'a', False)
    assert casing.pick({'ssh_cp_name': 'a', 'sshCpName': 'a'},
                       'ssh_cp_name') == (True, 'a', False)
    assert casing.pick({'ssh_cp_name': 'a', 'sshCpName': 'b'},
                       'ssh_cp_name')[2] is True
    assert casing.pick({}, 'ssh_cp_name') == (False, None, False)


def test_unknown_keys_keep_input_order():
    mapping = {'zeta': 1, 'sshCpName': 2, 'lcm-x': 3, 'alpha': 4}
    assert casing.unknown_keys(mapping, ['ssh_cp_name'],
                               ignored=['lcm-x']) == ['zeta', 'alpha']
