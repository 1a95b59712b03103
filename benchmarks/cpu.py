"""CPU time the machine and the benchmark's own process spend in a run.

Every lab VM shares the machine's cores, so an operation cannot take less
wall time than the CPU time it keeps busy divided by the cores: a bound no
ordering of the driver's work can beat, only less work (the driver's, or
the VMs': their sshd, scripts and stand-ins). The sweep prints it.

The machine's busy time is read from ``/proc/stat`` (every core's time
outside idle and I/O wait); the benchmark's own process (the driver's
hooks, and the lab's Keystone/Heat API threads) from ``os.times()``.
"""

import dataclasses
import os

PROC_STAT = '/proc/stat'
# /proc/stat's "cpu" fields: user nice system idle iowait irq softirq steal
# guest guest_nice (guest time is counted in user already).
_BUSY = (0, 1, 2, 5, 6, 7)


def busy_seconds(stat_text):
    """CPU seconds every core spent busy since boot, from /proc/stat's
    text."""
    for line in stat_text.splitlines():
        fields = line.split()
        if fields and fields[0] == 'cpu':
            ticks = [int(v) for v in fields[1:]]
            return sum(ticks[i] for i in _BUSY if i < len(ticks)) / \
                os.sysconf('SC_CLK_TCK')
    raise ValueError('no "cpu" line in %s' % PROC_STAT)


def cores():
    """The cores this process may run on (the lab's VMs share them)."""
    return len(os.sched_getaffinity(0))


@dataclasses.dataclass(frozen=True)
class Sample:
    machine: float      # busy CPU seconds of every core since boot
    own: float          # this process's CPU seconds (its threads too)


def sample():
    with open(PROC_STAT) as handle:
        machine = busy_seconds(handle.read())
    times = os.times()
    return Sample(machine, times.user + times.system)


@dataclasses.dataclass(frozen=True)
class Usage:
    machine: float      # CPU seconds the cores were busy
    own: float          # of which the benchmark's process

    def least_wall(self, ncores):
        """The wall time below which this much CPU cannot run."""
        return self.machine / ncores


def between(first, last):
    return Usage(last.machine - first.machine, last.own - first.own)


class HookCPU(object):
    """A driver whose instantiate hooks are bracketed by CPU samples: from
    ``instantiate_start``'s call to ``instantiate_end``'s return, what the
    wall time of benchmarks.operations.instantiate covers."""

    def __init__(self, driver):
        self._driver = driver
        self._first = self._last = None

    def __getattr__(self, name):
        return getattr(self._driver, name)

    def instantiate_start(self, **kwargs):
        self._first = sample()
        return self._driver.instantiate_start(**kwargs)

    def instantiate_end(self, **kwargs):
        try:
            return self._driver.instantiate_end(**kwargs)
        finally:
            self._last = sample()

    @property
    def usage(self):
        if self._first is None or self._last is None:
            return None
        return between(self._first, self._last)
