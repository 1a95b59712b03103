"""Every lab benchmark in one run, one table and the targets.

    sudo .venv/bin/python -m benchmarks [--smoke] [--plot PATH]
        [--rss-workers N] [--init-delay 3] [--join-delay 2] [--verbose]

On lab clusters whose stand-in ``kubeadm init`` and ``join`` take fixed
times, it measures, each part on a fresh lab torn down afterwards (also
after a failure or Ctrl-C):

* the operations of ``benchmarks.operations`` (instantiate, scale out and
  in, heal a worker on ``simple``; instantiate with 16 workers;
  instantiate, heal a master and heal the whole VNF on ``complex`` 3+2):
  wall time against the floor, SSH connections per node, peak RSS;
* ``benchmarks.wrong_password`` on the 16-worker lab, before its real
  instantiate: how fast a wrong node password fails;
* ``benchmarks.sweep``: instantiate ``simple`` with 1 to 32 workers, drawn
  by ``benchmarks.plot`` to ``--plot`` (default
  doc/source/images/instantiate_vs_workers.png; needs matplotlib, the
  ``bench`` extra, else skipped);
* with ``--rss-workers N`` only, ``benchmarks.rss``: the driver process's
  peak RSS instantiating 3 masters and N workers;
* ``benchmarks.importtime``, first and without a lab: the ``k8s-mgmt``
  command's start-up time and heaviest imports (no target, also with
  ``--smoke``).

Every lab of the run shares one real control plane (MariaDB, RabbitMQ,
Keystone, Heat), each in a region of its own: ``$K8S_MGMT_LAB_CONTROL_PLANE``
when set (left running), else one in a temporary directory, started by the
first lab and stopped and removed at the end.

Targets: wall/floor <= 1.2 for every operation; at most one SSH connection
per node per operation; 32 workers <= 1.3 x 1 worker; a wrong password
fails within 3 s; (with --rss-workers) peak RSS <= 200 MB. Exit status: 0,
2 when a target is not met, 1 when a part failed. ``--smoke`` (CI): delays
0.5 s, the simple rows, 2 workers instead of 16, a sweep of 1 and 2
workers, no plot unless ``--plot``; no target enforced.
"""

import argparse
import dataclasses
import sys
import typing

from benchmarks import importtime as importtime_mod
from benchmarks import operations
from benchmarks import plot as plot_mod
from benchmarks import report
from benchmarks import rss as rss_mod
from benchmarks import shared_plane
from benchmarks import sweep as sweep_mod
from benchmarks import wrong_password

SMOKE_DELAY = 0.5
SMOKE_MANY_WORKERS = 2
SMOKE_SWEEP = (1, 2)


@dataclasses.dataclass
class Results:
    rows: list = dataclasses.field(default_factory=list)
    sweep: list = dataclasses.field(default_factory=list)
    wrong: typing.Any = None
    rss: typing.Any = None
    startup: typing.Any = None
    handshake: typing.Optional[float] = None
    failures: list = dataclasses.field(default_factory=list)


def attempt(results, name, fn):
    """``fn()``, or None with the failure noted (the other parts go on;
    each part tears its own lab down)."""
    try:
        return fn()
    except Exception as err:
        results.failures.append((name, '%s: %s' % (type(err).__name__,
                                                   err)))
        print('%s failed: %s: %s' % (name, type(err).__name__, err),
              file=sys.stderr, flush=True)
        return None


def torn_down(lab, fn, *args, **kwargs):
    """``fn(lab, ...)``, the lab torn down after it whatever happens."""
    try:
        return fn(lab, *args, **kwargs)
    finally:
        lab.down()


def measure_all(lab, args, results):
    init, join = args.init_delay, args.join_delay
    print('CLI start-up:', flush=True)
    results.startup = attempt(results, 'CLI start-up',
                              importtime_mod.measure)
    print('operations:', flush=True)
    simple = attempt(results, 'simple operations',
                     lambda: torn_down(lab, operations.simple_rows,
                                       init, join))
    if simple:
        results.rows += simple[0]
        results.handshake = simple[1]

    def wrong(fresh):
        return wrong_password.measure(fresh, args.many_workers)
    many = attempt(results, 'instantiate %d workers' % args.many_workers,
                   lambda: torn_down(lab, operations.many_rows,
                                     args.many_workers, init, join,
                                     before=wrong))
    if many:
        results.rows.append(many[0])
        results.wrong = many[1]
    if not args.smoke:
        results.rows += attempt(
            results, 'complex operations',
            lambda: torn_down(lab, operations.complex_rows,
                              init, join)) or []
    if args.rss_workers:
        results.rss = attempt(
            results, 'RSS with %d workers' % args.rss_workers,
            lambda: rss_mod.run(lab, args.rss_workers, init, join,
                                args.verbose))
        if results.rss:
            results.rows.append(results.rss)
    print('sweep:', flush=True)
    for workers in args.sweep:
        point = attempt(results, 'sweep %d workers' % workers,
                        lambda: sweep_mod.one_point(lab, workers, init,
                                                    join))
        if point:
            results.sweep.append(point)


def print_results(args, results):
    print()
    print('kubeadm init %.1f s, join %.1f s, SSH handshake %s'
          % (args.init_delay, args.join_delay,
             '%.2f s' % results.handshake if results.handshake is not None
             else 'not measured'))
    print(report.table(results.rows))
    print(report.RSS_NOTE)
    print()
    if results.sweep:
        print('instantiate simple by worker count:')
        print(report.sweep_table(results.sweep))
        note = report.sweep_cpu_note(results.sweep)
        if note:
            print(note)
        print()
    if results.wrong:
        print(report.wrong_password_line(results.wrong))
        print()
    if results.rss:
        print('driver process peak RSS, %s: %.0f MB'
              % (results.rss.operation, results.rss.rss_mb))
        print()
    if results.startup:
        print(importtime_mod.text(results.startup))
        print()
    for name, error in results.failures:
        print('FAILED: %s: %s' % (name, error))
    held = report.targets(results.rows, results.sweep, results.wrong,
                          results.rss, rss_wanted=bool(args.rss_workers))
    print(report.target_lines(held))
    return report.exit_status(held, results.failures, smoke=args.smoke)


def parse(argv):
    parser = argparse.ArgumentParser(prog='python -m benchmarks')
    operations.add_delay_args(parser)
    parser.add_argument('--smoke', action='store_true',
                        help='small sizes, %.1f s delays, no target '
                             'enforced (CI)' % SMOKE_DELAY)
    parser.add_argument('--plot', metavar='PATH',
                        help='PNG of the sweep (default %s; none with '
                             '--smoke unless given)' % plot_mod.DEFAULT_PATH)
    parser.add_argument('--rss-workers', type=int, metavar='N',
                        help='also measure the driver\'s peak RSS '
                             'instantiating 3 masters and N workers')
    parser.add_argument('--many-workers', type=int,
                        default=operations.MANY_WORKERS,
                        help='workers of the large simple instantiate and '
                             'the wrong-password check')
    parser.add_argument('--sweep', type=int, nargs='+',
                        default=list(sweep_mod.WORKERS), metavar='WORKERS',
                        help='worker counts of the sweep')
    parser.add_argument('--verbose', action='store_true',
                        help='log each phase and its time')
    args = parser.parse_args(argv)
    if args.smoke:
        args.init_delay = args.join_delay = SMOKE_DELAY
        args.many_workers = SMOKE_MANY_WORKERS
        args.sweep = list(SMOKE_SWEEP)
    elif args.plot is None:
        args.plot = plot_mod.DEFAULT_PATH
    return args


def main(argv=None):
    args = parse(argv)
    operations.prepare(args.verbose)
    results = Results()
    with shared_plane.shared_control_plane():
        lab = operations.Lab(args.init_delay, args.join_delay)
        try:
            measure_all(lab, args, results)
        except KeyboardInterrupt:
            print('interrupted: the lab is torn down', file=sys.stderr)
            return 130
        finally:
            lab.down()
    if args.plot and results.sweep:
        attempt(results, 'plot', lambda: plot_mod.plot(
            results.sweep, args.plot, args.init_delay, args.join_delay))
    return print_results(args, results)


if __name__ == '__main__':
    sys.exit(main())
