"""Scale out one worker on a cluster of 1 and of 8 workers: same cost?

On the lab, with the stand-ins' ``kubeadm join`` taking a fixed time
(``--join-delay``, 2 s by default), a scale-out that touches only the new
node and one master costs the same whatever the cluster's size; one that
re-touches every node (kubespray's complaint) grows with it. Measured: the
driver's ``scale_end`` (the cloud's VM boot is reported apart), the median
of ``--repeat`` scale-outs per cluster. Target: ratio at most 1.15.

Runs the lab in this process (needs root); each lab is torn down afterwards,
also after a failure or Ctrl-C.

    sudo .venv/bin/python -m benchmarks.scale [--join-delay 2] [--repeat 3]
"""

import argparse
import signal
import statistics
import sys

from k8s_mgmt import conf
from k8s_mgmt.cli.errors import UserError
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import lcm_scale
from k8s_mgmt_lab.kube import layer

STATE_DIR = '/var/lib/k8s-mgmt-lab-bench-scale'
SUBNET = '10.254.222.0/24'
BRIDGE = 'k8slabbs'
TAG = 'k8y'
TARGET_RATIO = 1.15
ASPECT = 'worker_instance'


def take_down(lab):
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        lab.down()
    finally:
        signal.signal(signal.SIGINT, previous)


def one_cluster(workers, join_delay, repeat):
    """scale_end seconds of ``repeat`` one-worker scale-outs."""
    settings = manager.LabSettings(state_dir=STATE_DIR, subnet=SUBNET,
                                   bridge=BRIDGE, tag=TAG,
                                   join_delay=join_delay)
    lab = manager.Lab(settings)
    take_down(lab)  # leftovers of an interrupted earlier run
    try:
        # 8 workers + repeats is beyond the sample BaseHOT's max_size 5.
        lab.up('simple', workers=workers, max_workers=workers + repeat)
        lcm.instantiate(settings)
        driver_times, cloud_times = [], []
        for _ in range(repeat):
            result = lcm_scale.scale(settings, 'SCALE_OUT', ASPECT, 1)
            driver_times.append(result.seconds_driver)
            cloud_times.append(result.seconds_cloud)
            print('  %d worker(s) + 1: scale_end %.2f s (cloud %.2f s)'
                  % (workers + len(driver_times) - 1,
                     result.seconds_driver, result.seconds_cloud),
                  flush=True)
        return statistics.median(driver_times), statistics.median(cloud_times)
    finally:
        take_down(lab)


def parse(argv):
    parser = argparse.ArgumentParser(prog='python -m benchmarks.scale')
    parser.add_argument('--join-delay', type=float, default=2.0,
                        help='seconds a stand-in kubeadm join takes')
    parser.add_argument('--workers', type=int, nargs=2, default=[1, 8],
                        metavar=('FEW', 'MANY'))
    parser.add_argument('--repeat', type=int, default=3,
                        help='scale-outs per cluster (the median counts)')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    few, many = args.workers
    # The lab VMs cannot reach the Internet: the image's CNI manifest.
    conf.CONF.set_override('cni_manifest', layer.CNI_MANIFEST,
                           group='k8s_mgmt')
    results = {}
    try:
        for workers in (few, many):
            end, cloud = one_cluster(workers, args.join_delay, args.repeat)
            results[workers] = end
            print('simple, %d worker(s): scale out 1 worker: scale_end '
                  '%.2f s (median of %d; cloud %.2f s)'
                  % (workers, end, args.repeat, cloud), flush=True)
    except (UserError, Exception) as err:
        print('benchmark failed: %s: %s' % (type(err).__name__, err),
              file=sys.stderr)
        return 1
    ratio = results[many] / results[few]
    print('join delay %.1f s; %d workers / %d worker(s): ratio %.2f '
          '(target <= %.2f: %s)'
          % (args.join_delay, many, few, ratio, TARGET_RATIO,
             'met' if ratio <= TARGET_RATIO else 'NOT met'))
    return 0 if ratio <= TARGET_RATIO else 2


if __name__ == '__main__':
    sys.exit(main())
