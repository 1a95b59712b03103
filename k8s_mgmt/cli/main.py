"""``k8s-mgmt`` command line: one sub-command module per verb.

Each module in :data:`COMMANDS` exposes ``register(subparsers)``, which adds
its parser and sets ``func`` to a callable taking the parsed args and returning
an exit status. Errors a user can cause print one line and exit non-zero.
"""

import argparse
import importlib
import sys

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt import exceptions
from k8s_mgmt.lab import LabError

COMMANDS = ('k8s_mgmt.cli.validate', 'k8s_mgmt.cli.lab',
            'k8s_mgmt.cli.package', 'k8s_mgmt.cli.demo',
            'k8s_mgmt.cli.hostkeys', 'k8s_mgmt.cli.plan')


def build_parser():
    parser = argparse.ArgumentParser(
        prog='k8s-mgmt',
        description='Kubernetes clusters on Heat VMs: the Tacker management '
                    'driver mgmt-drivers-kubernetes and its tools.')
    subparsers = parser.add_subparsers(dest='command', metavar='COMMAND')
    for name in COMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, 'func', None):
        parser.print_help()
        return 2
    try:
        return args.func(args) or 0
    except (UserError, exceptions.MgmtDriverError, LabError) as err:
        print('k8s-mgmt: error: %s' % err, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print('k8s-mgmt: interrupted', file=sys.stderr)
        return 130


if __name__ == '__main__':
    sys.exit(main())
