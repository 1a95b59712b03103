"""The lab's real control plane (MariaDB, RabbitMQ, Keystone, Heat; with
``--tacker`` also Barbican, tacker-server and tacker-conductor with our
driver): how long its first start and a warm start take, how much memory
it holds and how much CPU it burns idle, and how long it takes to stop
(needs root).

    sudo .venv/bin/python -m benchmarks.control_plane [--cold] [--tacker]
        [--idle 30] [--starts 2]

Each run uses a fresh state directory under /var/lib, removed afterwards
(also after a failure or Ctrl-C). The first start sets everything up
(databases, Keystone's bootstrap, Heat's users and domain); every later
start is a warm start: the same state directory, services only. Memory
is the RSS of every process of every service's process group, read from
/proc. ``--cold`` first builds the service virtualenvs into a fresh,
temporary cache (minutes of pip; the machine's cache is left alone).

Targets (issue 29): cold build <= 300 s, warm start <= 20 s, RSS <= 1.5
GiB; with Tacker (issue 30): warm start <= 30 s, RSS <= 2 GiB. Exit status
0, 2 when a target is not met, 1 when a part failed.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack import venvs

TARGET_COLD_BUILD = 300.0
TARGET_WARM_START = 20.0
TARGET_RSS_MIB = 1536.0
# With Barbican and Tacker (issue 30).
TARGET_WARM_START_TACKER = 30.0
TARGET_RSS_MIB_TACKER = 2048.0


def _stat_fields(pid):
    """The fields of /proc/<pid>/stat after the command name (state is
    [0]), or None when the process is gone."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()
    except OSError:
        return None


def _ticks(pid):
    """utime + stime of ``pid`` in clock ticks, or None if it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[11]) + int(fields[12])


def _group_pids(pgid):
    found = []
    for name in os.listdir('/proc'):
        fields = _stat_fields(int(name)) if name.isdigit() else None
        if fields and fields[2] == str(pgid):
            found.append(int(name))
    return found


def _rss_kib(pid):
    try:
        with open('/proc/%d/status' % pid) as handle:
            for line in handle:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def service_pids(plane):
    """{service: [pids of its process group]}; a service's recorded PID
    leads its group (each starts in a session of its own)."""
    found = {}
    for name, info in plane.status().items():
        if info['pid'] and info['alive']:
            found[name] = _group_pids(info['pid'])
    return found


def memory_mib(pids_by_service):
    return {name: sum(_rss_kib(pid) for pid in pids) / 1024.0
            for name, pids in pids_by_service.items()}


def idle_cpu(pids_by_service, seconds):
    """Percent of one core each service used over ``seconds``."""
    def sample():
        return {name: sum(_ticks(pid) or 0 for pid in pids)
                for name, pids in pids_by_service.items()}
    first, started = sample(), time.monotonic()
    time.sleep(seconds)     # not a poll: the span CPU is measured over
    last, span = sample(), time.monotonic() - started
    hz = os.sysconf('SC_CLK_TCK')
    return {name: 100.0 * (last[name] - first[name]) / hz / span
            for name in first}


def timed(step):
    started = time.monotonic()
    step()
    return time.monotonic() - started


def cold_build(cache_dir, tacker=False):
    services = control_plane.VENV_NAMES if tacker else ('keystone', 'heat')
    return {service: timed(lambda s=service: venvs.ensure(cache_dir, s))
            for service in services}


def verdict(value, target):
    return 'met' if value <= target else 'NOT met'


def run(args):
    figures = {}
    cache = control_plane.DEFAULT_CACHE
    scratch = []
    if args.cold:
        cache = tempfile.mkdtemp(prefix='k8s-mgmt-bench-cache-')
        scratch.append(cache)
        builds = cold_build(cache, args.tacker)
        figures['cold build'] = sum(builds.values())
        for service, seconds in builds.items():
            print('cold build %-10s %7.1f s' % (service, seconds))
    state_dir = tempfile.mkdtemp(prefix='k8s-mgmt-bench-cp-',
                                 dir='/var/lib')
    scratch.append(state_dir)
    plane = control_plane.ControlPlane(state_dir, cache, tacker=args.tacker)
    try:
        figures['first start'] = timed(plane.up)
        stops = [timed(plane.down)]
        warm = []
        for _ in range(args.starts):
            warm.append(timed(plane.up))
            pids = service_pids(plane)
            rss = memory_mib(pids)
            cpu = idle_cpu(pids, args.idle)
            stops.append(timed(plane.down))
        figures['warm start'] = max(warm)
        figures['rss'] = sum(rss.values())
        print('first start (set-up)     %7.1f s' % figures['first start'])
        print('warm start               %s s (worst %.1f s)' % (
            ', '.join('%.1f' % w for w in warm), max(warm)))
        print('stop                     %s s' % ', '.join(
            '%.1f' % s for s in stops))
        print('%-16s %9s %14s' % ('service', 'RSS MiB',
                                  'idle %% core/%ds' % args.idle))
        for name in rss:
            print('%-16s %9.0f %14.2f' % (name, rss[name], cpu[name]))
        print('%-16s %9.0f %14.2f' % ('total', figures['rss'],
                                      sum(cpu.values())))
    finally:
        plane.down()
        for path in scratch:
            shutil.rmtree(path, ignore_errors=True)
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--cold', action='store_true',
                        help='build the virtualenvs into a fresh cache first')
    parser.add_argument('--tacker', action='store_true',
                        help='Barbican and Tacker too, with the driver')
    parser.add_argument('--idle', type=float, default=30.0,
                        help='seconds over which idle CPU is measured')
    parser.add_argument('--starts', type=int, default=2,
                        help='warm starts to time')
    args = parser.parse_args(argv)
    try:
        figures = run(args)
    except Exception as exc:
        print('control plane benchmark failed: %s' % exc)
        return 1
    targets = [('warm start', TARGET_WARM_START_TACKER if args.tacker
                else TARGET_WARM_START, 's'),
               ('rss', TARGET_RSS_MIB_TACKER if args.tacker
                else TARGET_RSS_MIB, 'MiB')]
    if 'cold build' in figures:
        targets.insert(0, ('cold build', TARGET_COLD_BUILD, 's'))
    missed = False
    for name, target, unit in targets:
        ok = verdict(figures[name], target)
        missed = missed or ok != 'met'
        print('target %-10s %7.1f %s <= %.0f %s: %s' % (
            name, figures[name], unit, target, unit, ok))
    return 2 if missed else 0


if __name__ == '__main__':
    sys.exit(main())
