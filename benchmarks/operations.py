"""Each LCM operation's time against the floor it cannot go below.

On the lab, the stand-ins' ``kubeadm init`` and ``kubeadm join`` take fixed
times (``--init-delay``, ``--join-delay``). An operation's **floor** is the
stand-in delays it must wait for, in the order they must happen, plus one
SSH handshake (measured on the lab: the nodes are reached in parallel).
A scale-in opens no SSH connection: its floor is Heat's answer and the
Kubernetes API requests it must make one after the other (cordon, list
the node's pods, delete the Node), each timed on the lab as a request of
its kind (two writes, one read). An HA floor
counts etcd's health interval: etcd takes a member only once the one
before it has been connected for 5 s, so with short joins the third
master's join waits for it (real etcd, not a stand-in).
The wall time is the driver's hooks alone (the cloud's VM boots are
Heat's, not ours). The SSH connections each node accepted during the
operation are counted from the VMs' own sshd logs, not by our code.

    sudo .venv/bin/python -m benchmarks.operations [--smoke]

Operations: instantiate, scale out 1, scale in 1, heal a worker on
``simple``; instantiate ``simple`` with ``--many-workers`` workers (16; the
joins run in parallel, so its floor is one init and one join); instantiate,
heal a master and heal the whole VNF on ``complex`` (3 masters, 2 workers).
``--smoke`` runs the 1-worker simple cluster with short delays (CI: the
figures are printed, no target is enforced). Each lab is torn down
afterwards, also after a failure or Ctrl-C. ``python -m benchmarks`` runs
these rows with the other benchmarks and prints one table.

Targets: wall/floor <= 1.2 per operation; at most one SSH connection per
node per operation.
"""

import argparse
import logging
import os
import resource
import sys
import time

import paramiko
import yaml

from k8s_mgmt import conf
from k8s_mgmt import kube
from k8s_mgmt import package as package_mod
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import drivers
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import lcm_heal
from k8s_mgmt_lab.conductor import lcm_scale
from k8s_mgmt_lab.conductor import status as lab_status
from k8s_mgmt_lab.kube import layer

from benchmarks import cpu
from benchmarks import report
from benchmarks import scale as scale_bench

STATE_DIR = '/var/lib/k8s-mgmt-lab-bench-ops'
SUBNET = '10.254.234.0/24'
BRIDGE = 'k8slabop'
TAG = 'lop'
SSHD_LOG = '/run/sshd.log'
MANY_WORKERS = 16
RTT_LABEL = 'k8s-mgmt.io/benchmark-write'
# The VMs' etcd runs as kubeadm runs it (etcd's own defaults: a new single
# member elects itself within 1 s, not the lab's 2.5 s, which is tuned for
# a test run loading both cores with many VMs).
ETCD_TIMING = 'kubeadm'

Row = report.Row
table = report.table


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class Lab(object):
    """One lab cluster and its measuring helpers."""

    def __init__(self, init_delay, join_delay):
        self.settings = manager.LabSettings(
            state_dir=STATE_DIR, subnet=SUBNET, bridge=BRIDGE, tag=TAG,
            init_delay=init_delay, join_delay=join_delay,
            etcd_timing=ETCD_TIMING)
        self.lab = manager.Lab(self.settings)

    def down(self):
        scale_bench.take_down(self.lab)

    def up(self, flavour, masters=None, workers=1):
        self.down()   # leftovers of an interrupted earlier run
        self.record = self.lab.up(flavour, masters=masters, workers=workers,
                                  max_workers=workers + 2)

    def topology(self):
        return lab_status.read_topology(lcm.read_lab(self.settings))

    def accepted(self):
        """{server id: SSH connections its sshd accepted so far}."""
        counts = {}
        for node in self.topology().all_nodes():
            proc = self.lab.vms.exec(node.server_id, ['cat', SSHD_LOG],
                                     check=False)
            counts[node.server_id] = sum(
                1 for line in (proc.stdout or '').splitlines()
                if line.startswith('Accepted '))
        return counts

    def handshake(self):
        """Seconds of one SSH connection and login to a lab VM (the best
        of three)."""
        node = self.topology().masters[0]
        best = None
        for _ in range(3):
            client = paramiko.SSHClient()
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
            started = time.monotonic()
            client.connect(node.ssh_ip, username='ubuntu',
                           password=self.settings.password,
                           look_for_keys=False, allow_agent=False,
                           timeout=10)
            took = time.monotonic() - started
            client.close()
            best = took if best is None else min(best, took)
        return best

    def heat_read(self):
        """Seconds of one read of the stack's VMs from the lab's Heat API
        (the best of three)."""
        return _best_of(3, self.topology)

    def api_round_trips(self):
        """Seconds of one Kubernetes API read (list the nodes) and of one
        write (a label on the first master's Node, a new value each time:
        an unchanged object is not written), on an open connection with
        the VIM registered at instantiate; the best of five each, after a
        first request that opens the connection. The label is removed."""
        path = os.path.join(lcm.driver_state_dir(self.settings),
                            manager.read_record(self.settings)[
                                'vnf_instance_id'],
                            'vim_config.yaml')
        with open(path) as src:
            vim = yaml.safe_load(src)
        node = self.topology().masters[0].name
        values = iter(range(1000))
        with kube.ClusterAPI(vim['auth_url'], vim['bearer_token'],
                             vim['ssl_ca_cert']) as api:
            api.nodes()
            read = _best_of(5, api.nodes)
            write = _best_of(5, lambda: api.label_node(
                node, {RTT_LABEL: str(next(values))}))
            api.label_node(node, {RTT_LABEL: None})
            return read, write


def _best_of(times, fn):
    best = None
    for _ in range(times):
        started = time.monotonic()
        fn()
        took = time.monotonic() - started
        best = took if best is None else min(best, took)
    return best


def most_accepted(before, after):
    """The most SSH connections one node accepted between two counts."""
    return max([after[s] - before.get(s, 0) for s in after] or [0])


def measure(lab, name, floor, run):
    """Run ``run`` (returns the driver's seconds) and make its Row."""
    before = lab.accepted()
    wall = run()
    row = Row(name, wall, floor, most_accepted(before, lab.accepted()),
              peak_rss_mb())
    print('  %-34s %6.2f s (floor %5.2f s)  ssh/node %d'
          % (name, row.wall, row.floor, row.ssh_per_node), flush=True)
    return row


def instantiate(lab):
    result = lcm.instantiate(lab.settings)
    return result.seconds_start + result.seconds_end


def instantiate_with_cpu(lab):
    """instantiate(lab), and the CPU the machine spent during its hooks
    (benchmarks.cpu.Usage): the driver is loaded as lcm.instantiate would,
    its hooks bracketed by CPU samples."""
    pkg = lcm.package_dir(lab.settings)
    package_mod.build(output_dir=pkg)
    driver = cpu.HookCPU(drivers.load(
        pkg, manager.read_record(lab.settings)['flavour']))
    result = lcm.instantiate(lab.settings, driver=driver)
    return result.seconds_start + result.seconds_end, driver.usage


def heal(lab, vnfc_id):
    """The driver's seconds healing ``vnfc_id`` (None: the whole VNF)."""
    result = lcm_heal.heal(lab.settings, vnfc_id=vnfc_id)
    return result.seconds_start + result.seconds_end


def simple_rows(lab, init, join):
    lab.up('simple', workers=1)
    hs = lab.handshake()
    rows = []
    rows.append(measure(lab, 'instantiate simple (1 worker)',
                        report.instantiate_floor(init, join, hs),
                        lambda: instantiate(lab)))

    def scale(kind):
        return lcm_scale.scale(lab.settings, kind).seconds_driver
    rows.append(measure(lab, 'scale out 1 worker', join + hs,
                        lambda: scale('SCALE_OUT')))
    # Scale-in opens no SSH connection: its floor is its API requests.
    floor_in = report.scale_in_floor(lab.heat_read(),
                                     *lab.api_round_trips())
    rows.append(measure(lab, 'scale in 1 worker', floor_in,
                        lambda: scale('SCALE_IN')))

    worker = lab.topology().workers[0]
    rows.append(measure(lab, 'heal a worker', join + hs,
                        lambda: heal(lab, worker.vnfc_id)))
    return rows, hs


def complex_rows(lab, init, join):
    lab.up('complex', masters=3, workers=2)
    hs = lab.handshake()
    rows = []

    # The other masters join one at a time (etcd); the workers can join
    # meanwhile.
    whole = report.instantiate_floor(init, join, hs, masters=3, workers=2)
    rows.append(measure(lab, 'instantiate complex (3+2)', whole,
                        lambda: instantiate(lab)))
    settle_etcd(time.monotonic())
    master = lab.topology().masters[-1]
    rows.append(measure(lab, 'heal a master', join + hs,
                        lambda: heal(lab, master.vnfc_id)))
    rows.append(measure(lab, 'heal the whole VNF', whole,
                        lambda: heal(lab, None)))
    return rows


def settle_etcd(since):
    """Let the cluster built at ``since`` reach what an operator's master
    heal finds: etcd members connected for longer than etcd's health
    interval. Just after the last join etcd refuses any member removal
    ("unhealthy cluster", its strict reconfiguration check) for up to that
    long; a heal measured then would time the benchmark's haste, not the
    driver. A wait for time itself, not for a condition (etcd shows no
    "connected since")."""
    left = since + report.ETCD_HEALTH_INTERVAL - time.monotonic()
    if left > 0:
        time.sleep(left)


def many_rows(lab, workers, init, join, before=None):
    """Instantiate ``simple`` with ``workers`` workers: the joins run in
    parallel, so the floor is the 1-worker one. ``before(lab)`` runs on
    the fresh lab first (the wrong-password check of ``python -m
    benchmarks`` touches no VM); its result is returned with the Row."""
    lab.up('simple', workers=workers)
    hs = lab.handshake()
    first = before(lab) if before is not None else None
    row = measure(lab, 'instantiate simple (%d workers)' % workers,
                  report.instantiate_floor(init, join, hs, workers=workers),
                  lambda: instantiate(lab))
    return row, first


def targets(rows):
    """(target, holds) pairs."""
    return report.operation_targets(rows)


def prepare(verbose=False):
    """Logging and the driver's configuration for a lab benchmark."""
    if verbose:
        logging.basicConfig(
            level=logging.INFO,
            format='%(relativeCreated)8.0f %(name)s: %(message)s')
    # The lab VMs cannot reach the Internet: the image's CNI manifest.
    conf.CONF.set_override('cni_manifest', layer.CNI_MANIFEST,
                           group='k8s_mgmt')


def run_alone(verbose, init_delay, join_delay, measure, show):
    """A part run on its own: ``measure(lab)`` on a lab with these delays,
    then ``show(result)`` prints it and returns the targets held. Returns
    the exit status (1: the measurement failed)."""
    prepare(verbose)
    lab = Lab(init_delay, join_delay)
    try:
        result = measure(lab)
    except Exception as err:
        print('benchmark failed: %s: %s' % (type(err).__name__, err),
              file=sys.stderr)
        return 1
    held = show(result)
    print(report.target_lines(held))
    return report.exit_status(held)


def add_delay_args(parser):
    """--init-delay and --join-delay (3 s and 2 s by default)."""
    parser.add_argument('--init-delay', type=float, default=3.0,
                        help='seconds a stand-in kubeadm init takes')
    parser.add_argument('--join-delay', type=float, default=2.0,
                        help='seconds a stand-in kubeadm join takes')


def parse(argv):
    parser = argparse.ArgumentParser(prog='python -m benchmarks.operations')
    add_delay_args(parser)
    parser.add_argument('--many-workers', type=int, default=MANY_WORKERS,
                        help='workers of the large simple instantiate '
                             '(0: skip it)')
    parser.add_argument('--smoke', action='store_true',
                        help='the simple cluster only, short delays, no '
                             'target enforced (CI)')
    parser.add_argument('--verbose', action='store_true',
                        help='log each phase and its time')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    prepare(args.verbose)
    if args.smoke:
        args.init_delay, args.join_delay = 0.5, 0.5
    lab = Lab(args.init_delay, args.join_delay)
    try:
        rows, hs = simple_rows(lab, args.init_delay, args.join_delay)
        if not args.smoke:
            if args.many_workers:
                rows.append(many_rows(lab, args.many_workers,
                                      args.init_delay, args.join_delay)[0])
            rows += complex_rows(lab, args.init_delay, args.join_delay)
    except Exception as err:
        print('benchmark failed: %s: %s' % (type(err).__name__, err),
              file=sys.stderr)
        return 1
    finally:
        lab.down()
    print()
    print('kubeadm init %.1f s, join %.1f s, SSH handshake %.2f s'
          % (args.init_delay, args.join_delay, hs))
    print(table(rows))
    held = targets(rows)
    print(report.target_lines(held))
    return report.exit_status(held, smoke=args.smoke)


if __name__ == '__main__':
    sys.exit(main())
