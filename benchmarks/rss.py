"""Peak RSS of the process that runs the driver, on a large cluster.

Builds a ``complex`` lab of 3 masters and ``--workers`` workers (50 by
default) in this process, then runs instantiate in a fresh child
interpreter (``python -m benchmarks.rss --child STATE_DIR``), as Tacker's
conductor would run the driver: the child's
``getrusage(RUSAGE_SELF).ru_maxrss`` is the driver's peak RSS, with
neither the lab (its cloud model, API server and VM manager live in the
parent) nor earlier benchmarks counted. Also measured: the instantiate's
wall time against its floor and the SSH connections per node. Target:
at most 200 MB with 50 workers. Needs root; the lab is torn down
afterwards, also after a failure or Ctrl-C.

    sudo .venv/bin/python -m benchmarks.rss [--workers 50]
"""

import argparse
import json
import os
import resource
import subprocess
import sys

from benchmarks import operations
from benchmarks import report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MASTERS = 3
DEFAULT_WORKERS = 50
CHILD_TIMEOUT = 1200.0      # s; a hung driver must not hang the benchmark


def child(state_dir, verbose=False):
    """In the child: instantiate the lab at ``state_dir``; print JSON."""
    from k8s_mgmt_lab.conductor import lcm
    operations.prepare(verbose)
    from k8s_mgmt_lab import manager
    result = lcm.instantiate(manager.LabSettings(state_dir=state_dir))
    print(json.dumps({
        'seconds': result.seconds_start + result.seconds_end,
        'rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        / 1024.0}), flush=True)
    return 0


def instantiate_in_child(settings, verbose=False):
    """(driver seconds, peak RSS MB) of instantiate run by a child."""
    proc = subprocess.run(
        [sys.executable, '-m', 'benchmarks.rss', '--child',
         settings.state_dir] + (['--verbose'] if verbose else []),
        cwd=REPO, stdout=subprocess.PIPE, timeout=CHILD_TIMEOUT, text=True)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise RuntimeError('the instantiate child exited %d (its errors '
                           'are above)' % proc.returncode)
    figures = json.loads(lines[-1])
    return figures['seconds'], figures['rss_mb']


def run(lab, workers, init, join, verbose=False):
    """The Row of instantiate complex (3 + ``workers``), RSS the child's."""
    try:
        lab.up('complex', masters=MASTERS, workers=workers)
        hs = lab.handshake()
        before = lab.accepted()
        wall, rss_mb = instantiate_in_child(lab.settings, verbose)
        row = report.Row(
            'instantiate complex (%d+%d)' % (MASTERS, workers), wall,
            report.instantiate_floor(init, join, hs, masters=MASTERS,
                                     workers=workers),
            operations.most_accepted(before, lab.accepted()), rss_mb)
    finally:
        lab.down()
    print('  %-34s %6.2f s (floor %5.2f s)  ssh/node %d  driver peak RSS '
          '%.0f MB' % (row.operation, row.wall, row.floor, row.ssh_per_node,
                       row.rss_mb), flush=True)
    return row


def parse(argv):
    parser = argparse.ArgumentParser(prog='python -m benchmarks.rss')
    parser.add_argument('--workers', type=int, default=DEFAULT_WORKERS,
                        help='workers besides the 3 masters')
    operations.add_delay_args(parser)
    parser.add_argument('--child', metavar='STATE_DIR',
                        help=argparse.SUPPRESS)
    parser.add_argument('--verbose', action='store_true',
                        help='log each phase and its time')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    if args.child:
        return child(args.child, args.verbose)

    def show(row):
        print()
        print(report.table([row]))
        return [report.rss_target(row)]
    return operations.run_alone(
        args.verbose, args.init_delay, args.join_delay,
        lambda lab: run(lab, args.workers, args.init_delay, args.join_delay,
                        args.verbose), show)


if __name__ == '__main__':
    sys.exit(main())
