"""The lab daemon: builds a lab, serves its stand-in APIs (Nova, Neutron,
Cinder, Glance), and waits for SIGTERM.

``k8s-mgmt lab up`` starts it detached and reads one JSON line from the
status pipe (``--status-fd``): ``{"ready": true}`` or ``{"error": "..."}``.
After an error the daemon has already removed what it made.
"""

import argparse
import json
import logging
import os
import signal
import sys
import threading

from k8s_mgmt_lab import manager
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.tacker_lcm import vim as tacker_vim


def _report(fd, message):
    if fd is None:
        return
    with os.fdopen(fd, 'w') as pipe:
        pipe.write(json.dumps(message) + '\n')


def parse(argv):
    parser = argparse.ArgumentParser(prog='k8s-mgmt-lab-daemon')
    parser.add_argument('--state-dir', required=True)
    parser.add_argument('--subnet', required=True)
    parser.add_argument('--bridge', required=True)
    parser.add_argument('--tag', required=True)
    parser.add_argument('--compute-hosts', type=int, required=True)
    parser.add_argument('--request', required=True,
                        help='InstantiateVnfRequest body (JSON file, or - '
                             'for standard input)')
    parser.add_argument('--masters', type=int)
    parser.add_argument('--workers', type=int)
    parser.add_argument('--max-workers', type=int)
    parser.add_argument('--init-delay', type=float, default=0.0)
    parser.add_argument('--join-delay', type=float, default=0.0)
    parser.add_argument('--etcd-timing', default='lab')
    parser.add_argument('--control-plane',
                        help='state dir of a running control plane the '
                             'lab shares (default: its own)')
    parser.add_argument('--own-control-plane', action='store_true')
    parser.add_argument('--conductors', type=int, default=1)
    parser.add_argument('--api', choices=manager.APIS, default='v1')
    parser.add_argument('--no-stack', action='store_true',
                        help='build no stack: a client POSTs it')
    parser.add_argument('--status-fd', type=int)
    return parser.parse_args(argv)


def failure(err, log_path):
    """What ``lab up`` says of ``err``: a LabError's own words (the lab
    refused something, naming it); anything else is a defect of the lab,
    named with its type and the log that holds its traceback."""
    if isinstance(err, LabError):
        return str(err)
    text = str(err)
    return '%s%s (a fault of the lab itself; its traceback is in %s)' % (
        type(err).__name__, ': ' + text if text else '', log_path)


def main(argv=None):
    args = parse(argv)
    settings = manager.LabSettings(
        state_dir=args.state_dir, subnet=args.subnet, bridge=args.bridge,
        tag=args.tag, compute_hosts=args.compute_hosts,
        init_delay=args.init_delay, join_delay=args.join_delay,
        etcd_timing=args.etcd_timing, control_plane=args.control_plane,
        own_control_plane=args.own_control_plane,
        conductors=args.conductors, api=args.api)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format='%(asctime)s %(levelname)s %(name)s '
                               '%(message)s')
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    lab = manager.Lab(settings)
    try:
        if args.request == '-':
            request = json.load(sys.stdin)
        else:
            with open(args.request) as handle:
                request = json.load(handle)
        lab.up(request, args.masters, args.workers, args.max_workers,
               stack=not args.no_stack)
        if lab.region.tacker:
            tacker_vim.register_default(settings)
    except BaseException as err:  # report, then leave nothing behind
        if not isinstance(err, LabError):
            logging.exception('lab up failed')
        try:
            lab.down()
        finally:
            _report(args.status_fd, {'error': failure(
                err, manager.daemon_log(settings))})
        return 1
    _report(args.status_fd, {'ready': True})
    stop.wait()
    lab.stop_api()
    return 0


if __name__ == '__main__':
    sys.exit(main())
