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
    from k8s_mgmt import conf, exceptions, parallel
    from k8s_mgmt.ssh import client, hostkeys
    from k8s_mgmt.ssh.command import Command

    conf.CONF([], project='k8s-mgmt-test')
    conf.CONF.set_override('connect_deadline', 60, group='k8s_mgmt')
    conf.CONF.set_override('connect_timeout', 15, group='k8s_mgmt')
    workdir = tempfile.mkdtemp()
    store = hostkeys.HostKeyStore(os.path.join(workdir, 'pins.json'))
    ports = [int(p) for p in sys.argv[1:]]
    together = threading.Barrier(4, timeout=30)
    out = {'green': parallel.eventlet_is_active()}

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
