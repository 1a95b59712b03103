"""AnsibleServer's checks and the pure helpers of the Ansible server.

authorize_key_command runs in a real local shell with HOME set to a temp
dir. AnsibleServer gets ``session=None`` where a check must refuse before
any SSH: the real runs are in tests/functional/kubespray.
"""

import ast
import os
import stat
import subprocess
import types

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.ansible import ansible_server
from k8s_mgmt.params import model
from k8s_mgmt.ssh import hostkeys

KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM1eXampleKeyBase64Payload0123 c1'
PARAMS = model.AnsibleParams(
    ip_address='192.0.2.5', username='ansible',
    password=secrets.Secret('ansible-pw'),
    kubespray_root_path='/opt/kubespray',
    transferring_inventory_path='/home/ansible/inventories')


def test_target_for_names_the_server_without_a_server_id():
    target = ansible_server.target_for(PARAMS)
    assert (target.name, target.host, target.port, target.username) == (
        'ansible-server', '192.0.2.5', 22, 'ansible')
    assert target.server_id is None
    assert hostkeys.pin_id(target.server_id, target.host, target.port) == \
        '192.0.2.5:22'


def test_placeholders_are_refused_naming_each_field():
    params = model.AnsibleParams(
        ip_address='0.0.0.0', username='ansible', kubespray_root_path='',
        transferring_inventory_path='',
        placeholders=('x.ansible.ip_address', 'x.ansible.kubespray_root_path'))
    for make in (lambda: ansible_server.target_for(params),
                 lambda: ansible_server.AnsibleServer(None, params, 'id1')):
        with pytest.raises(exceptions.ValidationError) as info:
            make()
        assert [p for p, _ in info.value.problems] == [
            'x.ansible.ip_address', 'x.ansible.kubespray_root_path']


def test_paths_of_the_cluster_directory():
    server = ansible_server.AnsibleServer(None, PARAMS, 'c0ffee-12')
    base = '/home/ansible/inventories/k8s-mgmt-c0ffee-12'
    assert server.inventory_dir == base
    assert server.inventory_path == base + '/hosts.yaml'
    assert server.known_hosts_path == base + '/known_hosts'
    assert server.key_path == base + '/id_ed25519'
    assert server.root == '/opt/kubespray'


@pytest.mark.parametrize('instance_id', [
    '', '..', '../x', 'a/b', 'a b', '-rf', None, 'x' * 101, '$(id)'])
def test_instance_ids_that_would_escape_the_directory_are_refused(
        instance_id):
    with pytest.raises(exceptions.ValidationError):
        ansible_server.AnsibleServer(None, PARAMS, instance_id)


def test_remove_refuses_any_other_path_before_any_ssh():
    server = ansible_server.AnsibleServer(None, PARAMS, 'abc')
    for other in ('/', '/home/ansible/inventories',
                  '/home/ansible/inventories/k8s-mgmt-abc/..',
                  '/home/ansible/inventories/k8s-mgmt-other'):
        server.inventory_dir = other
        with pytest.raises(exceptions.MgmtDriverError) as info:
            server.remove()   # session None: it would fail if it ran
        assert 'refusing to delete' in str(info.value)


def test_the_callback_plugin_ships_with_the_package():
    source = ansible_server.plugin_source().decode()
    tree = ast.parse(source)
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert classes == ['CallbackModule']
    assert "CALLBACK_TYPE = 'stdout'" in source
    assert "CALLBACK_NAME = 'k8s_mgmt_events'" in source


def test_known_hosts_lines_come_from_the_pins(tmp_path):
    store = hostkeys.HostKeyStore(str(tmp_path / 'pins.json'))
    store.add('srv-1', 'ssh-ed25519', 'AAAAkey1', node='m1')
    store.add('srv-2', 'ecdsa-sha2-nistp256', 'AAAAkey2', node='w1')
    nodes = [types.SimpleNamespace(name='m1', server_id='srv-1',
                                   ssh_ip='10.0.0.1'),
             types.SimpleNamespace(name='w1', server_id='srv-2',
                                   ssh_ip='10.0.0.2', ssh_port=2222)]
    assert ansible_server.known_hosts_lines(nodes, store) == [
        '10.0.0.1 ssh-ed25519 AAAAkey1',
        '[10.0.0.2]:2222 ecdsa-sha2-nistp256 AAAAkey2']
    nodes.append(types.SimpleNamespace(name='w2', server_id='srv-3',
                                       ssh_ip='10.0.0.3'))
    with pytest.raises(ansible_server.NodeNotPinned) as info:
        ansible_server.known_hosts_lines(nodes, store)
    assert 'w2 (server srv-3) has no pinned host key' in str(info.value)


def run_as_user(cmd, home):
    env = dict(os.environ, HOME=str(home))
    subprocess.run(['sh', '-c', cmd.render()], env=env, check=True,
                   timeout=30)


def test_authorize_key_command_is_idempotent_and_private(tmp_path):
    cmd = ansible_server.authorize_key_command(KEY)
    run_as_user(cmd, tmp_path)
    keys = tmp_path / '.ssh' / 'authorized_keys'
    assert keys.read_text() == KEY + '\n'
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    assert stat.S_IMODE(keys.parent.stat().st_mode) == 0o700
    # A longer line holding ours, and a last line without its newline.
    keys.write_text(KEY + ' extra\nssh-rsa AAAAother')
    keys.chmod(0o644)
    for _ in range(2):
        run_as_user(cmd, tmp_path)
    assert keys.read_text().splitlines() == [
        KEY + ' extra', 'ssh-rsa AAAAother', KEY]
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600


@pytest.mark.parametrize('bad', ['', 'ssh-rsa AAAA', KEY + '\nssh-ed25519 B',
                                 'ssh-ed25519 $(id)'])
def test_authorize_key_command_takes_one_ed25519_line(bad):
    with pytest.raises(ValueError):
        ansible_server.authorize_key_command(bad)
