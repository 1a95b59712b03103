"""Connecting: auth failure, retry, deadline, host key pinning, key types."""

import logging
import socket
import threading

import paramiko
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.ssh import client
from k8s_mgmt.ssh.command import Command

import ssh_test_server

TOKEN = 'abcdef.0123456789abcdef'


class _SetOnMessage(logging.Handler):
    """Sets an event when a log message contains ``text``."""

    def __init__(self, text, event):
        super().__init__(logging.DEBUG)
        self.text = text
        self.event = event

    def emit(self, record):
        if self.text in record.getMessage():
            self.event.set()


def test_auth_failure_fails_at_once_with_one_attempt(ssh_server, pin_store,
                                                     make_target):
    target = make_target(ssh_server, password=secrets.Secret('wrong-pass-1'))
    session = client.SSHSession(target, store=pin_store,
                                connect_deadline=60)
    with pytest.raises(exceptions.SSHAuthError) as info:
        session.connect()
    assert 'authentication failed for user tester' in str(info.value)
    assert 'not retried' in str(info.value)
    assert 'wrong-pass-1' not in str(info.value)
    assert ssh_server.auth_attempts == [('tester', 'password', False)]
    assert session.attempts == 1
    assert ssh_server.connections == 1


def test_connect_retries_until_port_listens(fast_conf, pin_store, make_target):
    listening = threading.Event()
    server = ssh_test_server.SSHTestServer(
        users={'tester': 'pw-Kq9-secret-Zr4'})
    # The server starts listening only after the client's second attempt
    # was refused: retry is proven by events, not by timing.
    watcher = _SetOnMessage('connect attempt 2 ', listening)
    logger = logging.getLogger('k8s_mgmt.ssh.client')
    logger.addHandler(watcher)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    server.start(when=listening)
    try:
        session = client.SSHSession(make_target(server), store=pin_store,
                                    connect_deadline=30)
        with session:
            assert session.run(Command('echo', 'up')).stdout == 'up\n'
        assert session.attempts >= 3
        assert server.connections == 1
    finally:
        logger.removeHandler(watcher)
        logger.setLevel(old_level)
        server.stop()


def test_banner_errors_are_retried(fast_conf, pin_store, make_target):
    # A port that accepts and hangs up (sshd not ready yet) gives paramiko
    # banner errors; after two of them the real server takes the port.
    port = ssh_test_server.free_port()
    ready = threading.Event()
    fake = socket.socket()
    fake.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    fake.bind(('127.0.0.1', port))
    fake.listen(4)

    def hang_up_twice():
        for _ in range(2):
            conn, _ = fake.accept()
            conn.close()
        fake.close()
        ready.set()

    thread = threading.Thread(target=hang_up_twice, daemon=True)
    thread.start()
    server = ssh_test_server.SSHTestServer(
        users={'tester': 'pw-Kq9-secret-Zr4'}, port=port).start(when=ready)
    try:
        with client.SSHSession(make_target(server), store=pin_store,
                               connect_deadline=30) as session:
            assert session.run(Command('true')).status == 0
        assert session.attempts >= 3
    finally:
        thread.join(5)
        fake.close()
        server.stop()


def test_connect_deadline_exceeded_is_a_clear_error(fast_conf, pin_store):
    port = ssh_test_server.free_port()  # nothing listens there
    target = client.SSHTarget('worker-9', '127.0.0.1', 'tester',
                              password='x-pass', port=port, server_id='s9')
    session = client.SSHSession(target, store=pin_store, connect_deadline=1.0)
    with pytest.raises(exceptions.SSHError) as info:
        session.connect()
    text = str(info.value)
    assert text.startswith('worker-9: connect: no SSH connection to '
                           '127.0.0.1:%d within 1 s' % port)
    assert 'last error' in text and 'refused' in text.lower()
    assert session.attempts >= 2
    assert not isinstance(info.value, exceptions.SSHAuthError)


# Host keys -----------------------------------------------------------------

def _connect(server, store, make_target, **kwargs):
    policy = kwargs.pop('policy', None)
    session = client.SSHSession(make_target(server, **kwargs), store=store,
                                policy=policy)
    with session:
        return session.run(Command('echo', 'ok')).stdout


def test_first_contact_pins_key_by_server_id(ssh_server, pin_store,
                                             make_target):
    assert _connect(ssh_server, pin_store, make_target) == 'ok\n'
    entry = pin_store.get('srv-1')
    assert entry['fingerprint'] == ssh_server.fingerprint
    assert entry['node'] == 'node-1'
    assert _connect(ssh_server, pin_store, make_target) == 'ok\n'


def test_changed_key_for_same_server_id_is_refused(ssh_server, pin_store,
                                                   make_target):
    _connect(ssh_server, pin_store, make_target)
    impostor = ssh_test_server.SSHTestServer(
        users={'tester': 'pw-Kq9-secret-Zr4'}).start()
    try:
        with pytest.raises(exceptions.HostKeyMismatch) as info:
            _connect(impostor, pin_store, make_target)
        text = str(info.value)
        for part in ('node-1', 'srv-1', ssh_server.fingerprint,
                     impostor.fingerprint, pin_store.path):
            assert part in text
        assert ssh_server.fingerprint.startswith('SHA256:')
        # Refused before authentication: no credential reached it.
        assert impostor.auth_attempts == []
        assert pin_store.get('srv-1')['fingerprint'] == ssh_server.fingerprint
    finally:
        impostor.stop()


def test_new_server_id_takes_a_fresh_pin(ssh_server, pin_store, make_target):
    _connect(ssh_server, pin_store, make_target)
    healed = ssh_test_server.SSHTestServer(
        users={'tester': 'pw-Kq9-secret-Zr4'}).start()
    try:
        assert _connect(healed, pin_store, make_target,
                        server_id='srv-2') == 'ok\n'
        pins = pin_store.all()
        assert pins['srv-1']['fingerprint'] == ssh_server.fingerprint
        assert pins['srv-2']['fingerprint'] == healed.fingerprint
        assert pin_store.forget('srv-1') == 1
        assert list(pin_store.all()) == ['srv-2']
    finally:
        healed.stop()


def test_no_server_id_pins_by_host_and_port(ssh_server, pin_store,
                                            make_target):
    _connect(ssh_server, pin_store, make_target, server_id=None)
    assert list(pin_store.all()) == ['127.0.0.1:%d' % ssh_server.port]


def test_strict_policy_accepts_only_pinned_keys(ssh_server, pin_store,
                                                make_target):
    with pytest.raises(exceptions.SSHError) as info:
        _connect(ssh_server, pin_store, make_target, policy='strict')
    assert 'not pinned' in str(info.value) and 'strict' in str(info.value)
    assert ssh_server.auth_attempts == []
    assert pin_store.all() == {}
    _connect(ssh_server, pin_store, make_target, policy='tofu')
    assert _connect(ssh_server, pin_store, make_target,
                    policy='strict') == 'ok\n'


# Key authentication --------------------------------------------------------

def _ed25519_pem():
    key = ed25519.Ed25519PrivateKey.generate()
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.OpenSSH,
                             serialization.NoEncryption()).decode('ascii')


def _paramiko_pem(key):
    import io
    buf = io.StringIO()
    key.write_private_key(buf)
    return buf.getvalue()


@pytest.mark.parametrize('kind', ['rsa', 'ecdsa', 'ed25519'])
def test_private_key_auth(kind, fast_conf, pin_store):
    if kind == 'rsa':
        pem = _paramiko_pem(paramiko.RSAKey.generate(2048))
    elif kind == 'ecdsa':
        pem = _paramiko_pem(paramiko.ECDSAKey.generate())
    else:
        pem = _ed25519_pem()
    public = client.load_private_key(secrets.Secret(pem))
    server = ssh_test_server.SSHTestServer(
        authorized_keys={'ubuntu': [public]}).start()
    try:
        target = client.SSHTarget('m1', '127.0.0.1', 'ubuntu',
                                  private_key=pem, port=server.port)
        with client.SSHSession(target, store=pin_store) as session:
            assert session.run(Command('echo', kind)).stdout == kind + '\n'
        assert server.auth_attempts == [('ubuntu', 'publickey', True)]
    finally:
        server.stop()


def test_unreadable_private_key_fails_without_retry(ssh_server, pin_store):
    target = client.SSHTarget('m1', '127.0.0.1', 'tester',
                              private_key='-----BEGIN NONSENSE-----\nabc',
                              port=ssh_server.port)
    with pytest.raises(exceptions.SSHError) as info:
        client.SSHSession(target, store=pin_store).connect()
    assert 'private key' in str(info.value)
    assert 'abc' not in str(info.value)


# Secrets never leak --------------------------------------------------------

def test_secrets_never_reach_logs_or_errors(ssh_server, pin_store,
                                            make_target, caplog):
    caplog.set_level(logging.DEBUG)  # every logger, paramiko's included
    token = secrets.Secret(TOKEN)
    target = make_target(ssh_server)
    with client.SSHSession(target, store=pin_store) as session:
        cmd = Command('sh', '-c', 'echo "joining with $1" >&2; exit 3', 'sh',
                      token)
        with pytest.raises(exceptions.RemoteCommandError) as info:
            session.run(cmd, step='join')
        result = session.run(Command('sh', '-c', 'cat >&2'), stdin=token,
                             check=False)
        assert result.stderr == TOKEN  # it really was echoed
    wrong = make_target(ssh_server, password=secrets.Secret('Wr0ng-pass-77'))
    with pytest.raises(exceptions.SSHAuthError) as auth_info:
        client.SSHSession(wrong, store=pin_store).connect()
    texts = [caplog.text, str(info.value), repr(info.value.kwargs),
             str(auth_info.value), repr(info.value.result)]
    for text in texts:
        for value in (TOKEN, 'pw-Kq9-secret-Zr4', 'Wr0ng-pass-77'):
            assert value not in text
    assert 'joining with ***' in str(info.value)
    assert "sh -c 'echo \"joining with $1\" >&2; exit 3' sh ***" in \
        caplog.text
    assert 'node-1 join: running' in caplog.text
