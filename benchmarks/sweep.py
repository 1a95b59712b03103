"""Instantiate ``simple`` with 1, 2, 4, 8, 16 and 32 workers: flat cost?

Each worker count gets a fresh lab (torn down after it, also after a
failure or Ctrl-C) whose stand-in ``kubeadm init`` and ``join`` take fixed
times. Measured: the driver's hooks (instantiate_start + instantiate_end);
the floor is one init, one join (the workers join at once) and one SSH
handshake. Target: 32 workers take at most 1.3 x the time of 1 worker.
Each point also shows the CPU time the machine's cores were busy during
the hooks and the wall time that allows at least (benchmarks.cpu): the lab's
VMs share the cores.
``--plot PATH`` draws instantiate seconds against the worker count
(``benchmarks.plot``, needs matplotlib: ``pip install k8s-mgmt[bench]``);
``--save PATH`` keeps the figures as JSON for ``python -m benchmarks.plot``.

    sudo .venv/bin/python -m benchmarks.sweep [--workers 1 2 4 8 16 32]
        [--init-delay 3] [--join-delay 2] [--plot PATH] [--save PATH]
"""

import argparse
import json
import sys

from benchmarks import cpu
from benchmarks import operations
from benchmarks import plot as plot_mod
from benchmarks import report

WORKERS = (1, 2, 4, 8, 16, 32)


def one_point(lab, workers, init, join):
    """instantiate on a fresh simple lab of ``workers`` workers."""
    try:
        lab.up('simple', workers=workers)
        hs = lab.handshake()
        wall, usage = operations.instantiate_with_cpu(lab)
    finally:
        lab.down()
    point = report.SweepPoint(
        workers, wall,
        report.instantiate_floor(init, join, hs, workers=workers),
        cpu=usage.machine, own_cpu=usage.own, cores=cpu.cores())
    print('  instantiate simple, %2d worker(s) %6.2f s (floor %5.2f s; '
          'cpu %5.1f s)' % (workers, point.wall, point.floor, point.cpu),
          flush=True)
    return point


def run(lab, counts, init, join):
    """SweepPoints, one per worker count, in the order given."""
    return [one_point(lab, n, init, join) for n in counts]


def save(path, points, init, join):
    with open(path, 'w') as handle:
        json.dump({'init_delay': init, 'join_delay': join,
                   'points': [vars(p) for p in points]}, handle, indent=1)


def parse(argv):
    parser = argparse.ArgumentParser(prog='python -m benchmarks.sweep')
    parser.add_argument('--workers', type=int, nargs='+',
                        default=list(WORKERS), help='worker counts')
    operations.add_delay_args(parser)
    parser.add_argument('--plot', metavar='PATH',
                        help='draw the PNG plot there')
    parser.add_argument('--save', metavar='PATH',
                        help='write the figures there as JSON')
    parser.add_argument('--verbose', action='store_true',
                        help='log each phase and its time')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)

    def show(points):
        print()
        print(report.sweep_table(points))
        note = report.sweep_cpu_note(points)
        if note:
            print(note)
        if args.save:
            save(args.save, points, args.init_delay, args.join_delay)
        if args.plot:
            plot_mod.plot(points, args.plot, args.init_delay,
                          args.join_delay)
        return [report.sweep_target(points)]
    return operations.run_alone(
        args.verbose, args.init_delay, args.join_delay,
        lambda lab: run(lab, args.workers, args.init_delay,
                        args.join_delay), show)


if __name__ == '__main__':
    sys.exit(main())
