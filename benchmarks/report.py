"""The benchmarks' figures as text, and the targets they are held to.

Pure logic, no lab: the floors an operation cannot go below, the tables
``python -m benchmarks`` prints, the targets with met / NOT met, and the
exit status. The measuring modules (``benchmarks.operations``,
``benchmarks.sweep``, ``benchmarks.wrong_password``, ``benchmarks.rss``)
fill the records defined here; ``tests/unit/test_benchmark_report.py``
checks this module alone.
"""

import dataclasses
import typing

TARGET_RATIO = 1.2          # wall / floor, every operation
TARGET_SSH = 1              # SSH connections per node per operation
TARGET_SWEEP = 1.3          # most workers / 1 worker, instantiate
TARGET_WRONG_PASSWORD = 3.0  # seconds until the driver's error
TARGET_RSS_MB = 200.0       # the driver process's peak RSS

NAME_WIDTH = 34


@dataclasses.dataclass
class Row:
    """One operation: the driver's seconds against its floor."""

    operation: str
    wall: float
    floor: float
    ssh_per_node: int           # most connections one node accepted
    rss_mb: float               # peak RSS of the process running the driver

    @property
    def ratio(self):
        return self.wall / self.floor if self.floor else float('inf')


@dataclasses.dataclass
class SweepPoint:
    """Instantiate ``simple`` with ``workers`` workers on a fresh lab;
    ``cpu``: the CPU seconds the machine's cores were busy during the
    hooks, ``own_cpu`` the benchmark process's share (the driver, the lab's
    API threads), ``cores`` how many the lab had (benchmarks.cpu)."""

    workers: int
    wall: float
    floor: float
    cpu: typing.Optional[float] = None
    own_cpu: typing.Optional[float] = None
    cores: typing.Optional[int] = None

    @property
    def least_wall(self):
        """The wall time the busy CPU time allows at least on the cores."""
        if self.cpu is None or not self.cores:
            return None
        return self.cpu / self.cores


@dataclasses.dataclass
class WrongPassword:
    """Instantiate with a wrong node password: how fast and how it fails.

    ``problems``: what the error did not do that it should (empty: it
    failed in the connect phase, named the problem, touched no VM and
    showed no secret)."""

    workers: int
    seconds: float
    error: str                  # "<exception type>: <message>"
    phase: typing.Optional[str]  # the driver's phase that failed
    problems: typing.List[str] = dataclasses.field(default_factory=list)


# etcd's health interval: with its strict reconfiguration check (on in
# kubeadm's etcd), a voting member is added or removed only once every
# member has been connected this long (etcd server's HealthInterval).
ETCD_HEALTH_INTERVAL = 5.0


def instantiate_floor(init, join, handshake, masters=1, workers=1):
    """Seconds an instantiate cannot go below: ``kubeadm init`` on the
    first master, then the joins that must follow one another, plus one
    SSH handshake (every node is reached at once).

    The other masters join one at a time (etcd membership); the workers
    join all at once, alongside the masters' joins. So one join counts
    with a single master, ``masters - 1`` with more. And etcd takes a
    member only once the one added before it has been connected for
    ETCD_HEALTH_INTERVAL. kubeadm adds a joining master's member in its
    control-plane-join phase, after kubelet-start, and the join goes on
    after the add (the member's sync): with the add ``f`` of the way into
    each join, the next join's add comes no sooner than the later of its
    own ``f x join`` and the previous add plus the interval, and that
    join ends ``(1 - f) x join`` after its add. Whatever ``f``, each
    master after the second ends ``max(join, interval)`` after the one
    before."""
    if masters > 1:
        serial = join + (masters - 2) * max(join, ETCD_HEALTH_INTERVAL)
    else:
        serial = join if workers else 0
    return init + serial + handshake


# The Kubernetes API requests a scale-in of one worker cannot do without,
# one after the other: cordon the Node (a write), list its pods (a read),
# delete the Node (a write); evictions come on top when it runs pods. A
# write costs more than a read: etcd commits it to disk first.
SCALE_IN_READS = 1
SCALE_IN_WRITES = 2


def scale_in_floor(heat_read, read_round_trip, write_round_trip):
    """Seconds a scale-in of one worker cannot go below: Heat's answer
    (which VM goes) and its API requests, each as long as a request of
    its kind takes on the lab. It opens no SSH connection."""
    return (heat_read + SCALE_IN_READS * read_round_trip
            + SCALE_IN_WRITES * write_round_trip)


RSS_NOTE = ('RSS MB: peak of the benchmark process (lab and driver) so '
            'far; for a row of benchmarks.rss, the driver\'s own process')


def table(rows):
    """The operations table: one line per Row."""
    lines = ['%-*s %8s %8s %7s %9s %8s' % (
        NAME_WIDTH, 'operation', 'wall s', 'floor s', 'ratio', 'ssh/node',
        'RSS MB')]
    for r in rows:
        lines.append('%-*s %8.2f %8.2f %7.2f %9d %8.0f' % (
            NAME_WIDTH, r.operation, r.wall, r.floor, r.ratio,
            r.ssh_per_node, r.rss_mb))
    return '\n'.join(lines)


def sweep_base(points):
    """The point the sweep's ratios are taken against: the fewest
    workers."""
    return min(points, key=lambda p: p.workers) if points else None


def sweep_table(points):
    """instantiate ``simple`` by worker count; ratio to the fewest; with
    CPU figures, the busy CPU time and the wall time it allows at least."""
    base = sweep_base(points)
    with_cpu = any(p.least_wall is not None for p in points)
    unit = 'x %d worker%s' % (base.workers if base else 1,
                              '' if base and base.workers == 1 else 's')
    head = '%8s %8s %8s %14s' % ('workers', 'wall s', 'floor s', unit)
    if with_cpu:
        head += ' %8s %12s %12s' % ('cpu s', 'own cpu s', 'cpu/cores s')
    lines = [head]
    for p in sorted(points, key=lambda p: p.workers):
        line = '%8d %8.2f %8.2f %14.2f' % (p.workers, p.wall, p.floor,
                                           p.wall / base.wall)
        if with_cpu and p.least_wall is not None:
            line += ' %8.2f %12.2f %12.2f' % (p.cpu, p.own_cpu,
                                              p.least_wall)
        lines.append(line)
    return '\n'.join(lines)


def sweep_cpu_note(points):
    """What the cores allow the largest sweep point at least, against the
    target's time; None without CPU figures."""
    base = sweep_base(points)
    most = max(points, key=lambda p: p.workers) if points else None
    if most is None or most is base or most.least_wall is None:
        return None
    return ('%d workers kept the %d cores busy for %.1f CPU s (%.1f s in '
            'the benchmark\'s own process): no run of that work takes less '
            'than %.2f s of wall on them; the target is %.2f s (%.1f x %.2f '
            's)' % (most.workers, most.cores, most.cpu, most.own_cpu,
                    most.least_wall, TARGET_SWEEP * base.wall,
                    TARGET_SWEEP, base.wall))


ERROR_LINES = 3             # of the driver's error (one line per node)


def short_error(error, lines=ERROR_LINES):
    """The first ``lines`` lines of an error message, and how many more
    there are."""
    parts = error.splitlines()
    if len(parts) > lines:
        parts = parts[:lines] + ['... %d more line(s) like these'
                                 % (len(parts) - lines)]
    return parts


def wrong_password_line(wrong):
    lines = ['wrong password (%d workers): the driver failed after %.2f s'
             % (wrong.workers, wrong.seconds)]
    lines.append('  phase: %s' % (wrong.phase or '(none logged)'))
    lines.append('  error: %s' % '\n         '.join(
        short_error(wrong.error)))
    for problem in wrong.problems:
        lines.append('  PROBLEM: %s' % problem)
    return '\n'.join(lines)


def targets(rows, sweep=None, wrong=None, rss=None, rss_wanted=False):
    """(target, holds) pairs; holds is None when nothing was measured
    for it (its part failed or was not run). ``rss``: the RSS Row, a
    target only when ``rss_wanted``."""
    held = operation_targets(rows)
    held.append(sweep_target(sweep or []))
    held.append(wrong_password_target(wrong))
    if rss_wanted:
        held.append(rss_target(rss))
    return held


def operation_targets(rows):
    """wall/floor and SSH connections per node, over every Row."""
    return [
        ('wall/floor <= %.1f for every operation' % TARGET_RATIO,
         all(r.ratio <= TARGET_RATIO for r in rows) if rows else None),
        ('at most %d SSH connection per node per operation' % TARGET_SSH,
         all(r.ssh_per_node <= TARGET_SSH for r in rows) if rows else None),
    ]


def wrong_password_target(wrong):
    return ('wrong password: the driver fails in the connect phase, '
            'naming the problem, within %.0f s' % TARGET_WRONG_PASSWORD,
            None if wrong is None else
            (wrong.seconds <= TARGET_WRONG_PASSWORD and not wrong.problems))


def rss_target(row):
    return ('peak RSS of the driver process <= %.0f MB%s'
            % (TARGET_RSS_MB, ' (%s)' % row.operation if row else ''),
            None if row is None else row.rss_mb <= TARGET_RSS_MB)


def sweep_target(points):
    """Instantiating the most workers against the fewest."""
    if len(points) < 2:
        return ('instantiate with the most workers <= %.1f x 1 worker'
                % TARGET_SWEEP, None)
    base = sweep_base(points)
    most = max(points, key=lambda p: p.workers)
    return ('instantiate %d workers <= %.1f x %d worker%s (%.2f x)'
            % (most.workers, TARGET_SWEEP, base.workers,
               '' if base.workers == 1 else 's', most.wall / base.wall),
            most.wall <= TARGET_SWEEP * base.wall)


def target_lines(held):
    words = {True: 'met', False: 'NOT met', None: 'not measured'}
    return '\n'.join('target: %s: %s' % (text, words[holds])
                     for text, holds in held)


def exit_status(held, failures=(), smoke=False):
    """1 when a part of the benchmark failed; else, for a full run, 2
    when a target is not met (or not measured); 0 otherwise. A smoke run
    enforces no target."""
    if failures:
        return 1
    if smoke:
        return 0
    return 0 if all(holds for _text, holds in held) else 2
