"""How long the ``k8s-mgmt`` command takes to start, and what it imports.

Each command runs in a fresh interpreter (this one's executable), once to
warm the bytecode caches and then ``--repeat`` times (5 by default); the
median is shown:

* the wall time of ``python -c "import k8s_mgmt.cli.main"``, of
  ``python -m k8s_mgmt --help`` and of ``--help`` of the verbs that need
  no cluster (validate, package, plan, hostkeys);
* with ``-X importtime``, for ``import k8s_mgmt.cli.main`` and for
  ``k8s-mgmt --help`` (which registers every verb and plugin): the
  cumulative import time of ``k8s_mgmt.cli.main``, the sum over all
  top-level imports, and the 10 heaviest top-level imports.

No lab, no root, no target.

    .venv/bin/python -m benchmarks.importtime [--repeat 5]
"""

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = 'k8s_mgmt.cli.main'
DEFAULT_REPEAT = 5
HEAVIEST = 10
TIMEOUT = 120.0
IMPORT_ONLY = ('import %s' % MODULE, ('-c', 'import %s' % MODULE))
COMMANDS = (IMPORT_ONLY,
            ('k8s-mgmt --help', ('-m', 'k8s_mgmt', '--help'))) + tuple(
    ('k8s-mgmt %s --help' % verb, ('-m', 'k8s_mgmt', verb, '--help'))
    for verb in ('validate', 'package', 'plan', 'hostkeys'))
PROFILED = COMMANDS[:2]


@dataclasses.dataclass
class Profile:
    """Medians of one command's ``-X importtime`` runs, in µs."""

    command: str
    module_us: float            # cumulative of MODULE
    total_us: float             # sum of the top-level cumulatives
    heaviest: list              # [(module, cumulative µs)], heaviest first


@dataclasses.dataclass
class Startup:
    repeat: int
    walls: list                 # [(command, median seconds)]
    profiles: list              # [Profile]


def top_level(stderr):
    """``{module: cumulative µs}`` of the top-level imports in ``-X
    importtime`` output ("import time: self [us] | cumulative | imported
    package", one more indentation level per nesting)."""
    found = {}
    for line in stderr.splitlines():
        if not line.startswith('import time:'):
            continue
        fields = line[len('import time:'):].split('|')
        if len(fields) != 3 or not fields[1].strip().isdigit():
            continue                # the header line
        name = fields[2]
        if name.startswith(' ') and not name.startswith('  '):
            found[name.strip()] = int(fields[1])
    return found


def run(argv, importtime=False):
    """(wall seconds, stderr) of ``python [-X importtime] ARGV``."""
    cmd = [sys.executable] + (['-X', 'importtime'] if importtime else [])
    start = time.perf_counter()
    proc = subprocess.run(cmd + list(argv), capture_output=True, text=True,
                          cwd=REPO, timeout=TIMEOUT)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError('python %s exited %d: %s' % (
            ' '.join(argv), proc.returncode, proc.stderr.strip()[-500:]))
    return seconds, proc.stderr


def profile(command, runs):
    """A Profile from the ``-X importtime`` stderr of several runs."""
    tops = [top_level(stderr) for stderr in runs]

    def median(name):
        return statistics.median(t.get(name, 0) for t in tops)
    names = set().union(*tops)
    heaviest = sorted(((n, median(n)) for n in names),
                      key=lambda pair: (-pair[1], pair[0]))[:HEAVIEST]
    return Profile(command, median(MODULE),
                   statistics.median(sum(t.values()) for t in tops),
                   heaviest)


def measure(repeat=DEFAULT_REPEAT):
    """The Startup figures, ``repeat`` runs of each command."""
    walls, profiles = [], []
    for command, argv in COMMANDS:
        run(argv)
        walls.append((command, statistics.median(
            run(argv)[0] for _ in range(repeat))))
    for command, argv in PROFILED:
        profiles.append(profile(command, [run(argv, importtime=True)[1]
                                          for _ in range(repeat)]))
    return Startup(repeat, walls, profiles)


def text(startup):
    """The figures as the benchmark prints them."""
    width = max(len(command) for command, _ in startup.walls)
    lines = ['CLI start-up, median of %d runs:' % startup.repeat,
             '  %-*s  wall ms' % (width, 'command')]
    lines += ['  %-*s  %7.0f' % (width, command, seconds * 1000)
              for command, seconds in startup.walls]
    for prof in startup.profiles:
        lines.append('-X importtime, %s: %s %.1f ms cumulative, all '
                     'imports %.1f ms; heaviest top-level:'
                     % (prof.command, MODULE, prof.module_us / 1000,
                        prof.total_us / 1000))
        lines += ['  %8.1f ms  %s' % (us / 1000, name)
                  for name, us in prof.heaviest]
    return '\n'.join(lines)


def parse(argv):
    parser = argparse.ArgumentParser(prog='python -m benchmarks.importtime')
    parser.add_argument('--repeat', type=int, default=DEFAULT_REPEAT,
                        metavar='N', help='runs of each command (the '
                                          'median is shown)')
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error('--repeat must be at least 1')
    return args


def main(argv=None):
    args = parse(argv)
    try:
        print(text(measure(args.repeat)))
    except (OSError, RuntimeError, subprocess.SubprocessError) as err:
        print('CLI start-up failed: %s' % err, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
