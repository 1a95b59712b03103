"""``k8s-mgmt hostkeys list|add|remove``: the pinned SSH host keys.

The driver pins each VM's host key under its Nova server id, in
``<state_dir>/<vnf instance id>/host_keys.json`` (or the one file
``[k8s_mgmt] host_key_file`` names). This command shows and edits such a
file under the same lock the driver takes: pre-load keys for
``host_key_policy = strict``, replace a pin after a planned key rotation,
or remove one so the next connection verifies the VM again.
"""

import argparse
import base64
import binascii
import json
import sys

from k8s_mgmt.cli.errors import UserError

COLUMNS = (('server_id', 'SERVER ID'), ('node', 'NODE'),
           ('address', 'ADDRESS'), ('key_type', 'TYPE'),
           ('fingerprint', 'FINGERPRINT'), ('verified', 'VERIFIED'),
           ('pinned_at', 'PINNED AT'))


def register(subparsers):
    common = argparse.ArgumentParser(add_help=False)
    where = common.add_mutually_exclusive_group()
    where.add_argument('--file', metavar='PATH',
                       help='the pin file (default: [k8s_mgmt] '
                            'host_key_file, else <state_dir>/host_keys.json)')
    where.add_argument('--instance', metavar='VNF_INSTANCE_ID',
                       help='the pin file the driver keeps for this VNF '
                            'instance: <state_dir>/<id>/host_keys.json')
    common.add_argument('--config-file', metavar='FILE',
                        help='read [k8s_mgmt] state_dir and host_key_file '
                             'from this file (e.g. /etc/tacker/tacker.conf)')
    parser = subparsers.add_parser(
        'hostkeys', help='list, add and remove pinned SSH host keys',
        description=__doc__.split('\n\n', 1)[1])
    verbs = parser.add_subparsers(dest='hostkeys_command', metavar='VERB')
    show = verbs.add_parser('list', parents=[common],
                            help='show every pin of the file')
    show.add_argument('--json', action='store_true',
                      help='print the pins as a JSON list')
    show.set_defaults(func=cmd_list)
    add = verbs.add_parser(
        'add', parents=[common], help='pin a host key checked out of band',
        description='Pin a public host key for a Nova server id, e.g. one '
                    'read from the VM\'s console or from the image build. '
                    'A different existing pin is replaced only with '
                    '--replace.')
    add.add_argument('server_id', metavar='SERVER_ID')
    key = add.add_mutually_exclusive_group(required=True)
    key.add_argument('--key-file', metavar='PUBKEY',
                     help='an OpenSSH public key file, e.g. a copy of the '
                          'VM\'s /etc/ssh/ssh_host_ed25519_key.pub')
    key.add_argument('--key', metavar="'TYPE BASE64'",
                     help="the public key itself: 'ssh-ed25519 AAAA...'")
    add.add_argument('--node', metavar='NAME',
                     help='node name shown by "list" (default: the replaced '
                          'pin\'s)')
    add.add_argument('--address', metavar='HOST:PORT',
                     help='address shown by "list"')
    add.add_argument('--replace', action='store_true',
                     help='replace a different key already pinned')
    add.set_defaults(func=cmd_add)
    remove = verbs.add_parser(
        'remove', parents=[common], help='drop pins',
        description='Drop the pins of these server ids: the next connection '
                    'to them is a first contact, verified by the '
                    'host_key_policy again.')
    remove.add_argument('server_ids', metavar='SERVER_ID', nargs='+')
    remove.set_defaults(func=cmd_remove)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def pin_file(args):
    """The pin file the arguments (and the configuration) select."""
    # Imported by the verbs that run, not by every k8s-mgmt start-up
    # (oslo.config; k8s_mgmt.ssh loads paramiko).
    from k8s_mgmt import state as state_mod
    from k8s_mgmt.ssh import hostkeys
    if args.config_file:
        read_config(args.config_file)
    if args.file:
        return args.file
    if args.instance:
        try:
            return state_mod.InstanceState(args.instance).host_key_file()
        except ValueError as err:
            raise UserError('--instance: %s' % err)
    return hostkeys.default_path()


def read_config(path):
    """Load the driver's options from ``path`` (a tacker.conf)."""
    from k8s_mgmt import conf
    try:
        conf.CONF(args=[], project='tacker', default_config_files=[path])
    except Exception as err:  # oslo.config's errors have no common base
        raise UserError('--config-file %s: %s' % (path, err))


def parse_public_key(text, source):
    """(key type, base64) of an OpenSSH public key line, checked."""
    import paramiko
    lines = [line.strip() for line in (text or '').splitlines()
             if line.strip() and not line.lstrip().startswith('#')]
    if len(lines) != 1:
        raise UserError('%s: expected one public key line "TYPE BASE64 '
                        '[COMMENT]", found %d lines' % (source, len(lines)))
    fields = lines[0].split()
    if len(fields) < 2:
        raise UserError('%s: expected "TYPE BASE64 [COMMENT]"' % source)
    key_type, blob = fields[0], fields[1]
    try:
        data = base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        raise UserError('%s: the key is not base64' % source)
    try:
        key = paramiko.PKey.from_type_string(key_type, data)
    except paramiko.pkey.UnknownKeyType:
        raise UserError('%s: not a usable %s public key (unknown type)'
                        % (source, key_type))
    except (paramiko.SSHException, TypeError, ValueError,
            IndexError) as err:
        raise UserError('%s: not a usable %s public key: %s'
                        % (source, key_type, err or type(err).__name__))
    if key.get_name() != key_type:
        raise UserError('%s: the key data is a %s key, not %s'
                        % (source, key.get_name(), key_type))
    return key_type, key.get_base64()


def cmd_list(args):
    from k8s_mgmt.ssh import hostkeys
    store = hostkeys.HostKeyStore(pin_file(args))
    rows = []
    for server_id, entry in sorted(store.all().items()):
        row = {'server_id': server_id}
        row.update(entry)
        row['fingerprint'] = hostkeys.entry_fingerprint(entry)
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1, sort_keys=True))
        return 0
    if not rows:
        print('no pins in %s' % store.path)
        return 0
    table = [[title for _, title in COLUMNS]]
    table += [[str(row.get(field) or '-') for field, _ in COLUMNS]
              for row in rows]
    widths = [max(len(line[i]) for line in table)
              for i in range(len(COLUMNS))]
    for line in table:
        print('  '.join(cell.ljust(width)
                        for cell, width in zip(line, widths)).rstrip())
    return 0


def cmd_add(args):
    from k8s_mgmt.ssh import hostkeys
    if args.key_file:
        try:
            with open(args.key_file) as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as err:
            raise UserError('--key-file %s: %s' % (args.key_file, err))
        key_type, blob = parse_public_key(text, '--key-file %s'
                                          % args.key_file)
    else:
        key_type, blob = parse_public_key(args.key, '--key')
    store = hostkeys.HostKeyStore(pin_file(args))
    entry = store.add(args.server_id, key_type, blob, node=args.node,
                      address=args.address, replace=args.replace)
    print('pinned %s %s for server %s in %s'
          % (key_type, entry['fingerprint'], args.server_id, store.path))
    return 0


def cmd_remove(args):
    from k8s_mgmt.ssh import hostkeys
    store = hostkeys.HostKeyStore(pin_file(args))
    pinned = set(store.all())
    missing = [s for s in args.server_ids if s not in pinned]
    removed = store.forget_many(args.server_ids)
    print('removed %d pin(s) from %s' % (removed, store.path))
    if missing:
        print('k8s-mgmt: error: not pinned in %s: %s'
              % (store.path, ', '.join(missing)), file=sys.stderr)
        return 1
    return 0
