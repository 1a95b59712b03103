"""``k8s-mgmt plan``: what an operation would do, without doing it.

Prints per phase the nodes and the commands that would run, in order,
parallel groups marked and secrets masked (``--json`` for machines). The
phases come from the driver's own operation code walked without
connecting (:func:`k8s_mgmt.modes.catalog.plan`): their titles and
order are the ``==> <title>`` lines a real run logs.

The topology comes from a JSON file (``--topology``, the shape of
``Topology.to_dict()``) or from Heat through a VIM (``--vim FILE`` holding
the VIM's auth as Tacker resolves it, and ``--stack-id``). Nothing is
connected to but Heat, nothing is written.
"""

import json
import sys

from k8s_mgmt.cli.errors import UserError

# The operations' command-line names, sorted: the keys of
# k8s_mgmt.cli.planning.OPERATIONS, which the parser cannot import
# without loading the whole driver (kubernetes, keystoneauth1, oslo.*) at
# every start-up; tests/unit/test_cli_importtime.py checks they agree.
OPERATIONS = ('certs-check', 'certs-renew', 'heal-end', 'heal-start',
              'instantiate', 'scale-in', 'scale-out', 'scale-out-rollback',
              'terminate', 'upgrade')


def register(subparsers):
    parser = subparsers.add_parser(
        'plan', help='print the phases and commands of an operation',
        description='Walk an operation\'s phases without connecting: per '
                    'phase the nodes and the commands that would run, in '
                    'order, parallel groups marked, secrets masked.')
    add_arguments(parser)
    parser.add_argument('--instantiate-request', metavar='FILE',
                        help='the InstantiateVnfRequest body the instance '
                             'was instantiated with (its parameters); '
                             'for every operation but instantiate')
    parser.add_argument('--topology', metavar='FILE',
                        help='the cluster\'s topology as JSON')
    parser.add_argument('--vim', metavar='FILE',
                        help='JSON of the VIM\'s auth (auth_url, username, '
                             'password, project_name, ...) to read the '
                             'topology from Heat')
    parser.add_argument('--stack-id', help='the instance\'s Heat stack '
                                           '(with --vim)')
    parser.set_defaults(func=run)


def add_arguments(parser):
    """The arguments ``k8s-mgmt plan`` and ``k8s-mgmt lab plan`` share."""
    parser.add_argument('operation', choices=OPERATIONS,
                        help='the operation to plan')
    parser.add_argument('request', metavar='REQUEST', nargs='?',
                        help='JSON file: the operation\'s request body '
                             '(InstantiateVnfRequest, ScaleVnfRequest, '
                             'HealVnfRequest)')
    parser.add_argument('--new-workers', type=int, default=1, metavar='N',
                        help='scale-out: workers Heat would add (they are '
                             'shown as new-worker-1..N)')
    parser.add_argument('--remove', metavar='NODE', action='append',
                        default=[],
                        help='scale-in: a node (or member resource) to '
                             'remove; repeat for more')
    parser.add_argument('--to', metavar='VERSION',
                        help='upgrade: the target, 1.MINOR or '
                             '1.MINOR.PATCH (metadata k8sMgmtUpgrade)')
    parser.add_argument('--max-unavailable', type=int, default=0,
                        metavar='N', help='upgrade: workers at once')
    parser.add_argument('--ready', metavar='NODES',
                        help='comma-separated nodes the API would report '
                             'Ready (default: what a first run finds)')
    parser.add_argument('--unreachable', metavar='NODES', default='',
                        help='comma-separated nodes that would not answer '
                             'SSH')
    parser.add_argument('--vnf-instance-id', default='plan',
                        help='whose driver state to read (first master, '
                             'VRRP password); nothing is written')
    parser.add_argument('--package-dir', metavar='DIR',
                        help='the unpacked VNF package (its scripts)')
    parser.add_argument('--json', action='store_true',
                        help='a JSON list of phases (title, nodes, '
                             'parallel, commands, skipped)')


def read_json(path, what):
    try:
        with open(path) as handle:
            return json.load(handle)
    except OSError as err:
        raise UserError('cannot read %s %s: %s' % (what, path,
                                                   err.strerror))
    except ValueError as err:
        raise UserError('%s %s is not JSON: %s' % (what, path, err))


def _names(text):
    return {n.strip() for n in (text or '').split(',') if n.strip()}


def plan_for(args, instantiate_body, topology):
    """The phases of ``args.operation`` on ``topology``."""
    from k8s_mgmt.cli import planning
    request_body = None
    if args.operation != 'instantiate':
        request_body = (read_json(args.request, 'request')
                        if args.request else {})
    scale_out_ids, scale_names = (), ()
    if args.operation == 'scale-out':
        topology, scale_out_ids = planning.with_new_workers(
            topology, args.new_workers)
    elif args.operation in ('scale-in', 'scale-out-rollback'):
        scale_names = planning.member_names(topology, args.remove)
    ctx = planning.context_for(
        args.operation, instantiate_body, topology, request_body,
        vnf_instance_id=args.vnf_instance_id, package_dir=args.package_dir,
        scale_out_ids=scale_out_ids, scale_names=scale_names,
        upgrade_target=getattr(args, 'to', None),
        max_unavailable=getattr(args, 'max_unavailable', 0))
    facts = planning.default_facts(
        ctx, topology, ready=(_names(args.ready) if args.ready is not None
                              else None),
        unreachable=_names(args.unreachable))
    return planning.plan(ctx, facts)


def show(walked, as_json, out=None):
    from k8s_mgmt.engine import phases
    out = out or sys.stdout
    if as_json:
        json.dump([p.to_dict() for p in walked], out, indent=1)
        out.write('\n')
    else:
        out.write(phases.render_text(walked) + '\n')


def _topology(args, instantiate_body):
    if args.topology:
        from k8s_mgmt.cli import planning
        return planning.topology_from_dict(read_json(args.topology,
                                                     'topology'))
    if not (args.vim and args.stack_id):
        raise UserError('give --topology FILE, or --vim FILE and '
                        '--stack-id to read it from Heat')
    from k8s_mgmt import params as params_mod
    from k8s_mgmt.topology import from_params
    from k8s_mgmt.topology import heat
    vim_info = read_json(args.vim, 'VIM')
    cluster = params_mod.load_request(instantiate_body)
    spec = from_params.spec_from_params(cluster)
    session, region = heat.session_for_vim(vim_info)
    reader = heat.HeatReader(session, region_name=region)
    return reader.read_topology(spec, args.stack_id)


def run(args):
    if args.operation == 'instantiate':
        if not args.request:
            raise UserError('instantiate needs its request body (REQUEST)')
        instantiate_body = read_json(args.request, 'request')
    else:
        if not args.instantiate_request:
            raise UserError('%s needs --instantiate-request: the '
                            'parameters the instance was instantiated '
                            'with' % args.operation)
        instantiate_body = read_json(args.instantiate_request,
                                     'instantiate request')
    if not isinstance(instantiate_body, dict):
        raise UserError('a request body is a JSON object')
    topology = _topology(args, instantiate_body)
    show(plan_for(args, instantiate_body, topology), args.json)
    return 0
