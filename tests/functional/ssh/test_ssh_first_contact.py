"""First contact with a VM, verified against its console output.

Real parts: the paramiko SSH test server (a real SSH handshake and host
key), the lab's Nova stand-in (:mod:`k8s_mgmt_lab.openstack.iaas`) on
loopback, reached through a real keystoneauth session (a real
os-getConsoleOutput over HTTP). No Keystone runs: the stand-in knows the
session's token in advance, and the session's service catalog is a
Keystone token body made by keystoneauth's own fixture. The console text
of each server is set by the test: that is the point under test.
"""

import logging
import threading

from keystoneauth1 import access
from keystoneauth1 import fixture as ks_fixture
from keystoneauth1.identity import access as access_plugin
from keystoneauth1 import session as ks_session
import paramiko
import pytest

from k8s_mgmt import exceptions
from k8s_mgmt.ssh import client
from k8s_mgmt.ssh import console_keys
from k8s_mgmt.ssh import hostkeys
from k8s_mgmt.ssh.command import Command
from k8s_mgmt_lab.openstack.iaas import auth
from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import serve

import ssh_test_server

TOKEN = 'first-contact-token-71'
CALLER = auth.Caller('admin-user', 'admin-project', ('admin', 'member'))


def cloud_init_console(keys, host='node-1'):
    """Console text shaped like cloud-init's keys-to-console output."""
    tag = '<14>Nov 23 11:02:03 ec2: '
    lines = ['[    2.104411] random: crng init done',
             tag + '#' * 61,
             tag + '-----BEGIN SSH HOST KEY FINGERPRINTS-----']
    lines += [tag + '%d %s root@%s (%s)' % (
        key.get_bits(), hostkeys.fingerprint(key), host,
        key.get_name().split('-')[0].upper()) for key in keys]
    lines += [tag + '-----END SSH HOST KEY FINGERPRINTS-----',
              tag + '#' * 61]
    return '\n'.join(lines) + '\n'


class Consoles(object):
    """The provisioner behind the stand-in: no VM, the console text each
    server's test set."""

    def __init__(self):
        self.text = {}

    def create_servers(self, specs):
        pass

    def delete_servers(self, server_ids):
        pass

    def console_output(self, server_id):
        return self.text.get(server_id, '')


class Builds(object):
    """Nova's jobs, run at once; a build is held while ``hold`` is set
    (its server stays BUILD, and Nova answers 409 for its console) until
    ``release()``."""

    def __init__(self):
        self.hold, self.held = False, []

    def __call__(self, work, name):
        if self.hold and name.startswith('build-'):
            self.held.append(work)
        else:
            work()

    def release(self):
        self.hold = False
        while self.held:
            self.held.pop(0)()


def _catalog_session(iaas):
    """A keystoneauth session holding a token whose catalog names the
    stand-in's Nova in RegionOne, as Keystone's would."""
    token = ks_fixture.V3Token(user_id=CALLER.user_id,
                               project_id=CALLER.project_id)
    compute = iaas.endpoints()['compute']
    token.add_service('compute').add_standard_endpoints(
        public=compute, internal=compute, admin=compute, region='RegionOne')
    auth_ref = access.create(body=token, auth_token=TOKEN)
    return ks_session.Session(auth=access_plugin.AccessInfoPlugin(auth_ref))


class Nova(object):
    """The stand-in, the consoles behind it, its build jobs and a
    session; ``boot()`` makes a server through Nova's API."""

    def __init__(self, tmp_path):
        self.consoles, self.builds = Consoles(), Builds()
        self.iaas = serve.Iaas(
            model.State(path=str(tmp_path / 'iaas.json')),
            auth.StaticTokens({TOKEN: CALLER}), provisioner=self.consoles,
            run=self.builds).start()
        self.session = _catalog_session(self.iaas)

    def boot(self, name):
        network = self.iaas.state.network()['id']
        answer = self.session.post(
            '/servers', endpoint_filter={'service_type': 'compute'},
            json={'server': {'name': name, 'flavorRef': '1',
                             'networks': [{'uuid': network}]}})
        return answer.json()['server']['id']

    def status(self, server_id):
        return self.session.get(
            '/servers/' + server_id,
            endpoint_filter={'service_type': 'compute'}).json()[
                'server']['status']


@pytest.fixture
def nova(tmp_path):
    """(consoles, three ACTIVE servers' ids, session, Nova) of the
    stand-in on loopback."""
    made = Nova(tmp_path)
    try:
        ids = [made.boot('node-%d' % n) for n in range(3)]
        assert [made.status(i) for i in ids] == ['ACTIVE'] * 3
        yield made.consoles.text, ids, made.session, made
    finally:
        made.iaas.stop()


def _verifier(session, region=None, **kwargs):
    return console_keys.FirstContactVerifier(lambda: (session, region),
                                             **kwargs)


def _session(target, store, verifier, policy='console'):
    return client.SSHSession(target, store=store, policy=policy,
                             first_contact=verifier)


def test_key_listed_on_console_is_pinned_as_console_verified(
        ssh_server, pin_store, make_target, nova, caplog):
    consoles, ids, session, _ = nova
    consoles[ids[0]] = cloud_init_console(
        [paramiko.RSAKey.generate(1024), ssh_server.host_key])
    caplog.set_level(logging.INFO)
    target = make_target(ssh_server, server_id=ids[0])
    with _session(target, pin_store, _verifier(session)) as ssh:
        assert ssh.run(Command('echo', 'ok')).stdout == 'ok\n'
    entry = pin_store.get(ids[0])
    assert entry['verified'] == 'console'
    assert entry['fingerprint'] == ssh_server.fingerprint
    assert 'verified against its console output' in caplog.text
    assert 'WARNING' not in caplog.text


def test_key_missing_from_console_is_refused_before_credentials(
        ssh_server, pin_store, make_target, nova):
    consoles, ids, session, _ = nova
    listed = paramiko.ECDSAKey.generate()
    consoles[ids[0]] = cloud_init_console([listed])
    target = make_target(ssh_server, server_id=ids[0])
    with pytest.raises(console_keys.ConsoleKeyMismatch) as info:
        _session(target, pin_store, _verifier(session)).connect()
    text = str(info.value)
    for part in ('node-1', ids[0], ssh_server.fingerprint,
                 hostkeys.fingerprint(listed), 'man-in-the-middle'):
        assert part in text
    assert ssh_server.auth_attempts == []
    assert pin_store.all() == {}


def test_console_is_polled_until_cloud_init_prints_the_block(
        ssh_server, pin_store, make_target, nova):
    consoles, ids, session, _ = nova
    consoles[ids[0]] = '[    0.0] booting\n'
    reads = []

    def sleep(seconds):
        # The console gets the block after the third read: the verifier
        # must keep polling (and back off) until it does.
        reads.append(seconds)
        if len(reads) == 3:
            consoles[ids[0]] = cloud_init_console(
                [ssh_server.host_key])

    verifier = _verifier(session, sleep=sleep)
    target = make_target(ssh_server, server_id=ids[0])
    with _session(target, pin_store, verifier):
        pass
    assert len(reads) == 3 and reads[0] < reads[1] < reads[2]
    assert pin_store.get(ids[0])['verified'] == 'console'


def test_no_fingerprints_by_the_deadline_is_a_clear_error(
        ssh_server, pin_store, make_target, nova):
    consoles, ids, session, _ = nova
    consoles[ids[0]] = ('-----BEGIN SSH HOST KEY FINGERPRINTS-----\n'
                        '256 SHA256:')
    verifier = _verifier(session, deadline=0.3)
    target = make_target(ssh_server, server_id=ids[0])
    with pytest.raises(console_keys.ConsoleKeysMissing) as info:
        _session(target, pin_store, verifier).connect()
    text = str(info.value)
    assert 'no host key fingerprints on the console of server %s within' \
        % ids[0] in text and 'host_key_policy = tofu' in text
    assert ssh_server.connections == 0
    assert pin_store.all() == {}


def test_server_not_ready_is_read_again_never_trusted_blindly(
        ssh_server, pin_store, make_target, nova):
    # Nova answers 409 while it cannot give a console (the server is still
    # building): that passes, so it is no reason to fall back to trust on
    # first use.
    consoles, _, session, stand_in = nova
    stand_in.builds.hold = True
    building = stand_in.boot('node-late')
    assert stand_in.status(building) == 'BUILD'
    consoles[building] = cloud_init_console([ssh_server.host_key])
    reads = []

    def sleep(seconds):
        reads.append(seconds)
        if len(reads) == 2:
            stand_in.builds.release()

    verifier = _verifier(session, sleep=sleep)
    target = make_target(ssh_server, server_id=building)
    with _session(target, pin_store, verifier):
        pass
    assert len(reads) == 2 and stand_in.status(building) == 'ACTIVE'
    assert pin_store.get(building)['verified'] == 'console'


def test_server_never_ready_ends_at_the_deadline_naming_the_409(
        ssh_server, pin_store, make_target, nova):
    consoles, _, session, stand_in = nova
    stand_in.builds.hold = True
    building = stand_in.boot('node-stuck')
    consoles[building] = cloud_init_console([ssh_server.host_key])
    verifier = _verifier(session, deadline=0.3)
    target = make_target(ssh_server, server_id=building)
    with pytest.raises(console_keys.ConsoleKeysMissing) as info:
        _session(target, pin_store, verifier).connect()
    assert '409' in str(info.value)
    assert 'while it is in vm_state building' in str(info.value)
    assert ssh_server.connections == 0 and pin_store.all() == {}


def test_unknown_server_falls_back_to_tofu_with_a_warning(
        ssh_server, pin_store, make_target, nova, caplog):
    _, _, session, _ = nova
    target = make_target(ssh_server, server_id='not-a-nova-server')
    with _session(target, pin_store, _verifier(session)):
        pass
    assert pin_store.get('not-a-nova-server')['verified'] == 'tofu'
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno == logging.WARNING]
    assert any('node-1: cannot verify the host key of server '
               'not-a-nova-server' in w and '404' in w for w in warnings)


def test_no_compute_endpoint_falls_back_to_tofu_with_a_warning(
        ssh_server, pin_store, make_target, nova, caplog):
    consoles, ids, session, _ = nova
    target = make_target(ssh_server, server_id=ids[0])
    verifier = _verifier(session, region='NoSuchRegion')
    with _session(target, pin_store, verifier):
        pass
    assert pin_store.get(ids[0])['verified'] == 'tofu'
    assert 'the service catalog has no compute endpoint' in caplog.text


def test_target_without_server_id_falls_back_to_tofu_with_a_warning(
        ssh_server, pin_store, make_target, caplog):
    def no_console():
        raise AssertionError('no server id: nothing to ask Nova about')

    target = make_target(ssh_server, server_id=None)
    verifier = console_keys.FirstContactVerifier(no_console)
    with _session(target, pin_store, verifier):
        pass
    [entry] = pin_store.all().values()
    assert entry['verified'] == 'tofu'
    assert 'no Nova server id is known for it' in caplog.text


def test_pinned_server_never_reads_the_console(ssh_server, pin_store,
                                               make_target):
    target = make_target(ssh_server)
    with _session(target, pin_store, None, policy='tofu'):
        pass

    def no_console():
        raise AssertionError('the console was read for a pinned server')

    verifier = console_keys.FirstContactVerifier(no_console)
    with _session(target, pin_store, verifier):
        pass
    assert pin_store.get('srv-1')['verified'] == 'tofu'


def test_nodes_are_verified_in_parallel_one_read_each(fast_conf, pin_store,
                                                      nova):
    consoles, ids, session, _ = nova
    servers = [ssh_test_server.SSHTestServer(users={'tester': 'pw-1'})
               .start() for _ in ids]
    for server_id, server in zip(ids, servers):
        consoles[server_id] = cloud_init_console([server.host_key])
    verifier = _verifier(session)
    errors = []

    def connect(server_id, server):
        target = client.SSHTarget('n-' + server_id[:4], '127.0.0.1',
                                  'tester', password='pw-1',
                                  port=server.port, server_id=server_id)
        try:
            with _session(target, pin_store, verifier):
                pass
        except Exception as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=connect, args=pair)
               for pair in zip(ids, servers)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        for server in servers:
            server.stop()
    assert errors == []
    pins = pin_store.all()
    assert sorted(pins) == sorted(ids)
    assert {p['verified'] for p in pins.values()} == {'console'}


# The re-check after connect ----------------------------------------------

class _SwapKeyDuringAuth(paramiko.Transport):
    """A server that, once the password is accepted, re-exchanges keys
    signed with another host key and only then says "auth succeeded".

    paramiko's client takes the new host key of a re-exchange without
    asking the host key policy (it only checks the signature), so only the
    session's re-check of the negotiated key after connect can see it.
    """

    def __init__(self, sock, other_key):
        super().__init__(sock)
        self.other_key = other_key
        self.held = None

    def _send_message(self, data):
        first = data.asbytes()[:1] if hasattr(data, 'asbytes') else b''
        if (self.other_key is not None and
                first == paramiko.common.cMSG_USERAUTH_SUCCESS):
            self.add_server_key(self.other_key)
            self.other_key = None
            self.held = data
            self._send_kex_init()
            return
        super()._send_message(data)

    def _parse_newkeys(self, m):
        super()._parse_newkeys(m)
        if self.held is not None:
            held, self.held = self.held, None
            super()._send_message(held)


class _KeySwappingServer(ssh_test_server.SSHTestServer):
    """Serves through ``transport_cls``, which swaps in ``other_key``."""

    def __init__(self, transport_cls, other_key, **kwargs):
        super().__init__(**kwargs)
        self.transport_cls = transport_cls
        self.other_key = other_key

    def _serve(self, sock):
        transport = self.transport_cls(sock, self.other_key)
        with self._lock:
            self._transports.append(transport)
        transport.add_server_key(self.host_key)
        try:
            transport.start_server(server=ssh_test_server._Interface(self))
        except (paramiko.SSHException, EOFError, OSError):
            transport.close()


def test_host_key_changed_in_a_re_exchange_is_refused(fast_conf, pin_store,
                                                      make_target):
    other = paramiko.ECDSAKey.generate()
    server = _KeySwappingServer(_SwapKeyDuringAuth, other,
                                users={'tester': 'pw-Kq9-secret-Zr4'})
    server.start()
    try:
        session = client.SSHSession(make_target(server), store=pin_store,
                                    policy='tofu')
        with pytest.raises(exceptions.HostKeyMismatch) as info:
            session.connect()
        text = str(info.value)
        assert server.fingerprint in text
        assert hostkeys.fingerprint(other) in text
        # The policy saw (and pinned) the first key: the re-exchange
        # really happened after it, during authentication.
        assert pin_store.get('srv-1')['fingerprint'] == server.fingerprint
        assert server.auth_attempts == [('tester', 'password', True)]
        assert session._client is None
    finally:
        server.stop()


class _SwapKeyAfterFirstCommand(paramiko.Transport):
    """Starts a key re-exchange signed by another host key once the first
    command's channel is closed: after connect, where the policy is never
    asked again."""

    def __init__(self, sock, other_key):
        super().__init__(sock)
        self.other_key = other_key

    def _send_message(self, data):
        super()._send_message(data)
        first = data.asbytes()[:1] if hasattr(data, 'asbytes') else b''
        if (self.other_key is not None and
                first == paramiko.common.cMSG_CHANNEL_CLOSE):
            self.add_server_key(self.other_key)
            self.other_key = None
            # Not from here: the caller holds the send lock the exchange
            # needs.
            threading.Thread(target=self.renegotiate_keys,
                             daemon=True).start()


def test_host_key_changed_in_a_re_exchange_after_connect_is_refused(
        fast_conf, pin_store, make_target):
    other = paramiko.ECDSAKey.generate()
    server = _KeySwappingServer(_SwapKeyAfterFirstCommand, other,
                                users={'tester': 'pw-Kq9-secret-Zr4'})
    server.start()
    try:
        session = client.SSHSession(make_target(server), store=pin_store,
                                    policy='tofu')
        session.connect()
        assert session.run(Command('echo', 'ok')).stdout == 'ok\n'
        transport = session._client.get_transport()
        for _ in range(200):   # the re-exchange runs in paramiko's thread
            if transport.get_remote_server_key().asbytes() == \
                    other.asbytes():
                break
            threading.Event().wait(0.01)
        else:
            pytest.fail('the server never re-exchanged keys')
        with pytest.raises(exceptions.HostKeyMismatch) as info:
            session.run(Command('echo', 'again'))
        text = str(info.value)
        assert hostkeys.fingerprint(other) in text
        assert server.fingerprint in text and 're-exchange' in text
        assert session._client is None      # the connection was dropped
        assert pin_store.get('srv-1')['fingerprint'] == server.fingerprint
    finally:
        server.stop()
