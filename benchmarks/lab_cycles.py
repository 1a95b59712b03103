"""``lab up`` -> ``lab instantiate`` -> ``lab down`` with the lab's own
control plane (real Tacker), many times in a row, as an operator types
them: does the lab come up, build a cluster through Tacker and go away
every time? (issue 46: 20 in a row, no failure; needs root).

    sudo .venv/bin/python -m benchmarks.lab_cycles [--count 20]
        [--flavour simple] [--warm-plane DIR]

Each cycle runs the ``k8s-mgmt lab`` commands in child processes and
times them. Without ``--warm-plane`` each lab starts and stops a control
plane of its own (cold: databases made, every service started); with it
the labs borrow that plane (``K8S_MGMT_LAB_WARM_PLANE``, set up by the
first cycle, left running at the end: stop it with ``k8s-mgmt lab
control-plane --dir DIR down``). A failed command ends its cycle: the
lab is taken down, the first lines of the failure printed, and the next
cycle starts. The closing lines give the count of failed cycles and the
median time of each command. Exit status 0 when no cycle failed, else 1.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

STATE_DIR = '/var/lib/k8s-mgmt-lab-bench-cycles'
SUBNET = '10.254.239.0/24'
BRIDGE = 'k8slabcy'
TAG = 'lcy'
TIMEOUT = 900
STEPS = ('up', 'instantiate', 'down')


def lab(*args, env=None):
    """``k8s-mgmt lab ARGS`` on the benchmark's lab; the finished
    process."""
    return subprocess.run(
        [sys.executable, '-m', 'k8s_mgmt', 'lab', '--state-dir', STATE_DIR,
         '--bridge', BRIDGE, '--tag', TAG] + list(args),
        capture_output=True, text=True, timeout=TIMEOUT, env=env)


def one_cycle(flavour, env):
    """{step: seconds} of one cycle, and the failure (None when every
    command succeeded)."""
    commands = {'up': ('up', '--flavour', flavour, '--subnet', SUBNET,
                       '--own-control-plane'),
                'instantiate': ('instantiate', '--quiet'),
                'down': ('down',)}
    times = {}
    for step in STEPS:
        began = time.monotonic()
        proc = lab(*commands[step], env=env)
        times[step] = time.monotonic() - began
        if proc.returncode:
            if step != 'down':
                lab('down', env=env)
            tail = ' | '.join(proc.stderr.strip().splitlines()[-3:])
            return times, '%s exited %d: %s' % (
                step, proc.returncode, tail[-600:])
    return times, None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--count', type=int, default=20)
    parser.add_argument('--flavour', default='simple')
    parser.add_argument('--warm-plane', metavar='DIR')
    args = parser.parse_args(argv)
    env = dict(os.environ)
    env.pop('K8S_MGMT_LAB_CONTROL_PLANE', None)
    if args.warm_plane:
        env['K8S_MGMT_LAB_WARM_PLANE'] = os.path.abspath(args.warm_plane)
    else:
        env.pop('K8S_MGMT_LAB_WARM_PLANE', None)
    lab('down', env=env)
    plane = 'borrowing %s' % args.warm_plane if args.warm_plane else \
        'a control plane of its own each'
    print('%d cycles of lab up / instantiate / down, %s, %s'
          % (args.count, args.flavour, plane))
    print('%5s %8s %12s %8s  %s' % (
        'cycle', 'up s', 'instantiate s', 'down s', 'result'))
    seen = {step: [] for step in STEPS}
    failed = 0
    for number in range(1, args.count + 1):
        times, failure = one_cycle(args.flavour, env)
        for step, seconds in times.items():
            seen[step].append(seconds)
        failed += failure is not None
        print('%5d %8s %12s %8s  %s' % (
            number, *('%.1f' % times[s] if s in times else '-'
                      for s in STEPS), failure or 'ok'), flush=True)
    print('failed cycles: %d of %d' % (failed, args.count))
    print('median: %s' % ', '.join(
        '%s %.1f s' % (step, statistics.median(seen[step]))
        for step in STEPS if seen[step]))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
