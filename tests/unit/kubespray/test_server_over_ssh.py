"""The Ansible server's protections over a real SSH connection: the
in-process test server (paramiko's server side on loopback, running each
command with bash on this machine) plays the Ansible server.

First contact follows host_key_policy with the request's fingerprint in
place of a console; the inventory directory and the cluster key are checked
on the server before they are used."""

import dataclasses
import logging
import os
import stat
import sys

import paramiko
import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.ansible import ansible_server
from k8s_mgmt.ansible import server_trust
from k8s_mgmt.params import model
from k8s_mgmt.ssh import client
from k8s_mgmt.ssh import hostkeys
from tests.helpers.private_dirs import private_dir

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, 'operations'))
import op_helpers  # noqa: E402

PASSWORD = 'Ansible-Secret-pw'
OTHER_PRINT = 'SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU'


@pytest.fixture
def server():
    module = op_helpers.ssh_server_module()
    found = module.SSHTestServer(users={'ansible': PASSWORD}).start()
    yield found
    found.stop()


@pytest.fixture
def store(tmp_path):
    return hostkeys.HostKeyStore(str(tmp_path / 'pins.json'))


def params(fingerprint=None, inventory='/home/ansible/inventories'):
    return model.AnsibleParams(
        ip_address='127.0.0.1', username='ansible',
        password=secrets.Secret(PASSWORD),
        kubespray_root_path='/opt/kubespray',
        transferring_inventory_path=str(inventory),
        host_key_fingerprint=fingerprint)


def target(server):
    # Built by hand: target_for refuses loopback, as the driver must.
    return client.SSHTarget('ansible-server', '127.0.0.1', 'ansible',
                            password=PASSWORD, port=server.port)


def pin_of(server):
    return '127.0.0.1:%d' % server.port


def connect(server, store, fingerprint, policy):
    session = server_trust.open_session(
        target(server), params(fingerprint), store, policy=policy,
        connect_deadline=5.0)
    session.close()


# -- first contact ----------------------------------------------------------

@pytest.mark.parametrize('policy', ['console', 'tofu'])
def test_the_fingerprint_given_verifies_and_pins(server, store, policy,
                                                 caplog):
    caplog.set_level(logging.INFO, logger='k8s_mgmt.ssh.hostkeys')
    connect(server, store, server.fingerprint, policy)
    entry = store.get(pin_of(server))
    assert entry['verified'] == hostkeys.VERIFIED_FINGERPRINT
    assert entry['fingerprint'] == server.fingerprint
    [record] = [r for r in caplog.records if 'pinned' in r.getMessage()]
    assert record.levelno == logging.INFO
    assert 'verified against the fingerprint given for it' in \
        record.getMessage()


@pytest.mark.parametrize('policy', ['console', 'tofu'])
def test_a_wrong_fingerprint_is_refused_naming_both(server, store, policy):
    with pytest.raises(server_trust.FingerprintMismatch) as info:
        connect(server, store, OTHER_PRINT, policy)
    text = str(info.value)
    assert server.fingerprint in text and OTHER_PRINT in text
    assert 'the Ansible server 127.0.0.1 offers' in text
    assert store.get(pin_of(server)) is None
    assert server.auth_attempts == []     # no credential was sent


def test_console_without_a_fingerprint_refuses_at_connect_too(server,
                                                              store):
    with pytest.raises(server_trust.NothingToVerify) as info:
        connect(server, store, None, 'console')
    assert 'refusing to trust it on first use' in str(info.value)
    assert store.get(pin_of(server)) is None
    assert server.auth_attempts == []


def test_tofu_without_a_fingerprint_pins_on_first_use(server, store):
    connect(server, store, None, 'tofu')
    assert store.get(pin_of(server))['verified'] == hostkeys.VERIFIED_TOFU


def test_strict_pins_nothing_even_with_the_right_fingerprint(server, store):
    with pytest.raises(hostkeys.HostKeyNotPinned):
        connect(server, store, server.fingerprint, 'strict')
    assert store.get(pin_of(server)) is None


def test_a_pin_decides_once_there(server, store):
    key = server.host_key
    store.add(pin_of(server), key.get_name(), key.get_base64())
    connect(server, store, None, 'console')
    other = hostkeys.HostKeyStore(store.path + '.other')
    pinned = paramiko.ECDSAKey.generate()
    other.add(pin_of(server), pinned.get_name(), pinned.get_base64())
    with pytest.raises(exceptions.HostKeyMismatch):
        connect(server, other, server.fingerprint, 'console')


# -- the directory and the key pair on the server ---------------------------

@pytest.fixture
def private():
    with private_dir() as path:
        yield path


@pytest.fixture
def session(server, store):
    opened = server_trust.open_session(target(server),
                                       params(server.fingerprint), store,
                                       connect_deadline=5.0)
    yield opened
    opened.close()


def on_server(session, inventory, instance='inst-1'):
    return ansible_server.AnsibleServer(session, params(inventory=inventory),
                                        instance)


def test_prepare_makes_private_directories_only(session, private):
    inv = private / 'made' / 'by' / 'mkdir'
    cluster = on_server(session, inv)
    old = os.umask(0)       # the server's umask must not matter
    try:
        cluster.prepare()
    finally:
        os.umask(old)
    for path in (private / 'made', private / 'made' / 'by', inv,
                 inv / 'k8s-mgmt-inst-1'):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path


def test_prepare_refuses_a_world_writable_directory_on_the_way(session,
                                                               private):
    shared = private / 'shared'
    shared.mkdir()
    shared.chmod(0o1777)
    cluster = on_server(session, shared / 'inventories')
    with pytest.raises(ansible_server.UnsafeOnServer) as info:
        cluster.prepare()
    text = str(info.value)
    assert text.startswith('ansible-server: ' + ansible_server.INVENTORY_FIELD
                           + ': %s on the Ansible server is writable by '
                           'every user (mode 1777)' % shared)
    assert '\n' not in text
    assert os.listdir(shared) == []        # nothing was made there


def test_the_key_pair_is_made_then_reused(session, private):
    cluster = on_server(session, private)
    cluster.prepare()
    first = cluster.ensure_key_pair()
    assert first.startswith('ssh-ed25519 ')
    assert cluster.ensure_key_pair() == first
    key = private / 'k8s-mgmt-inst-1' / 'id_ed25519'
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_a_key_others_may_read_is_refused_saying_how_to_fix(session,
                                                            private):
    cluster = on_server(session, private)
    cluster.prepare()
    cluster.ensure_key_pair()
    key = private / 'k8s-mgmt-inst-1' / 'id_ed25519'
    key.chmod(0o644)
    with pytest.raises(ansible_server.UnsafeOnServer) as info:
        cluster.ensure_key_pair()
    text = str(info.value)
    assert 'the cluster key %s on the Ansible server has mode 0644' % key \
        in text
    assert 'chmod 600' in text and 'remove it' in text


def test_a_key_of_another_user_is_refused(session, private):
    if os.geteuid() != 0:
        pytest.skip('needs root to give a file to another user')
    cluster = on_server(session, private)
    cluster.prepare()
    cluster.ensure_key_pair()
    key = private / 'k8s-mgmt-inst-1' / 'id_ed25519'
    os.chown(key, 65534, 65534)
    with pytest.raises(ansible_server.UnsafeOnServer) as info:
        cluster.ensure_key_pair()
    assert 'belongs to uid 65534, not to the connecting user (uid 0)' in \
        str(info.value)


def test_a_failing_check_is_a_command_error_not_a_refusal(session, private):
    cluster = on_server(session, private)
    cluster.session = dataclasses.make_dataclass('S', ['node', 'run'])(
        'ansible-server', lambda cmd, step, check: client.Result(
            1, '', 'python3: not found', 0.1))
    with pytest.raises(exceptions.RemoteCommandError) as info:
        cluster.prepare()
    assert 'python3: not found' in str(info.value)
