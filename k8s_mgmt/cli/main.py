"""``k8s-mgmt`` command line: one sub-command module per verb.

Each module in :data:`COMMANDS`, and each module an installed distribution
registers in the :data:`PLUGIN_GROUP` entry point group (the lab's
``k8s-mgmt-lab`` adds ``lab`` and ``demo``), exposes ``register(subparsers)``,
which adds its parser and sets ``func`` to a callable taking the parsed args
and returning an exit status. Errors a user can cause print one line and
exit non-zero (:mod:`k8s_mgmt.cli.errors`).

Start-up stays light: a verb module imports what its verb needs when the
verb runs, and a command line naming one of :data:`COMMANDS` first imports
that module alone, no plugin (a plugin adds a verb of its own, which such a
command line does not use; the lab's plugin imports most of the driver).
"""

import argparse
import importlib
import sys

from k8s_mgmt.cli import errors

COMMANDS = ('k8s_mgmt.cli.validate', 'k8s_mgmt.cli.package',
            'k8s_mgmt.cli.hostkeys', 'k8s_mgmt.cli.statekey',
            'k8s_mgmt.cli.plan', 'k8s_mgmt.cli.certs')
PLUGIN_GROUP = 'k8s_mgmt.cli'


def plugin_modules():
    """The verb modules other installed distributions register, by entry
    point name."""
    from importlib import metadata      # reading them takes a while too
    try:
        found = metadata.entry_points(group=PLUGIN_GROUP)
    except TypeError:  # Python < 3.10: a dict of groups
        found = metadata.entry_points().get(PLUGIN_GROUP, ())
    return sorted(found, key=lambda ep: ep.name)


def build_parser(commands=COMMANDS, plugins=True):
    """The parser of ``commands`` (module names), and of the plugins' verbs
    (``plugins``: true for every one, false for none, or the entry points
    to load)."""
    parser = argparse.ArgumentParser(
        prog=errors.PROG,
        description='Kubernetes clusters on Heat VMs: the Tacker management '
                    'driver mgmt-drivers-kubernetes and its tools.')
    subparsers = parser.add_subparsers(dest='command', metavar='COMMAND')
    for name in commands:
        importlib.import_module(name).register(subparsers)
    if plugins is True:
        plugins = plugin_modules()
    for entry_point in plugins or ():
        entry_point.load().register(subparsers)
    return parser


def parser_for(argv):
    """The parser ``argv`` needs: when its first word is a verb of
    :data:`COMMANDS` (each module is named after its verb), that verb's
    alone; when it is a plugin's verb (its entry point's name), that
    plugin's alone; else (``--help``, a mistake) every verb's."""
    for name in COMMANDS:
        if argv[:1] == [name.rpartition('.')[2]]:
            return build_parser(commands=(name,), plugins=False)
    named = [ep for ep in plugin_modules() if argv[:1] == [ep.name]]
    if named:
        return build_parser(commands=(), plugins=named)
    return build_parser()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = parser_for(argv)
    args = parser.parse_args(argv)
    if not getattr(args, 'func', None):
        parser.print_help()
        return 2
    try:
        return args.func(args) or 0
    except errors.REPORTED as err:
        return errors.exit_status(err)


if __name__ == '__main__':
    sys.exit(main())
