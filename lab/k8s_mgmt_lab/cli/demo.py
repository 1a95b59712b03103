"""``k8s-mgmt demo``: an HA cluster built on a fresh lab through Tacker,
shown, terminated, torn down.

Runs the same code paths an operator would: the real control plane
(MariaDB, RabbitMQ, Keystone, Heat, Barbican, tacker-server and
tacker-conductor with the driver installed from a wheel) started, or used
as it runs, in its own directory, so that a second demo starts it warm;
``lab up`` (through the CLI's own parser, so every lab option keeps its
default) with that plane as the lab's own, which registers the lab's
OpenStack as Tacker's default VIM; ``lab instantiate`` through Tacker's v1
REST API (the package onboarded, the instance created and instantiated,
the operation occurrence polled, the driver's lines shown from the
conductor's log); real Heat's events of Tacker's stack through
python-openstackclient; ``lab terminate`` through Tacker; then ``lab
down`` in a ``finally`` - also after a failure or Ctrl-C - and the
control plane stopped if the demo started it.

The demo imports the lab's modules when it runs: ``k8s-mgmt --help``
builds its parser too.
"""

import argparse
import os
import signal
import subprocess
import time

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt_lab import settings as settings_mod
from k8s_mgmt_lab.cli import lab as lab_cli
from k8s_mgmt_lab.cli import lab_control_plane
from k8s_mgmt_lab.cli import lab_tacker
from k8s_mgmt_lab.cli import reporting
from k8s_mgmt_lab.errors import LabError

DEFAULT_STATE_DIR = settings_mod.DEFAULT_STATE_DIR + '-demo'
DEFAULT_BRIDGE = 'k8sdemo0'
DEFAULT_TAG = 'k8dm'
FLAVOUR = 'complex'

# Real Heat's last events of the stack that the demo prints.
EVENTS_SHOWN = 8


def control_plane_parts():
    """The control plane's services with the versions that run."""
    from k8s_mgmt_lab.openstack import control_plane
    return ('Tacker %s (tacker-server and tacker-conductor): the v1 API, the '
            'conductor running the LCM and our driver, its OpenStack infra '
            'driver creating the stack' % control_plane.version(
                'tacker-server'),
            'Keystone %s (identity, the catalog, tokens)'
            % control_plane.version('keystone'),
            'Heat %s (heat-api and heat-engine): the stack from the '
            'package\'s BaseHOT, as Tacker asks for it'
            % control_plane.version('heat-engine'),
            'Barbican %s: the key of the Kubernetes VIM the driver registers'
            % control_plane.version('barbican-api'),
            'MariaDB %s and RabbitMQ %s under them'
            % (control_plane.version('mariadb'),
               control_plane.version('rabbitmq')))


# What runs for real in the demo besides the control plane (the stand-ins
# are listed by the lab).
REAL_PARTS = (
    'the driver (mgmt-drivers-kubernetes) inside tacker-conductor, '
    'installed from a wheel, called by Tacker itself',
    'python-openstackclient with python-tackerclient (the default VIM, '
    'Heat\'s events)',
    'OpenSSH in every VM; the driver\'s SSH layer with host-key pinning',
    'install_k8s_cluster.sh and configure_lb.sh as shipped in the package',
    'HAProxy and keepalived (VRRP VIP) on the masters; the etcd cluster',
    'the kubernetes Python client reading nodes through the API endpoint',
)


def register(subparsers):
    demo = subparsers.add_parser(
        'demo', help='build an HA Kubernetes cluster on a lab, show it, '
                     'tear it down',
        description='Bring up a "%s" lab (3 masters behind a VIP) that runs '
                    'Tacker, instantiate it through Tacker\'s API, print the '
                    'cluster and which parts were real, terminate it through '
                    'Tacker and take the lab down again, whatever happens. '
                    'Needs root.' % FLAVOUR)
    demo.add_argument('--state-dir', default=DEFAULT_STATE_DIR,
                      help='the demo lab\'s state dir (default: '
                           '%(default)s)')
    demo.add_argument('--subnet', default=settings_mod.DEFAULT_SUBNET,
                      help='lab subnet, used by nothing else on this '
                           'machine (default: %(default)s)')
    demo.add_argument('--bridge', default=DEFAULT_BRIDGE)
    demo.add_argument('--tag', default=DEFAULT_TAG)
    demo.add_argument('--control-plane', metavar='DIR',
                      default=lab_control_plane.DEFAULT_DIR,
                      help='the control plane\'s state dir; kept between '
                           'demos so that it starts warm, stopped after the '
                           'demo unless it was running before (default: '
                           '%(default)s)')
    demo.add_argument('--request', metavar='FILE',
                      help='InstantiateVnfRequest body of the "%s" flavour '
                           '(default: the sample, "k8s-mgmt package request '
                           '%s")' % (FLAVOUR, FLAVOUR))
    demo.set_defaults(func=cmd_demo)


def _log_path(args):
    # Outside the state dir: "lab down" removes that, and the details of a
    # failure are wanted after it.
    return args.state_dir.rstrip('/') + '.demo.log'


def _lab_args(args, *verb):
    """``k8s-mgmt lab ... VERB`` parsed by the lab's own parser."""
    parser = argparse.ArgumentParser(prog='k8s-mgmt')
    lab_cli.register(parser.add_subparsers())
    argv = ['lab', '--state-dir', args.state_dir, '--bridge', args.bridge,
            '--tag', args.tag] + list(verb)
    if verb[0] == 'up':
        argv += ['--control-plane', args.control_plane, '--own-control-plane']
    return parser.parse_args(argv)


def _print_parts(stand_ins):
    print('real parts:')
    for part in control_plane_parts() + REAL_PARTS:
        print('  - %s' % part)
    print('stand-ins:')
    for name in sorted(stand_ins):
        print('  - %s: %s' % (name, stand_ins[name]))


def _start_plane(args):
    """The control plane up; whether the demo started it."""
    from k8s_mgmt_lab.openstack import control_plane
    from k8s_mgmt_lab.openstack import lab_region
    plane = control_plane.ControlPlane(args.control_plane, tacker=True)
    if all(found['alive'] for found in plane.status().values()):
        print('==> control plane: running in %s' % args.control_plane)
        return False
    print('==> control plane: starting in %s' % args.control_plane)
    started = time.monotonic()
    region = lab_region.LabRegion(args.state_dir, args.tag,
                                  kept_plane=args.control_plane)
    region.start_plane()
    print('    up in %.1f s' % (time.monotonic() - started))
    return True


def _print_events(settings):
    """Real Heat's last events of Tacker's stack, through
    python-openstackclient as the lab's admin."""
    from k8s_mgmt_lab.openstack import lab_region
    record = settings_mod.read_record(settings)
    print('==> openstack stack event list %s (the last %d)'
          % (record['stack_name'], EVENTS_SHOWN))
    done = lab_region.client_run(
        record, ['stack', 'event', 'list', record['stack_name'],
                 '--sort', 'event_time:desc', '--limit', str(EVENTS_SHOWN)],
        stdout=subprocess.PIPE)
    for line in done.stdout.decode(errors='replace').splitlines():
        print('    ' + line)


def _through_tacker(what, settings, call, log_path):
    """One operation through Tacker, the driver's lines shown; its
    report."""
    from k8s_mgmt_lab.tacker_lcm import logs
    from k8s_mgmt_lab.tacker_lcm import progress
    with reporting.reported(what, settings, log_path):
        with progress.ConductorProgress(
                logs.driver_logs(settings.state_dir)):
            outcome = call(settings)
        return lab_tacker.report_of(settings, outcome)


def _run(args, settings):
    from k8s_mgmt_lab.conductor import status as status_mod
    from k8s_mgmt_lab.tacker_lcm import operations
    print('==> lab up: flavour %s, its own control plane in %s'
          % (FLAVOUR, args.control_plane))
    request = ['--request', args.request] if args.request else []
    up = _lab_args(args, 'up', '--flavour', FLAVOUR, '--subnet',
                   args.subnet, *request)
    started = time.monotonic()
    up.func(up)
    print('    lab up in %.1f s' % (time.monotonic() - started))
    print('    Tacker\'s default VIM: the lab\'s OpenStack')
    print('==> instantiate through Tacker\'s v1 API')
    report = _through_tacker('instantiate', settings,
                             operations.instantiate, _log_path(args))
    try:
        lab = status_mod.lab_status(settings, check_ssh=False)
    except LabError as err:
        raise UserError('cannot read the lab after instantiate: %s' % err)
    print('\n'.join(lab_tacker.summary_lines(report)))
    print('VIP %s' % (lab.get('vip') or '-'))
    _print_events(settings)
    _print_parts(lab.get('stand_ins') or status_mod.STAND_INS)
    nodes = (report.get('cluster') or {}).get('nodes') or []
    not_ready = [n['name'] for n in nodes if not n['ready']]
    if not nodes or not_ready:
        raise UserError('cluster not Ready: %s'
                        % (', '.join(not_ready) or 'no nodes'))
    print('==> terminate through Tacker\'s v1 API')
    done = _through_tacker('terminate', settings, operations.terminate,
                           _log_path(args))
    print('    %s %s in %.1f s' % (done['operation'],
                                   done['operation_state'], done['seconds']))


def _take_down(args, stop_plane):
    from k8s_mgmt_lab.openstack import control_plane
    # A second Ctrl-C must not leave namespaces, mounts or services behind.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        print('==> lab down')
        started = time.monotonic()
        down = _lab_args(args, 'down')
        down.func(down)
        print('    down in %.1f s' % (time.monotonic() - started))
        if stop_plane:
            print('==> control plane: stopping (its data stays in %s)'
                  % args.control_plane)
            started = time.monotonic()
            control_plane.ControlPlane(args.control_plane).down()
            print('    stopped in %.1f s' % (time.monotonic() - started))
    finally:
        signal.signal(signal.SIGINT, previous)


def cmd_demo(args):
    settings = settings_mod.LabSettings(state_dir=args.state_dir)
    if settings_mod.read_record(settings) is not None:
        # Not ours to take down.
        raise UserError('a lab is already up in %s; take it down with '
                        '"k8s-mgmt lab --state-dir %s down" or pick another '
                        '--state-dir' % (args.state_dir, args.state_dir))
    log_path = _log_path(args)
    if os.path.exists(log_path):
        os.unlink(log_path)  # the details of an earlier run's failure
    reporting.show_progress(quiet=False)
    began = time.monotonic()
    started_plane = False
    try:
        started_plane = _start_plane(args)
        _run(args, settings)
    finally:
        _take_down(args, started_plane)
    print('demo finished in %.0f s: the HA cluster was built through '
          'Tacker, checked Ready, terminated and removed'
          % (time.monotonic() - began))
    return 0
