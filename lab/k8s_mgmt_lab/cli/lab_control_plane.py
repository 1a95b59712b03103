"""``k8s-mgmt lab control-plane build|up|status|openrc|openstack|down``:
the real OpenStack services (MariaDB, RabbitMQ, Keystone, Heat, and with
``--tacker`` tacker-server and tacker-conductor) on their own, not yet
behind ``lab up``; ``openstack ARGS`` runs python-openstackclient from
the lab's cache as the plane's admin.

Each action imports the control plane's modules when it runs: building
the parser imports none.
"""

import argparse
import json
import subprocess

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt_lab.openstack import venvs

DEFAULT_DIR = '/var/lib/k8s-mgmt-lab-openstack'
# The actions that take --tacker (down stops Tacker with or without it).
TACKER_ACTIONS = ('up', 'status', 'down')


def register(verbs):
    parser = verbs.add_parser(
        'control-plane', help='start, show or stop the real Keystone and '
                              'Heat (with MariaDB and RabbitMQ), and '
                              'Tacker with --tacker')
    parser.add_argument('--dir', default=DEFAULT_DIR,
                        help='the control plane\'s state directory '
                             '(default: %(default)s)')
    parser.add_argument('--cache-dir', default=venvs.DEFAULT_CACHE,
                        help='where the service venvs are built '
                             '(default: %(default)s)')
    actions = parser.add_subparsers(dest='plane_command', metavar='ACTION')
    for name, func, text in (
            ('build', cmd_build, 'build the service venvs into the cache '
                                 '(done by up when missing)'),
            ('up', cmd_up, 'start every service (building the venvs on '
                           'first use)'),
            ('status', cmd_status, 'each service\'s pid, version, url, log'),
            ('openrc', cmd_openrc, 'the admin\'s openrc, without the '
                                   'password (<dir>/openrc has it)'),
            ('down', cmd_down, 'stop every service by PID')):
        action = actions.add_parser(name, help=text)
        action.set_defaults(func=func)
        if name in TACKER_ACTIONS:
            action.add_argument(
                '--tacker', action='store_true',
                help='Tacker too: tacker-server and tacker-conductor, with '
                     'the k8s-mgmt driver built from this checkout')
    client = actions.add_parser(
        'openstack', help='run python-openstackclient as the admin, e.g. '
                          '"openstack stack list"')
    client.add_argument('words', nargs=argparse.REMAINDER,
                        help='the openstack command\'s arguments')
    client.set_defaults(func=cmd_openstack)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def _plane(args):
    from k8s_mgmt_lab.openstack import control_plane
    return control_plane.ControlPlane(args.dir, args.cache_dir,
                                      tacker=getattr(args, 'tacker', False))


def cmd_build(args):
    plane = _plane(args)
    try:
        built = plane.venvs()
        built['client'] = plane.client_venv()
    except venvs.BuildFailed as error:
        raise UserError(str(error))
    for name, path in sorted(built.items()):
        print('%s: %s' % (name, path))
    return 0


def cmd_up(args):
    from k8s_mgmt_lab.openstack import bootstrap
    from k8s_mgmt_lab.openstack import processes
    try:
        _plane(args).up()
    except (processes.ServiceFailed, bootstrap.StepFailed,
            venvs.BuildFailed) as error:
        raise UserError(str(error))
    print('control plane up%s; credentials: %s/openrc'
          % (' with Tacker' if args.tacker else '', args.dir))
    return 0


def cmd_status(args):
    print(json.dumps(_plane(args).status(), indent=2, sort_keys=True))
    return 0


def cmd_openrc(args):
    from k8s_mgmt_lab.openstack import control_plane
    try:
        print(_plane(args).openrc(), end='')
    except control_plane.NeverStarted as error:
        raise UserError(str(error))
    return 0


def cmd_openstack(args):
    from k8s_mgmt_lab.openstack import control_plane
    plane = _plane(args)
    try:
        env = plane.client_env()
        argv = venvs.entry_point_argv(plane.client_venv(), 'openstack',
                                      *args.words)
    except (control_plane.NeverStarted, venvs.BuildFailed) as error:
        raise UserError(str(error))
    return subprocess.run(argv, env=env).returncode


def cmd_down(args):
    _plane(args).down()
    return 0
