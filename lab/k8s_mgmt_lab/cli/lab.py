"""``k8s-mgmt lab up|status|down``: the OpenStack-shaped sandbox.

Every ``k8s-mgmt lab`` command line builds this parser, so it starts
light: a verb imports the lab's modules it needs when it runs.
"""

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt_lab import settings as settings_mod
from k8s_mgmt_lab.cli import lab_control_plane
from k8s_mgmt_lab.cli import lab_heal
from k8s_mgmt_lab.cli import lab_lcm
from k8s_mgmt_lab.cli import lab_plan
from k8s_mgmt_lab.cli import lab_scale
from k8s_mgmt_lab.cli import lab_upgrade
from k8s_mgmt_lab.cli import lab_tools
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.openstack import tacker_conductors

# The first lab up on a machine builds the control plane's virtualenvs
# (about 5 minutes) before it starts anything.
UP_DEADLINE = 1200.0
DOWN_DEADLINE = 30.0


def register(subparsers):
    lab = subparsers.add_parser('lab', help='the lab: namespace VMs with '
                                'sshd behind Keystone and Heat APIs')
    lab.add_argument('--state-dir', default=settings_mod.DEFAULT_STATE_DIR,
                     help='where the lab keeps its state (default: '
                          '%(default)s)')
    lab.add_argument('--bridge',
                     help='lab bridge name (default: %s; "down" reads it '
                          'from the lab\'s registry)'
                          % settings_mod.DEFAULT_BRIDGE)
    lab.add_argument('--tag',
                     help='prefix of the lab\'s namespaces and links '
                          '(default: %s)' % settings_mod.DEFAULT_TAG)
    verbs = lab.add_subparsers(dest='lab_command', metavar='VERB')
    up = verbs.add_parser('up', help='create the lab VMs and stack')
    up.add_argument('--flavour', choices=settings_mod.FLAVOURS,
                    help='build the stack for this flavour\'s sample request '
                         '(needed unless --request is given)')
    up.add_argument('--request', metavar='FILE',
                    help='InstantiateVnfRequest body (JSON) whose flavour, '
                         'networks and UserData parameters the stack is '
                         'built from; later LCM verbs use it too (default: '
                         'the flavour\'s sample, "k8s-mgmt package request '
                         'FLAVOUR")')
    up.add_argument('--masters', type=_positive,
                    help='masters (default: the flavour\'s minimum)')
    up.add_argument('--workers', type=_non_negative,
                    help='workers (default: the flavour\'s minimum)')
    up.add_argument('--max-workers', type=_positive,
                    help='max_size of the worker group (default: the '
                         'BaseHOT\'s, 5 in the sample, raised to --workers '
                         'when that is larger)')
    up.add_argument('--subnet', default=settings_mod.DEFAULT_SUBNET)
    up.add_argument('--compute-hosts', type=_positive, default=4)
    up.add_argument('--init-delay', type=_seconds, default=0.0,
                    help='seconds the kubeadm init stand-in takes, to model '
                         'a real init (default 0)')
    up.add_argument('--join-delay', type=_seconds, default=0.0,
                    help='seconds the kubeadm join stand-in takes, to model '
                         'a real join (default 0)')
    up.add_argument('--etcd-timing', choices=('lab', 'kubeadm'),
                    default='lab',
                    help='etcd\'s raft timing in the VMs: "lab" (default: '
                         'heartbeat 250 ms, election 2.5 s, for a loaded '
                         'machine) or "kubeadm" (etcd\'s defaults, as '
                         'kubeadm runs it: 100 ms, 1 s)')
    up.add_argument('--no-stack', action='store_true',
                    help='network, package, Keystone, Heat and the stand-in '
                         'APIs only: no stack and no VM, for a client that '
                         'creates the stack through the Heat API (Tacker)')
    up.add_argument('--control-plane', metavar='DIR',
                    help='state dir of a running control plane (k8s-mgmt '
                         'lab control-plane up) to share with other labs: '
                         'the lab gets its own region and project in it '
                         '(default: $%s, else the lab starts a control '
                         'plane of its own)' % settings_mod.SHARED_PLANE_ENV)
    up.add_argument('--own-control-plane', action='store_true',
                    help='start a control plane of the lab\'s own even when '
                         'one is shared. A lab with its own plane runs '
                         'Tacker (its stand-ins are in RegionOne, where '
                         'Tacker\'s v1 infra driver, which names no region, '
                         'finds them) and its LCM verbs go through Tacker\'s '
                         'API. With --control-plane DIR: the plane in DIR, '
                         'the lab\'s alone while it is up, kept running '
                         'after "lab down" so that the next lab starts warm; '
                         'without it, the plane $%s names is so borrowed '
                         'when no lab that is up holds it'
                         % settings_mod.WARM_PLANE_ENV)
    up.add_argument('--conductors', type=_conductor_count, metavar='N',
                    help='with --own-control-plane: run N tacker-conductors '
                         '(1 to %d, default 1), each as if on a host of its '
                         'own: its own Tacker host name, log and driver '
                         'state dir; one message bus, tacker.conf and state '
                         'key' % tacker_conductors.MAX_CONDUCTORS)
    up.add_argument('--api', choices=settings_mod.APIS, default='v1',
                    help='with --own-control-plane: the Tacker VNF LCM API '
                         'the lab\'s verbs use, v1 (/vnflcm/v1, the '
                         'driver\'s entry points) or v2 (/vnflcm/v2, the '
                         'package\'s v2 script): the package is built for '
                         'it (default: v1)')
    up.set_defaults(func=cmd_up)
    st = verbs.add_parser('status', help='show the lab')
    st.add_argument('--json', action='store_true', help='JSON output')
    st.set_defaults(func=cmd_status)
    down = verbs.add_parser('down', help='remove everything the lab made')
    down.set_defaults(func=cmd_down)
    openrc = verbs.add_parser(
        'openrc', help='print an openrc for the lab\'s admin, project and '
                       'region (python-openstackclient)')
    openrc.set_defaults(func=cmd_openrc)
    client = verbs.add_parser(
        'openstack', help='run python-openstackclient as the lab\'s admin '
                          'in its project and region, e.g. "openstack '
                          'stack event list k8s-lab-simple"')
    client.add_argument('words', nargs=argparse.REMAINDER,
                        help='the openstack command\'s arguments')
    client.set_defaults(func=cmd_openstack)
    lab_lcm.register(verbs)         # instantiate
    lab_heal.register(verbs)        # heal and kill
    lab_scale.register(verbs)       # scale and terminate
    lab_upgrade.register(verbs)
    lab_tools.register(verbs)       # fault and exec
    lab_plan.register(verbs)        # plan
    lab_control_plane.register(verbs)  # the real OpenStack services
    lab.set_defaults(func=lambda args: lab.print_help() or 2)


def _seconds(text):
    import argparse
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError('not a number of seconds: %r' % text)
    if value < 0:
        raise argparse.ArgumentTypeError('must not be negative')
    return value


def _positive(text):
    return _count(text, 1)


def _non_negative(text):
    return _count(text, 0)


def _count(text, minimum):
    import argparse
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError('not a whole number: %r' % text)
    if value < minimum:
        raise argparse.ArgumentTypeError('must be at least %d' % minimum)
    return value


def _conductor_count(text):
    value = _count(text, 1)
    if value > tacker_conductors.MAX_CONDUCTORS:
        raise argparse.ArgumentTypeError(
            'at most %d' % tacker_conductors.MAX_CONDUCTORS)
    return value


def check_api(args):
    """--api v2 only for a lab whose own plane runs Tacker."""
    if args.api != 'v1' and not args.own_control_plane:
        raise UserError('--api %s needs --own-control-plane: only a lab '
                        'with a control plane of its own runs Tacker'
                        % args.api)
    return args.api


def check_conductors(args):
    """--conductors only for a lab whose own plane runs Tacker; the
    count to use."""
    if args.conductors is None:
        return 1
    if not args.own_control_plane:
        raise UserError('--conductors needs --own-control-plane: only a '
                        'lab with a control plane of its own runs Tacker\'s '
                        'conductors')
    return args.conductors


def _require_machine():
    from k8s_mgmt_lab.machines import prereq
    problems = prereq.problems()
    if problems:
        raise UserError('; '.join(problems))


def cmd_up(args):
    conductors = check_conductors(args)
    api = check_api(args)
    _require_machine()
    settings = settings_mod.LabSettings(
        state_dir=args.state_dir, subnet=args.subnet,
        bridge=args.bridge or settings_mod.DEFAULT_BRIDGE,
        tag=args.tag or settings_mod.DEFAULT_TAG,
        compute_hosts=args.compute_hosts, init_delay=args.init_delay,
        join_delay=args.join_delay, etcd_timing=args.etcd_timing,
        control_plane=args.control_plane,
        own_control_plane=args.own_control_plane, conductors=conductors,
        api=api)
    if os.path.exists(settings.lab_file):
        raise UserError('a lab is already up in %s; run "k8s-mgmt lab down" '
                        'first' % settings.state_dir)
    outcome = _start_daemon(settings, args,
                            up_request(args, settings.subnet))
    if 'error' in outcome:
        raise UserError('lab up failed: %s' % outcome['error'])
    return _print_status(settings, as_json=False)


def up_request(args, subnet):
    """The request ``lab up`` builds from: --request as given, else the
    sample of --flavour on the lab's ``subnet``; the two must agree when
    both are given."""
    from k8s_mgmt import shipped
    from k8s_mgmt_lab import manager
    if args.request is None:
        if args.flavour is None:
            raise UserError('lab up needs --flavour or --request')
        return manager.sample_on_subnet(shipped.sample_request(args.flavour),
                                        subnet)
    body = lab_lcm.read_request(args.request)
    flavour = body.get('flavourId') if isinstance(body, dict) else None
    if flavour not in settings_mod.FLAVOURS:
        raise UserError('%s: flavourId must be one of %s, got %r' % (
            args.request, ', '.join(settings_mod.FLAVOURS), flavour))
    if args.flavour is not None and args.flavour != flavour:
        raise UserError('--flavour %s but %s asks for flavour %s'
                        % (args.flavour, args.request, flavour))
    return body


def _start_daemon(settings, args, request):
    from k8s_mgmt_lab import manager
    read_fd, write_fd = os.pipe()
    argv = [sys.executable, '-m', 'k8s_mgmt_lab.daemon',
            '--state-dir', settings.state_dir, '--subnet', settings.subnet,
            '--bridge', settings.bridge, '--tag', settings.tag,
            '--compute-hosts', str(settings.compute_hosts),
            '--request', '-', '--status-fd', str(write_fd),
            '--init-delay', str(settings.init_delay),
            '--join-delay', str(settings.join_delay),
            '--etcd-timing', settings.etcd_timing]
    if args.masters is not None:
        argv += ['--masters', str(args.masters)]
    if args.workers is not None:
        argv += ['--workers', str(args.workers)]
    if args.max_workers is not None:
        argv += ['--max-workers', str(args.max_workers)]
    if getattr(args, 'no_stack', False):
        argv.append('--no-stack')
    if settings.control_plane:
        argv += ['--control-plane', settings.control_plane]
    if settings.own_control_plane:
        argv += ['--own-control-plane', '--conductors',
                 str(settings.conductors), '--api', settings.api]
    log_path = manager.daemon_log(settings)
    with open(log_path, 'ab') as log:
        daemon = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=log,
                                  stderr=log, pass_fds=(write_fd,),
                                  start_new_session=True)
    os.close(write_fd)
    # The body holds node passwords: it goes over a pipe, not a file.
    try:
        with daemon.stdin:
            daemon.stdin.write(json.dumps(request).encode())
    except BrokenPipeError:
        pass  # the daemon died at once; _read_outcome reports it
    try:
        return _read_outcome(read_fd, daemon, log_path)
    finally:
        os.close(read_fd)


def _read_outcome(read_fd, daemon, log_path):
    deadline = time.monotonic() + UP_DEADLINE
    data = b''
    while time.monotonic() < deadline:
        ready, _, _ = select.select([read_fd], [], [],
                                    max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(read_fd, 4096)
        if not chunk:  # the daemon closed the pipe (or died)
            break
        data += chunk
        if data.endswith(b'\n'):
            return json.loads(data.decode())
    if daemon.poll() is None:
        daemon.terminate()
    return {'error': 'the lab daemon gave no answer; see %s' % log_path}


def cmd_status(args):
    settings = settings_mod.LabSettings(state_dir=args.state_dir)
    return _print_status(settings, as_json=args.json)


def _print_status(settings, as_json):
    from k8s_mgmt_lab.conductor import status as status_mod
    report = status_mod.lab_status(settings)  # a LabError is a UserError
    record = settings_mod.read_record(settings)
    if record and record.get('tacker'):
        from k8s_mgmt_lab.tacker_lcm import operations
        report['tacker'] = operations.status_section(settings, record)
    if as_json:
        print(json.dumps(report, indent=2))
        return 0
    heat = report['heat']
    print('flavour %s, stack %s (%s)' % (report['flavour'],
                                         heat['stack_name'] or '-',
                                         heat['stack_id'] or 'none yet'))
    print('Keystone %s (user %s, project %s, region %s)'
          % (heat['auth_url'], heat['username'], heat['project_name'],
             heat.get('region_name') or '-'))
    for name, found in sorted(((report.get('openstack') or {}).get(
            'services') or {}).items()):
        print('  %-18s %-8s %s' % (name, found['pid'] or '-',
                                   found['url'] or '-'))
    tacker = report.get('tacker')
    if tacker:
        print('Tacker: default VIM %s (%s)'
              % (tacker['vim_name'], tacker['vim_id']))
        for inst in tacker.get('instances', []):
            print('  VNF instance %s %-18s %-16s last %s %s' % (
                inst['id'], inst['name'] or '-', inst['state'],
                inst['operation'] or '-', inst['operation_state'] or '-'))
        if tacker.get('error'):
            print('  Tacker: %s' % tacker['error'])
    print('VIP %s' % (report['vip'] or '-'))
    for vm in report['vms']:
        print('  %-8s %-22s %-15s %-10s ssh %s' % (
            vm['role'], vm['name'], vm['ip'], vm['compute_host'],
            'ok' if vm['ssh_ok'] else 'FAILED'))
    kube = report.get('kubernetes')
    if kube:
        print('Kubernetes %s (kubeconfig %s; stand-ins)' % (
            kube['server'], kube['kubeconfig']))
        for node in kube.get('nodes', []):
            print('  %-22s %-9s %s' % (node['name'], 'Ready' if node['ready']
                                       else 'NotReady',
                                       ','.join(node['roles']) or '-'))
        if 'error' in kube:
            print('  API: %s' % kube['error'])
    return 0


def _openstack_record(state_dir):
    """The record of a lab that is up on real Keystone and Heat."""
    record = settings_mod.read_record(
        settings_mod.LabSettings(state_dir=state_dir))
    if record is None or 'openstack' not in record:
        raise UserError('no lab is up in %s' % state_dir)
    return record


def cmd_openrc(args):
    from k8s_mgmt_lab.openstack import lab_region
    record = _openstack_record(args.state_dir)
    sys.stdout.write(lab_region.openrc(args.state_dir, record['heat']))
    return 0


def cmd_openstack(args):
    from k8s_mgmt_lab.openstack import tenancy
    argv, env = tenancy.client_command(_openstack_record(args.state_dir),
                                       args.words)
    return subprocess.run(argv, env=env).returncode


def cmd_down(args):
    from k8s_mgmt_lab import manager
    from k8s_mgmt_lab.tacker_lcm import cleanup as tacker_cleanup
    _require_machine()
    settings = settings_mod.LabSettings(state_dir=args.state_dir)
    try:
        record = settings_mod.read_record(settings)
    except LabError:
        record = None
    if record and record.get('tacker') and \
            (record.get('openstack') or {}).get('kept'):
        # A kept plane outlives the lab: its Tacker loses what the lab
        # made there (a plane in the state dir goes with it).
        tacker_cleanup.release(record)
    pid = (record or {}).get('daemon_pid')
    if pid:
        _stop_daemon(pid)
    # The registry remembers bridge and tag; the options cover a lab whose
    # registry is gone.
    found = manager.teardown(settings.state_dir, tag=args.tag,
                             bridge=args.bridge)
    log_path = manager.daemon_log(settings)
    if os.path.exists(log_path):
        os.unlink(log_path)
    removed = sum(len(v) for v in found.values() if isinstance(v, list))
    print('lab in %s is down (%d leftover items removed)'
          % (settings.state_dir, removed))
    return 0


def _stop_daemon(pid):
    from k8s_mgmt.polling import Poll
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in Poll(DOWN_DEADLINE, first=0.02, maximum=0.5):
        if _exited(pid):
            return
    os.kill(pid, signal.SIGKILL)


def _exited(pid):
    """Whether the daemon is gone. A daemon this process started (the
    demo's) stays a zombie, which signal 0 still reaches, until it is
    reaped here."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:
        pass        # not our child: its own parent or init reaps it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
