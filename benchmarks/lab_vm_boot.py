"""How fast lab VMs boot: N VMs serially, then N in parallel (needs root).

A boot counts until the VM's sshd sends its banner on ip:22. Everything is
torn down afterwards, also when a boot fails.

    sudo .venv/bin/python benchmarks/lab_vm_boot.py [-n 5]
"""

import argparse
import statistics
import sys
import time
import uuid

from k8s_mgmt_lab.machines import cleanup
from k8s_mgmt_lab.machines import net
from k8s_mgmt_lab.machines import vm

STATE_DIR = '/var/lib/k8s-mgmt-lab-bench'
SUBNET = '10.254.235.0/24'
BRIDGE = 'k8slabb0'
TAG = 'k8b'


def specs(network, count, prefix):
    return [(str(uuid.uuid4()), '%s%d' % (prefix, i), ip)
            for i, ip in enumerate(network.free_ips([])[:count])]


def boot_serially(manager, network, count):
    times = []
    for vm_id, hostname, ip in specs(network, count, 'serial'):
        started = time.monotonic()
        manager.create(vm_id, hostname, ip)
        times.append(time.monotonic() - started)
    return times


def destroy_all(manager):
    started = time.monotonic()
    for info in manager.list():
        manager.destroy(info.vm_id)
    return time.monotonic() - started


def report(label, per_vm, total, count):
    print('%-28s total %7.3f s   per VM %6.3f s (mean)  %6.3f s (max)'
          % ('%s (N=%d)' % (label, count), total, statistics.mean(per_vm),
             max(per_vm)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('-n', '--count', type=int, default=5)
    args = parser.parse_args(argv)
    cleanup.teardown(STATE_DIR, tag=TAG, bridge=BRIDGE)
    network = net.LabNetwork(STATE_DIR, subnet=SUBNET, bridge=BRIDGE, tag=TAG)
    try:
        started = time.monotonic()
        network.up()
        manager = vm.VMManager(network, STATE_DIR)
        manager.ensure_image()  # one-time image layer, timed on its own
        print('%-28s total %7.3f s' % ('bridge + image layer',
                                       time.monotonic() - started))

        started = time.monotonic()
        per_vm = boot_serially(manager, network, args.count)
        report('serial boot', per_vm, time.monotonic() - started, args.count)
        print('%-28s total %7.3f s' % ('destroy', destroy_all(manager)))

        started = time.monotonic()
        manager.create_many(specs(network, args.count, 'parallel'))
        total = time.monotonic() - started
        # Boots overlap, so per VM here is total / N (throughput).
        report('parallel boot', [total / args.count], total, args.count)
        print('%-28s total %7.3f s' % ('destroy', destroy_all(manager)))
    finally:
        started = time.monotonic()
        cleanup.teardown(STATE_DIR, tag=TAG, bridge=BRIDGE)
        left = cleanup.find_leftovers(STATE_DIR, TAG, BRIDGE)
        print('%-28s total %7.3f s   leftovers: %s'
              % ('teardown', time.monotonic() - started,
                 'none' if not any(left.values()) else left))
    return 0


if __name__ == '__main__':
    sys.exit(main())
