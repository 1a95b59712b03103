"""How long one step takes on N nodes at different concurrency limits.

Starts N real SSH servers on 127.0.0.1 (the paramiko test server), then for
each concurrency limit runs, through run_on_nodes: connect (pinning a host
key), upload a file, run a command that takes --work seconds, close. Prints
one line per limit with the wall time and the speed-up over the first
limit given (1 = serial).

    .venv/bin/python benchmarks/ssh_fanout.py --nodes 16 --work 0.5
"""

import argparse
import importlib.util
import logging
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

from k8s_mgmt import parallel  # noqa: E402
from k8s_mgmt.ssh import client  # noqa: E402
from k8s_mgmt.ssh import hostkeys  # noqa: E402
from k8s_mgmt.ssh.command import Command  # noqa: E402


def _server_module():
    path = os.path.join(REPO, 'tests', 'functional', 'ssh',
                        'ssh_test_server.py')
    spec = importlib.util.spec_from_file_location('ssh_test_server', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_round(servers, limit, work, pin_file):
    store = hostkeys.HostKeyStore(pin_file)

    def step(server):
        target = client.SSHTarget('node-%d' % server.port, '127.0.0.1',
                                  'bench', password='bench-pw',
                                  port=server.port,
                                  server_id='srv-%d' % server.port)
        # Loopback test servers have no cloud console to verify against.
        with client.SSHSession(target, store=store,
                               policy=hostkeys.POLICY_TOFU) as session:
            path = os.path.join(os.path.dirname(pin_file),
                                'upload-%d' % server.port)
            session.put(b'#!/bin/sh\nsleep "$1"\n', path, mode=0o700)
            session.run(Command(path, '%.3f' % work), step='work')

    started = time.monotonic()
    parallel.run_on_nodes('bench', 'work', servers, step, concurrency=limit,
                          name_of=lambda s: str(s.port))
    return time.monotonic() - started


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--nodes', type=int, default=16)
    parser.add_argument('--work', type=float, default=0.5,
                        help='seconds each node spends in its command')
    parser.add_argument('--limits', default='1,4,16')
    args = parser.parse_args(argv)
    # The test servers' transports report each client hang-up as an error.
    logging.getLogger('paramiko').setLevel(logging.CRITICAL)
    # tofu says WARNING for every pin; here that is every node every round.
    logging.getLogger('k8s_mgmt.ssh.hostkeys').setLevel(logging.ERROR)
    server_mod = _server_module()
    servers = [server_mod.SSHTestServer(users={'bench': 'bench-pw'}).start()
               for _ in range(args.nodes)]
    try:
        baseline = None
        print('nodes=%d work=%.2fs per node' % (args.nodes, args.work))
        for limit in [int(x) for x in args.limits.split(',')]:
            with tempfile.TemporaryDirectory() as workdir:
                seconds = one_round(servers, limit, args.work,
                                    os.path.join(workdir, 'pins.json'))
            baseline = baseline or seconds  # the first limit is the baseline
            print('concurrency=%-3d wall=%6.2f s  speed-up x%.1f'
                  % (limit, seconds, baseline / seconds))
    finally:
        for server in servers:
            server.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
