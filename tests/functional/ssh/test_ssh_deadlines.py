"""Every wait on the SSH server ends by its deadline with a named error.

A real paramiko server on loopback (ssh_test_server.py) accepts the
connection and the session, then never answers one request: a channel open,
the exec request, the "sftp" subsystem request, the SFTP version, an SFTP
write. paramiko's own client waits for those replies without a limit; the
session must end each wait itself, with an SSHTimeout naming node and step,
and well within a few times the deadline.
"""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
import ssh_test_server

from k8s_mgmt import exceptions
from k8s_mgmt.ssh import client
from k8s_mgmt.ssh.command import Command

DEADLINE = 1.0
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture
def hung(fast_conf, pin_store, make_target):
    """hung(request, **session_kwargs): a connected session to a server
    that never answers ``request``."""
    opened = []

    def make(request, **kwargs):
        server = ssh_test_server.SSHTestServer(
            users={'tester': 'pw-Kq9-secret-Zr4'}, hang={request}).start()
        session = client.SSHSession(make_target(server), store=pin_store,
                                    **kwargs)
        opened.append((server, session))
        session.connect()
        return server, session

    yield make
    for server, session in opened:
        session.close()
        server.stop()


def _bounded(call, limit):
    started = time.monotonic()
    with pytest.raises(exceptions.SSHTimeout) as caught:
        call()
    took = time.monotonic() - started
    assert took < 3 * limit, 'took %.1f s' % took
    return took, str(caught.value)


def test_unanswered_exec_request_ends_at_the_command_deadline(hung):
    server, session = hung('exec', connect_timeout=30)
    took, text = _bounded(lambda: session.run(
        Command('echo', 'hi'), step='install', timeout=DEADLINE), DEADLINE)
    assert server.held == ['exec']
    assert took >= DEADLINE * 0.9
    assert text.startswith('node-1: install: exec request')
    assert 'no answer within 1.0 s' in text


def test_unanswered_exec_request_ends_at_connect_timeout(hung):
    # A long command deadline does not mean a long wait for the server to
    # start the command: that is bounded like any protocol reply.
    server, session = hung('exec', connect_timeout=DEADLINE)
    _, text = _bounded(lambda: session.run(
        Command('true'), step='probe', timeout=600), DEADLINE)
    assert text.startswith('node-1: probe: exec request')


def test_unanswered_channel_open_is_a_timeout(hung):
    server, session = hung('open', connect_timeout=DEADLINE)
    _, text = _bounded(lambda: session.run(Command('true'), step='open'),
                       DEADLINE)
    assert server.held == ['open']
    assert text.startswith('node-1: open: channel open: no answer')


@pytest.mark.parametrize('request_, what', [
    ('sftp', 'SFTP subsystem request'),
    ('sftp-version', 'SFTP version exchange'),
])
def test_unanswered_sftp_start_is_a_timeout(hung, tmp_path, request_, what):
    server, session = hung(request_, connect_timeout=30)
    _, text = _bounded(lambda: session.put(
        b'data', str(tmp_path / 'f'), step='upload scripts',
        timeout=DEADLINE), DEADLINE)
    assert server.held == [request_]
    assert text.startswith('node-1: upload scripts: %s: no answer' % what)
    assert not (tmp_path / 'f').exists()


def test_unanswered_sftp_write_is_a_timeout_and_the_session_lives_on(
        hung, tmp_path):
    server, session = hung('sftp-write', connect_timeout=30)
    # An empty upload writes nothing: SFTP starts with generous limits
    # (30 s), which the next upload must not inherit.
    session.put(b'', str(tmp_path / 'empty'), timeout=30)
    assert (tmp_path / 'empty').read_bytes() == b''
    target = tmp_path / 'install.sh'
    _, text = _bounded(lambda: session.put(
        b'#!/bin/sh\n' * 10000, str(target), step='upload scripts',
        timeout=DEADLINE), DEADLINE)
    assert server.held == ['sftp-write']
    assert text.startswith('node-1: upload scripts: SFTP write to %s'
                           % target)
    assert not target.exists()
    # Only the SFTP channel was given up; commands still run.
    assert session.run(Command('echo', 'ok'), timeout=5).stdout == 'ok\n'


def test_sftp_start_is_bounded_by_connect_timeout(hung, tmp_path):
    server, session = hung('sftp', connect_timeout=DEADLINE)
    _, text = _bounded(lambda: session.put(b'x', str(tmp_path / 'f')),
                       DEADLINE)
    assert 'SFTP subsystem request' in text


def test_timeouts_are_ssh_errors():
    err = exceptions.CommandTimeout(node='n', step='s', timeout=1.0)
    assert isinstance(err, exceptions.SSHTimeout)
    assert isinstance(err, exceptions.SSHError)


GREEN_SCRIPT = textwrap.dedent('''
    import eventlet
    eventlet.monkey_patch()

    import json, os, sys, tempfile, time
    from k8s_mgmt import conf, exceptions, green, parallel
    from k8s_mgmt.ssh import client, hostkeys
    from k8s_mgmt.ssh.command import Command

    conf.CONF([], project='k8s-mgmt-test')
    conf.CONF.set_override('connect_timeout', 30, group='k8s_mgmt')
    store = hostkeys.HostKeyStore(os.path.join(tempfile.mkdtemp(), 'p.json'))
    out = {'green': green.eventlet_is_active()}
    for name, port in zip(('exec', 'sftp'), sys.argv[1:]):
        target = client.SSHTarget('node-' + name, '127.0.0.1', 'u',
                                  password='pw-abc', port=int(port),
                                  server_id='srv-' + name)
        with client.SSHSession(target, store=store) as session:
            started = time.monotonic()
            try:
                if name == 'exec':
                    session.run(Command('true'), step='s', timeout=1.0)
                else:
                    session.put(b'x', '/tmp/never', step='s', timeout=1.0)
                out[name] = 'no error'
            except exceptions.SSHTimeout as err:
                out[name] = [str(err), time.monotonic() - started]
    print(json.dumps(out))
''')


def test_deadlines_hold_under_eventlet(fast_conf):
    # tacker-conductor is monkey-patched: the watchdog is a green thread.
    servers = [ssh_test_server.SSHTestServer(users={'u': 'pw-abc'},
                                             hang={hang}).start()
               for hang in ('exec', 'sftp')]
    env = dict(os.environ, PYTHONPATH=REPO, PYTHONWARNINGS='ignore')
    try:
        proc = subprocess.run(
            [sys.executable, '-c', GREEN_SCRIPT] +
            [str(s.port) for s in servers],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    finally:
        for server in servers:
            server.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out['green'] is True
    text, took = out['exec']
    assert text.startswith('node-exec: s: exec request') and took < 3
    text, took = out['sftp']
    assert text.startswith('node-sftp: s: SFTP subsystem request')
    assert took < 3
