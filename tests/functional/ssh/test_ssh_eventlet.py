"""SSH sessions in parallel inside a monkey-patched process (as in Tacker).

Runs in a subprocess that calls eventlet.monkey_patch() before importing
anything, exactly like tacker-conductor: the channel waiting (select on a
paramiko channel), SFTP, timeouts and run_on_nodes must all work green. The
servers run in the (unpatched) pytest process; only the client side is green.
"""

import json
import os
import subprocess
import sys
import textwrap

import ssh_test_server

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

SCRIPT = textwrap.dedent('''
    import eventlet
    eventlet.monkey_patch()

    import json
    import os
    import sys
    import tempfile
    import threading

    from oslo_config import cfg
    from k8s_mgmt import conf, exceptions, green, parallel
    from k8s_mgmt.ssh import client, hostkeys
    from k8s_mgmt.ssh.command import Command

    conf.CONF([], project='k8s-mgmt-test')
    conf.CONF.set_override('connect_deadline', 60, group='k8s_mgmt')
    conf.CONF.set_override('connect_timeout', 15, group='k8s_mgmt')
    workdir = tempfile.mkdtemp()
    store = hostkeys.HostKeyStore(os.path.join(workdir, 'pins.json'))
    ports = [int(p) for p in sys.argv[1:]]
    together = threading.Barrier(4, timeout=30)
    out = {'green': green.eventlet_is_active()}

    def work(port):
        target = client.SSHTarget('node-%d' % port, '127.0.0.1', 'u',
                                  password='pw-abc', port=port,
                                  server_id='srv-%d' % port)
        with client.SSHSession(target, store=store) as session:
            together.wait()  # all four connected at the same time
            path = os.path.join(workdir, str(port))
            session.put(b'payload', path, mode=0o600)
            echoed = session.run(Command('cat'), stdin=b'in').stdout
            try:
                session.run(Command('sleep', '20'), timeout=0.3)
                timed_out = False
            except exceptions.CommandTimeout:
                timed_out = True
            content = session.run(Command('cat', path)).stdout
            return [echoed, content, timed_out]

    out['results'] = list(parallel.run_on_nodes(
        'instantiate', 'probe', ports, work, concurrency=4,
        name_of=str).values())
    out['pins'] = len(store.all())
    print(json.dumps(out))
''')


def test_parallel_sessions_under_eventlet(fast_conf):
    """Four sessions in parallel in a monkey-patched process, as in
    tacker-conductor. Flaked in CI with "Second simultaneous read on
    fileno N": paramiko made a channel's pipe with a plain os.pipe() that
    could reuse the number of a socket just closed while a green thread
    still waited on it, and eventlet's hub refused the select. The driver
    now announces each new pipe to the hub; the deterministic reproduction
    is test_channel_pipe_on_a_reused_descriptor_under_eventlet below."""
    servers = [ssh_test_server.SSHTestServer(users={'u': 'pw-abc'}).start()
               for _ in range(4)]
    env = dict(os.environ, PYTHONPATH=REPO, PYTHONWARNINGS='ignore')
    try:
        proc = subprocess.run(
            [sys.executable, '-c', SCRIPT] + [str(s.port) for s in servers],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    finally:
        for server in servers:
            server.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out['green'] is True
    assert out['results'] == [['in', 'payload', True]] * 4
    assert out['pins'] == 4


REUSED_FD = textwrap.dedent('''
    import eventlet
    eventlet.monkey_patch()

    import json
    import select
    import socket

    import paramiko
    from k8s_mgmt.ssh import channel as channel_mod

    def parked_on_closed_socket():
        """A green thread waiting on a socket that is then closed, as a
        closed session's transport thread waits out its read timeout."""
        sock, _peer = socket.socketpair()
        def read():
            try:
                return sock.recv(1)
            except EOFError:  # what paramiko's transport thread catches
                return 'eof'
        waiter = eventlet.spawn(read)
        eventlet.sleep(0)
        number = sock.fileno()
        sock.close()
        return number, waiter

    out = {}
    number, waiter = parked_on_closed_socket()
    plain = paramiko.Channel(1)
    out['plain_reuses'] = plain.fileno() == number
    try:
        select.select([plain], [], [], 0.05)
        out['plain'] = 'ok'
    except RuntimeError as err:
        out['plain'] = str(err).split('.')[0]
    plain.close()
    waiter.kill()

    number, waiter = parked_on_closed_socket()
    ours = paramiko.Channel(2)
    channel_mod.wait_for_activity(ours, 0.05)
    out['ours_reuses'] = ours.fileno() == number
    out['ours'] = 'ok'
    out['waiter'] = waiter.wait()
    print(json.dumps(out))
''')


def test_channel_pipe_on_a_reused_descriptor_under_eventlet():
    """paramiko makes a channel's pipe with a plain os.pipe(); when its
    number is that of a socket just closed while a green thread still
    waits on it, eventlet's hub refuses a select on the channel. Our wait
    announces the new pipe to the hub first (a flake in CI before)."""
    env = dict(os.environ, PYTHONPATH=REPO, PYTHONWARNINGS='ignore')
    proc = subprocess.run([sys.executable, '-c', REUSED_FD], cwd=REPO,
                          env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # The hazard is real: a plain select fails on the reused number.
    assert out['plain_reuses'] is True
    assert out['plain'].startswith('Second simultaneous read on fileno')
    # Ours, on a reused number too, waits; the stale waiter gets EOF.
    assert out['ours_reuses'] is True and out['ours'] == 'ok'
    assert out['waiter'] == 'eof'
