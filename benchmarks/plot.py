"""The sweep's figures as a PNG: instantiate seconds against workers.

Draws the driver's wall time and the floor of ``instantiate`` for each
worker count of ``benchmarks.sweep`` (log2 x axis), the target (1.3 x
the fewest workers' time) and, when the sweep measured it, the least wall
time the busy CPU allows on the lab's cores, titled with the stand-in
delays. matplotlib is
imported only here and only when a plot is asked for, with the Agg backend
(no display); without it the plot is skipped with a message (``pip install
k8s-mgmt[bench]``).

    .venv/bin/python -m benchmarks.plot SWEEP.json [--plot PATH]

(SWEEP.json: ``python -m benchmarks.sweep --save SWEEP.json``.)
"""

import argparse
import json
import os
import sys

from benchmarks import report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PATH = os.path.join(REPO, 'doc', 'source', 'images',
                            'instantiate_vs_workers.png')


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None when not installed."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        from matplotlib import pyplot as plt
    except ImportError:
        return None
    return plt


def title(init, join):
    return ('instantiate simple: driver time vs workers\n'
            '(stand-in kubeadm init %.1f s, join %.1f s)' % (init, join))


def plot(points, path, init, join):
    """Write the PNG to ``path`` (its directory made); the path, or None
    when matplotlib is missing or there is nothing to draw."""
    plt = pyplot()
    if plt is None:
        print('plot skipped: matplotlib is not installed (pip install '
              '"k8s-mgmt[bench]" or "matplotlib>=3.7")', flush=True)
        return None
    points = sorted(points, key=lambda p: p.workers)
    if not points:
        print('plot skipped: no figures', flush=True)
        return None
    workers = [p.workers for p in points]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    try:
        ax.plot(workers, [p.wall for p in points], 'o-', label='wall')
        ax.plot(workers, [p.floor for p in points], 's--', label='floor')
        if all(p.least_wall is not None for p in points):
            ax.plot(workers, [p.least_wall for p in points], '^-.',
                    label='busy CPU / %d cores' % points[-1].cores)
        base = report.sweep_base(points)
        ax.axhline(report.TARGET_SWEEP * base.wall, color='grey',
                   linestyle=':', label='target: %.1f x %d worker%s'
                   % (report.TARGET_SWEEP, base.workers,
                      '' if base.workers == 1 else 's'))
        ax.set_xscale('log', base=2)
        ax.set_xticks(workers)
        ax.set_xticklabels([str(n) for n in workers])
        ax.set_xlabel('workers')
        ax.set_ylabel('instantiate (s)')
        ax.set_ylim(bottom=0)
        ax.set_title(title(init, join))
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        folder = os.path.dirname(path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    print('plot written to %s' % path, flush=True)
    return path


def load(path):
    """(points, init, join) from ``benchmarks.sweep --save``."""
    with open(path) as handle:
        data = json.load(handle)
    points = [report.SweepPoint(
        int(p['workers']), float(p['wall']), float(p['floor']),
        cpu=_optional(p, 'cpu', float), own_cpu=_optional(p, 'own_cpu', float),
        cores=_optional(p, 'cores', int)) for p in data['points']]
    return points, float(data['init_delay']), float(data['join_delay'])


def _optional(point, key, kind):
    value = point.get(key)
    return None if value is None else kind(value)


def parse(argv):
    parser = argparse.ArgumentParser(prog='python -m benchmarks.plot')
    parser.add_argument('sweep', help='JSON of benchmarks.sweep --save')
    parser.add_argument('--plot', metavar='PATH', default=DEFAULT_PATH,
                        help='where the PNG goes (default %(default)s)')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    try:
        points, init, join = load(args.sweep)
    except (OSError, ValueError, KeyError, TypeError) as err:
        print('cannot read %s: %s' % (args.sweep, err), file=sys.stderr)
        return 1
    plot(points, args.plot, init, join)
    return 0


if __name__ == '__main__':
    sys.exit(main())
