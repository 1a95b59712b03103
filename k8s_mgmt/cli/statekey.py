"""``k8s-mgmt statekey create|id``: the key sealing the instances' shared
state.

The driver keeps what a later operation needs (pinned host keys, the first
master, the VRRP password) in each VNF instance's metadata in Tacker's
database, sealed with the key in ``[k8s_mgmt] state_key_file``, so that
any tacker-conductor can run the next operation. Every conductor host needs
the same key file: make it once with ``create``, copy it (mode 0600) to
the others, and compare ``id`` on each host.
"""

import argparse


def register(subparsers):
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument('--file', metavar='PATH',
                        help='the key file (default: [k8s_mgmt] '
                             'state_key_file)')
    common.add_argument('--config-file', metavar='FILE',
                        help='read [k8s_mgmt] state_key_file from this file '
                             '(e.g. /etc/tacker/tacker.conf)')
    parser = subparsers.add_parser(
        'statekey', help='make or identify the key sealing the instances\' '
                         'shared state',
        description=__doc__.split('\n\n', 1)[1])
    verbs = parser.add_subparsers(dest='statekey_command', metavar='VERB')
    create = verbs.add_parser(
        'create', parents=[common], help='make a new key file (never over '
                                         'an existing one)')
    create.set_defaults(func=cmd_create)
    show = verbs.add_parser('id', parents=[common],
                            help='print the key\'s id, to compare hosts')
    show.set_defaults(func=cmd_id)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def key_file(args):
    """The key file the arguments (and the configuration) select."""
    from k8s_mgmt.cli import hostkeys
    from k8s_mgmt import state_key
    if args.config_file:
        hostkeys.read_config(args.config_file)
    return args.file or state_key.configured_path()


def cmd_create(args):
    from k8s_mgmt import state_key
    path = key_file(args)
    made = state_key.create(path)
    print('made state key %s in %s; copy it (mode 0600) to every '
          'tacker-conductor host, at the path [k8s_mgmt] state_key_file '
          'names' % (made, path))
    return 0


def cmd_id(args):
    from k8s_mgmt import state_key
    print(state_key.load(key_file(args)).key_id)
    return 0
