"""A Kubernetes upgrade of a 3-master, 2-worker cluster: does the VIP keep
answering, does etcd keep its members, and how close is the wall time to
what must happen in order?

A ``complex`` lab is built at 1.35 by the real driver and upgraded to
1.36 through the lab's conductor (the instance's metadata
``k8sMgmtUpgrade``, then ``modify_information_end``). Meanwhile, from
this host:

* ``GET /readyz`` through ``VIP:16443`` every 0.1 s: the longest time
  between two answers (target: at most 3 s);
* every second, ``etcdctl member list`` on a master: the fewest members
  seen (target: 3 throughout).

The wall time is set against what must happen in order: per master, and
per batch of workers, its drain, its upgrade and its wait until Ready at
the target (the driver's own phase timings); target: wall <= 1.1 x that
sum. The stand-in ``kubeadm upgrade`` takes ``--upgrade-delay`` seconds
(default 10), as a real one takes its time.

Runs the lab in this process (needs root); the lab is torn down
afterwards, also after a failure or Ctrl-C.

    sudo .venv/bin/python -m benchmarks.upgrade [--upgrade-delay 10]

tests/lab/test_upgrade.py checks the same upgrade (without the floor).
"""

import argparse
import json
import logging
import re
import sys
import threading
import time

from k8s_mgmt import conf
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import lcm_upgrade
from k8s_mgmt_lab.conductor import status as lab_status

from benchmarks import vip_failover
from benchmarks.shared_plane import shared_control_plane

STATE_DIR = '/var/lib/k8s-mgmt-lab-bench-upgrade'
SUBNET = '10.254.225.0/24'
BRIDGE = 'k8slabub'
TAG = 'kub'
TARGET_GAP = 3.0
TARGET_RATIO = 1.1
TARGET_MEMBERS = 3
# The phases that must follow one another: each master's and each
# batch's drain, upgrade and wait.
_SERIAL = re.compile(r'^(Drain |Upgrade |Wait until .* Ready with kubelet )')
_DONE = re.compile(r'<== (.+): done in ([0-9.]+) s$')


class Timings(logging.Handler):
    """The driver's phase timings, from its own log lines."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.found = []

    def emit(self, record):
        found = _DONE.search(record.getMessage())
        if found:
            self.found.append((found.group(1), float(found.group(2))))

    def overhead(self, most=6):
        """The longest phases outside what must happen in order."""
        others = [(seconds, title) for title, seconds in self.found
                  if not _SERIAL.match(title)]
        return sorted(others, reverse=True)[:most]

    def serial_seconds(self):
        return sum(seconds for title, seconds in self.found
                   if _SERIAL.match(title))


class Probe(object):
    """The VIP's /readyz every 0.1 s, and etcd's member count every
    second, in threads."""

    def __init__(self, cluster, master):
        self.cluster = cluster
        self.master = master
        self.stop = threading.Event()
        self.answers = 0
        self.longest_gap = 0.0
        self.fewest_members = None

    def _vip(self):
        last = time.monotonic()
        while not self.stop.is_set():
            if self.cluster.api_answers(timeout=0.5):
                now = time.monotonic()
                self.longest_gap = max(self.longest_gap, now - last)
                last = now
                self.answers += 1
            self.stop.wait(0.1)
        self.longest_gap = max(self.longest_gap, time.monotonic() - last)

    def _etcd(self):
        while not self.stop.is_set():
            result = self.cluster.exec(self.master, [
                'etcdctl', '--endpoints=http://127.0.0.1:2379', '-w', 'json',
                'member', 'list'], check=False)
            try:
                count = len(json.loads(result.stdout)['members'])
            except (ValueError, KeyError):
                count = 0
            self.fewest_members = count if self.fewest_members is None \
                else min(self.fewest_members, count)
            self.stop.wait(1.0)

    def __enter__(self):
        self.threads = [threading.Thread(target=fn, daemon=True)
                        for fn in (self._vip, self._etcd)]
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stop.set()
        for thread in self.threads:
            thread.join()


def parse(argv):
    parser = argparse.ArgumentParser(prog='python -m benchmarks.upgrade')
    parser.add_argument('--upgrade-delay', type=float, default=10.0,
                        help='seconds a stand-in kubeadm upgrade takes '
                             '(default 10)')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    settings = manager.LabSettings(state_dir=STATE_DIR, subnet=SUBNET,
                                   bridge=BRIDGE, tag=TAG,
                                   upgrade_delay=args.upgrade_delay)
    with shared_control_plane():
        return _measure(args, settings)


def _measure(args, settings):
    lab = manager.Lab(settings)
    vip_failover.take_down(lab)
    timings = Timings()
    phase_logger = logging.getLogger('k8s_mgmt.engine.phase_log')
    phase_logger.setLevel(logging.INFO)
    try:
        lab.up('complex', workers=2)
        record = manager.read_record(settings)
        topology = lab_status.read_topology(record)
        if (len(topology.masters), len(topology.workers)) != (3, 2):
            raise RuntimeError('the lab has %d masters and %d workers, not '
                               '3 and 2' % (len(topology.masters),
                                            len(topology.workers)))
        lcm.instantiate(settings)
        record = manager.read_record(settings)
        cluster = vip_failover.Cluster(lab, settings, record)
        # The upgrade's phases only (not the instantiate's).
        phase_logger.addHandler(timings)
        started = time.monotonic()
        with Probe(cluster, topology.masters[0].name) as probe:
            lcm_upgrade.upgrade(settings, '1.36')
        wall = time.monotonic() - started
    except Exception as err:
        print('benchmark failed: %s: %s' % (type(err).__name__, err),
              file=sys.stderr)
        return 1
    finally:
        phase_logger.removeHandler(timings)
        conf.CONF.clear_override('state_dir', group='k8s_mgmt')
        vip_failover.take_down(lab)
    serial = timings.serial_seconds()
    ratio = wall / serial if serial else float('inf')
    print('upgrade 1.35 -> 1.36, 3 masters + 2 workers, kubeadm upgrade '
          '%.0f s each: wall %.1f s, in order %.1f s, ratio %.2f'
          % (args.upgrade_delay, wall, serial, ratio))
    print('VIP: %d answers, longest gap %.2f s; etcd: at least %s members'
          % (probe.answers, probe.longest_gap, probe.fewest_members))
    print('besides: %s' % '; '.join('%s %.1f s' % (title, seconds)
                                    for seconds, title in
                                    timings.overhead()))
    held = [('longest VIP gap <= %.1f s' % TARGET_GAP,
             probe.longest_gap <= TARGET_GAP),
            ('etcd keeps %d members' % TARGET_MEMBERS,
             probe.fewest_members == TARGET_MEMBERS),
            ('wall <= %.1f x in order' % TARGET_RATIO,
             ratio <= TARGET_RATIO)]
    for text, met in held:
        print('target: %s: %s' % (text, 'met' if met else 'NOT met'))
    return 0 if all(met for _, met in held) else 2


if __name__ == '__main__':
    sys.exit(main())
