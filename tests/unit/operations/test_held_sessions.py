"""Sessions a heal_start keeps for its heal_end (operations/held.py), over
a real SSH server (paramiko's server side on loopback) that counts the
connections it accepts."""

import time

import pytest

from k8s_mgmt import ssh
from k8s_mgmt.engine import held
from k8s_mgmt.engine import run as run_mod

import op_helpers

KEY = ('instance-1', 'heal_vnfc')


@pytest.fixture
def server():
    module = op_helpers.ssh_server_module()
    started = module.SSHTestServer(users={'ubuntu': 'ubuntu'})
    started.start()
    yield started
    started.stop()


def _target(server, server_id='server-1', name='master-1'):
    return ssh.SSHTarget(name=name, host='127.0.0.1', port=server.port,
                         username='ubuntu', password='ubuntu',
                         server_id=server_id)


@pytest.fixture
def connect(server, tmp_path):
    store = ssh.HostKeyStore(str(tmp_path / 'pins.json'))
    opened = []

    def open_session(**target_kwargs):
        session = ssh.SSHSession(_target(server, **target_kwargs),
                                 store=store)
        session.connect()
        opened.append(session)
        return session
    yield open_session
    for session in opened:
        session.close()


def _until_closed(session, seconds=10.0):
    deadline = time.monotonic() + seconds
    while session.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not session.alive()


def test_the_next_hook_reuses_the_held_connection(server, connect):
    hold = held.SessionHold()
    session = connect()
    assert hold.hold(KEY, {'master-1': session}, 60) == ('master-1',)
    assert hold.held(KEY) == ('master-1',)
    taken = hold.take(KEY, {'master-1': _target(server)})
    assert taken == {'master-1': session}
    assert session.run(ssh.Command('echo', 'still here')).stdout == \
        'still here\n'
    assert server.connections == 1
    assert hold.held(KEY) == ()          # taken once, not twice
    assert hold.take(KEY, {'master-1': _target(server)}) == {}


def test_a_replaced_vm_or_another_operation_gets_no_held_session(
        server, connect):
    hold = held.SessionHold()
    session = connect()
    hold.hold(KEY, {'master-1': session}, 60)
    # Another VNF instance, or another operation, takes nothing.
    assert hold.take(('instance-2', 'heal_vnfc'),
                     {'master-1': _target(server)}) == {}
    assert hold.held(KEY) == ('master-1',)
    # The same name on a new VM: the held session is closed, not reused.
    assert hold.take(KEY, {'master-1': _target(server,
                                               server_id='server-9')}) == {}
    assert _until_closed(session)


def test_a_session_not_taken_in_time_is_closed(connect):
    hold = held.SessionHold()
    session = connect()
    hold.hold(KEY, {'master-1': session}, 0.3)
    assert _until_closed(session)
    assert hold.held(KEY) == ()


def test_a_new_hold_closes_the_one_before(connect):
    hold = held.SessionHold()
    first, second = connect(), connect()
    hold.hold(KEY, {'master-1': first}, 60)
    hold.hold(KEY, {'master-1': second}, 60)
    assert _until_closed(first)
    assert second.alive()
    hold.release_all()
    assert _until_closed(second)


def test_limit_zero_holds_nothing(connect):
    hold = held.SessionHold()
    session = connect()
    assert hold.hold(KEY, {'master-1': session}, 0) == ()
    assert _until_closed(session)


def test_a_dropped_connection_is_not_taken(server, connect):
    hold = held.SessionHold()
    session = connect()
    hold.hold(KEY, {'master-1': session}, 60)
    server.stop()
    assert _until_closed(session)
    assert hold.take(KEY, {'master-1': _target(server)}) == {}


@pytest.mark.parametrize('fails', [False, True])
def test_only_a_hook_that_succeeds_hands_its_sessions_on(
        fails, connect, tmp_path, monkeypatch):
    monkeypatch.setattr(held, 'HOLD', held.SessionHold())
    monkeypatch.setattr(held, 'limit', lambda: 60.0)
    monkeypatch.setattr(run_mod.state_mod, 'InstanceState',
                        lambda _id: op_helpers.PinsOnlyState(tmp_path))
    params = op_helpers.sample_params('complex')
    ctx = op_helpers.context(params, operation='heal_vnfc',
                             hook='heal_start')
    kept, closed = connect(), connect(name='master-2')
    with pytest.raises(RuntimeError) if fails else _nothing():
        with run_mod.OperationRun(ctx, 'heal_start test') as op:
            op.sessions.adopt({'master-1': kept, 'master-2': closed})
            op.hold_for_next_hook(['master-1'])
            if fails:
                raise RuntimeError('a later phase failed')
    assert _until_closed(closed)
    if fails:
        assert _until_closed(kept)
        assert held.HOLD.held(op.hold_key) == ()
    else:
        assert kept.alive()
        assert held.HOLD.held(op.hold_key) == ('master-1',)
        held.HOLD.release_all()


class _nothing(object):
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False
