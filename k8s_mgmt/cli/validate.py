"""``k8s-mgmt validate FILE``: check an InstantiateVnfRequest body.

Exit 0 with a one-line summary when the parameters are valid (warnings go to
stderr); exit 2 with one ``path: message`` line per problem when they are
not, including when FILE is not a JSON object at all; exit 1 when FILE
cannot be read (or --package-dir is not a directory). Never a traceback,
never a secret.

Besides the cluster parameters it checks what makes Tacker run the package's
BaseHOT and UserData (the ``lcm-operation-user-data`` keys,
``extVirtualLinks``, ``vimConnectionInfo``); with ``--package-dir`` it also
reads the package (:mod:`k8s_mgmt.params.package_checks`).

``--api`` says which Tacker VNF LCM API the request is for; ``auto`` (the
default) takes an object ``vimConnectionInfo`` for v2 (v2 keys it by name)
and a list, or none, for v1. The summary and the problem count name the API
checked for (the count only for v2, so v1's line stays as it was).
"""

import json
import logging as std_logging
import os
import sys

from k8s_mgmt import exceptions

# k8s_mgmt.params.OPERATIONS: the parser cannot import k8s_mgmt.params
# without loading oslo.config, oslo.log and yaml at every start-up;
# tests/unit/test_cli_importtime.py checks they agree.
OPERATIONS = ('instantiate', 'scale', 'heal', 'terminate', 'upgrade', 'certs')
# k8s_mgmt.params.request_body.APIS, and what --api auto picks between.
APIS = ('v1', 'v2')
AUTO = 'auto'
EXIT_INVALID = 2
EXIT_UNREADABLE = 1
# A request body is a few kB; anything far bigger is not one.
_MAX_BYTES = 16 * 1024 * 1024


def register(subparsers):
    parser = subparsers.add_parser(
        'validate', help='check the parameters of an InstantiateVnfRequest',
        description='Validate an InstantiateVnfRequest body (JSON): its '
                    'additionalParams.k8s_cluster_installation_param, the '
                    'UserData keys and extVirtualLinks, as the driver does '
                    'before touching any VM.')
    parser.add_argument('file', metavar='FILE',
                        help='JSON file holding the request body')
    parser.add_argument('--package-dir', metavar='DIR',
                        help='unpacked VNF package: also check that the '
                             'scripts and manifests named exist in it, '
                             'that the UserData defines its class, and that '
                             'the CPs named are in the flavour\'s BaseHOT '
                             'and VNFD')
    parser.add_argument('--operation', default='instantiate',
                        choices=OPERATIONS,
                        help='operation whose required fields apply '
                             '(default: instantiate)')
    parser.add_argument('--api', default=AUTO, choices=APIS + (AUTO,),
                        help='Tacker VNF LCM API the request is for '
                             '(default: auto: v2 when vimConnectionInfo is '
                             'an object, v1 when it is a list or absent). '
                             'v2 wants one vimConnectionInfo entry, each '
                             'extCps[].cpConfig an object, and no '
                             'lcm-operation-user-data keys')
    parser.set_defaults(func=run)


class _Unreadable(Exception):
    pass


def _read(path):
    """``(body, None)`` or ``(None, why it is not a request body)``."""
    try:
        with open(path, 'rb') as handle:
            data = handle.read(_MAX_BYTES + 1)
    except IsADirectoryError:
        raise _Unreadable('is a directory, not a request file')
    except OSError as err:
        raise _Unreadable('cannot read: %s' % (err.strerror or err))
    if len(data) > _MAX_BYTES:
        return None, 'larger than %d bytes: not a request body' % _MAX_BYTES
    try:
        text = data.decode('utf-8-sig')
    except UnicodeDecodeError as err:
        return None, 'not UTF-8 text (byte %d)' % err.start
    try:
        return json.loads(text), None
    except RecursionError:
        return None, 'JSON nested too deeply to be a request body'
    except ValueError as err:
        return None, 'not valid JSON: %s' % err


def api_of(body, choice):
    """The API to check ``body`` for: ``choice``, or for ``auto`` the
    shape of its vimConnectionInfo (an object means v2)."""
    if choice != AUTO:
        return choice
    if isinstance(body, dict) and isinstance(body.get('vimConnectionInfo'),
                                             dict):
        return 'v2'
    return 'v1'


def _summary(path, result, api):
    parts = ['%s: valid for %s (Tacker API %s)' % (path, result.operation,
                                                   api),
             'flavour %s' % result.flavour,
             'Kubernetes %s' % result.kubernetes_version]
    if result.uses_ansible:
        parts.append('kubespray mode')
    elif result.script_path:
        parts.append('script %s' % result.script_path)
    for role, group in (('masters', result.master_node),
                        ('workers', result.worker_node)):
        if group is not None:
            parts.append('%s %s' % (role,
                                    group.aspect_id or group.ssh_cp_name))
    if result.storage_server is not None:
        parts.append('storage server %s' % result.storage_server.ssh_cp_name)
    parts.append('%d warning(s)' % len(result.warnings))
    return ', '.join(parts)


def _print_lines(pairs, stream, prefix=''):
    # Messages are built without secret values (ValidationError has also
    # redacted its problems); redacting again would mask every word that
    # happens to equal a short password, such as a username.
    for where, message in pairs:
        print('%s%s: %s' % (prefix, where, message), file=stream)


def run(args):
    # The CLI prints warnings itself; without this, Python's last-resort
    # handler would print each logged warning a second time.
    std_logging.getLogger('k8s_mgmt.params').addHandler(
        std_logging.NullHandler())
    try:
        body, error = _read(args.file)
    except _Unreadable as err:
        print('k8s-mgmt validate: %s: %s' % (args.file, err), file=sys.stderr)
        return EXIT_UNREADABLE
    if error is not None:
        print('request: %s' % error)
        return EXIT_INVALID
    if args.package_dir is not None and not os.path.isdir(args.package_dir):
        print('k8s-mgmt validate: --package-dir %s: not a directory'
              % args.package_dir, file=sys.stderr)
        return EXIT_UNREADABLE
    from k8s_mgmt import params as cluster_params
    api = api_of(body, args.api)
    try:
        result = cluster_params.load_request(
            body, operation=args.operation, package_dir=args.package_dir,
            api=api)
    except exceptions.ValidationError as err:
        _print_lines(getattr(err, 'warnings', ()), sys.stderr, 'warning: ')
        _print_lines(err.problems, sys.stdout)
        print('%s: %d problem(s)%s' % (
            args.file, len(err.problems),
            ' for Tacker API v2' if api == 'v2' else ''), file=sys.stderr)
        return EXIT_INVALID
    _print_lines(result.warnings, sys.stderr, 'warning: ')
    print(_summary(args.file, result, api))
    return 0
