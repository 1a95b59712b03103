"""Instantiate `simple` with 1 and with 8 workers: parallel joins?

On the lab, with the stand-ins' ``kubeadm join`` taking a fixed time
(``lab up --join-delay``, 2 s by default here), a driver that joins workers
in parallel takes about as long for 8 workers as for 1; a serial one (like
Tacker's reference driver) takes several times as long. Target: the 8-worker
run takes at most 1.3x the 1-worker run. Needs root; each lab is torn down
afterwards, also after a failure or Ctrl-C.

    sudo .venv/bin/python -m benchmarks.instantiate [--join-delay 2]
"""

import argparse
import signal
import statistics
import sys
import time

from k8s_mgmt_lab.cli import lab_lcm
from k8s_mgmt.cli import main as cli_main
from k8s_mgmt.cli.errors import UserError
from k8s_mgmt_lab import manager

STATE_DIR = '/var/lib/k8s-mgmt-lab-bench-instantiate'
SUBNET = '10.254.233.0/24'
BRIDGE = 'k8slabqb'
TAG = 'lqb'
TARGET_RATIO = 1.3


def lab_cli(*verb):
    argv = ['lab', '--state-dir', STATE_DIR, '--bridge', BRIDGE,
            '--tag', TAG] + list(verb)
    try:
        args = cli_main.build_parser().parse_args(argv)
    except SystemExit:
        raise UserError('"k8s-mgmt %s" was refused by the CLI (see above)'
                        % ' '.join(argv))
    return args.func(args)


def take_down():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        lab_cli('down')
    finally:
        signal.signal(signal.SIGINT, previous)


def one_run(workers, join_delay, init_delay):
    """Seconds of instantiate_end for a simple lab with ``workers``."""
    up = ['up', '--flavour', 'simple', '--workers', str(workers),
          '--subnet', SUBNET, '--join-delay', str(join_delay)]
    if init_delay is not None:
        up += ['--init-delay', str(init_delay)]
    take_down()  # leftovers of an interrupted earlier run
    try:
        lab_cli(*up)
        settings = manager.LabSettings(state_dir=STATE_DIR)
        started = time.monotonic()
        report = lab_lcm.run_instantiate(settings)
        total = time.monotonic() - started
        not_ready = [n['name'] for n in report['nodes'] if not n['ready']]
        if len(report['nodes']) != workers + 1 or not_ready:
            raise UserError('%d workers: nodes not all Ready: %s'
                            % (workers, not_ready or report['nodes']))
        return report['seconds']['instantiate_end'], total
    finally:
        take_down()


def parse(argv):
    parser = argparse.ArgumentParser(prog='python -m benchmarks.instantiate')
    parser.add_argument('--join-delay', type=float, default=2.0,
                        help='seconds a stand-in kubeadm join takes')
    parser.add_argument('--init-delay', type=float,
                        help='seconds a stand-in kubeadm init takes '
                             '(default: the lab\'s)')
    parser.add_argument('--workers', type=int, nargs=2, default=[1, 8],
                        metavar=('FEW', 'MANY'))
    parser.add_argument('--repeat', type=int, default=3,
                        help='runs per size; the median counts (a shared '
                             '2-core machine is noisy)')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    few, many = args.workers
    results = {}
    try:
        for workers in (few, many):
            ends = []
            for _ in range(max(1, args.repeat)):
                end, total = one_run(workers, args.join_delay,
                                     args.init_delay)
                ends.append(end)
                print('simple, %d worker(s): instantiate_end %.2f s '
                      '(with instantiate_start and the cluster report '
                      '%.2f s)' % (workers, end, total), flush=True)
            results[workers] = statistics.median(ends)
            print('simple, %d worker(s): median instantiate_end %.2f s of '
                  '%d run(s)' % (workers, results[workers], len(ends)),
                  flush=True)
    except UserError as err:
        print('benchmark failed: %s' % err, file=sys.stderr)
        return 1
    ratio = results[many] / results[few]
    print('join delay %.1f s; %d workers / %d worker(s): ratio %.2f '
          '(target <= %.1f: %s)'
          % (args.join_delay, many, few, ratio, TARGET_RATIO,
             'met' if ratio <= TARGET_RATIO else 'NOT met'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
