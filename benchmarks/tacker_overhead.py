"""Tacker's own share of each LCM operation, on a complex lab that runs the
real Tacker (needs root).

    sudo .venv/bin/python -m benchmarks.tacker_overhead

The lab comes up with a control plane of its own (MariaDB, RabbitMQ,
Keystone, Heat, Barbican, tacker-server, tacker-conductor with the
driver). Then instantiate, scale out, scale in, heal of a worker and
terminate run through Tacker's v1 REST API, as ``k8s-mgmt lab`` runs
them. For each: the wall time from the API call to the occurrence read
COMPLETED; the driver's time, the sum of the ``finished in`` lines its
hooks wrote to tacker-conductor's log during the operation; Heat's time,
from the first to the last event of Tacker's stack (itself, not its
resources) during the operation; and Tacker's overhead, what is left.
Tacker polls a stack every ``[openstack_vim] stack_retry_wait`` seconds
(10, its default) and this client polls the occurrence with backoff (0.5
to 5 s): both are in the overhead. The driver's share is the one the other
benchmarks measure without Tacker. The lab is torn down afterwards, also
after a failure or Ctrl-C.
"""

import datetime
import re
import subprocess
import sys
import time

from k8s_mgmt_lab import manager
from k8s_mgmt_lab.cli import lab_tacker
from k8s_mgmt_lab.conductor import status as status_mod
from k8s_mgmt_lab.tacker_lcm import operations

STATE_DIR = '/var/lib/k8s-mgmt-lab-bench-tacker'
SUBNET = '10.254.237.0/24'
BRIDGE = 'k8slabbt'
TAG = 'lbt'
SETTINGS = manager.LabSettings(state_dir=STATE_DIR, subnet=SUBNET,
                               bridge=BRIDGE, tag=TAG)
FINISHED = re.compile(r' INFO k8s_mgmt\.engine\.phase_log .*\] '
                      r'finished in ([0-9.]+) s')


def lab(*words):
    return subprocess.run(
        [sys.executable, '-m', 'k8s_mgmt', 'lab', '--state-dir', STATE_DIR,
         '--bridge', BRIDGE, '--tag', TAG] + list(words), check=True,
        stdout=subprocess.DEVNULL)


def _log_size(path):
    with open(path, 'rb') as handle:
        return handle.seek(0, 2)


def driver_seconds(path, offset):
    """The driver's hook time in the log lines after ``offset``."""
    with open(path, 'rb') as handle:
        handle.seek(offset)
        text = handle.read().decode('utf-8', 'replace')
    return sum(float(m.group(1)) for m in FINISHED.finditer(text))


def _event_time(text):
    return datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))


def heat_seconds(record, stack_path, since, until):
    """First to last event of the stack itself within [since, until]."""
    stacks = status_mod.lab_stacks(record)
    answer = stacks._call('GET', '/stacks/%s/events' % stack_path,
                          params={'resource_name': stack_path.split('/')[0],
                                  'sort_dir': 'asc'}, raise_exc=False)
    if answer.status_code != 200:
        return None
    times = [_event_time(e['event_time']) for e in answer.json()['events']]
    times = [t for t in times if since - datetime.timedelta(seconds=1)
             <= t <= until + datetime.timedelta(seconds=1)]
    return (max(times) - min(times)).total_seconds() if times else 0.0


def measure(name, call):
    record = manager.read_record(SETTINGS)
    log = lab_tacker.conductor_log(STATE_DIR)
    offset = _log_size(log)
    since = datetime.datetime.now(datetime.timezone.utc)
    outcome = call()
    until = datetime.datetime.now(datetime.timezone.utc)
    after = manager.read_record(SETTINGS)
    path = ('%s/%s' % (after['stack_name'], after['stack_id'])
            if after.get('stack_id') else
            '%s/%s' % (record['stack_name'], record['stack_id']))
    driver = driver_seconds(log, offset)
    heat = heat_seconds(after, path, since, until)
    overhead = outcome.seconds - driver - (heat or 0.0)
    print('%-12s %8.1f %8.1f %8s %9.1f' % (
        name, outcome.seconds, driver,
        '-' if heat is None else '%.1f' % heat, overhead))
    return outcome


def worker_vnfc():
    record = manager.read_record(SETTINGS)
    topology = status_mod.read_topology(record)
    return topology.workers[0].vnfc_id


def main():
    lab('down')
    try:
        began = time.monotonic()
        lab('up', '--flavour', 'complex', '--subnet', SUBNET,
            '--own-control-plane')
        print('lab up (its own control plane with Tacker): %.1f s'
              % (time.monotonic() - began))
        print('%-12s %8s %8s %8s %9s' % ('operation', 'wall s', 'driver s',
                                         'Heat s', 'Tacker s'))
        measure('instantiate', lambda: operations.instantiate(SETTINGS))
        measure('scale out', lambda: operations.scale(SETTINGS,
                                                      'SCALE_OUT'))
        measure('scale in', lambda: operations.scale(SETTINGS, 'SCALE_IN'))
        vnfc = worker_vnfc()
        measure('heal worker', lambda: operations.heal(SETTINGS, [vnfc]))
        measure('terminate', lambda: operations.terminate(SETTINGS))
    finally:
        lab('down')
    return 0


if __name__ == '__main__':
    sys.exit(main())
