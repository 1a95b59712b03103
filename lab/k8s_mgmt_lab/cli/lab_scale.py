"""``k8s-mgmt lab scale`` and ``k8s-mgmt lab terminate``.

Each verb imports the lab's modules it needs when it runs.
"""

import json

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt_lab import settings as settings_mod
from k8s_mgmt_lab.cli import lab_tacker
from k8s_mgmt_lab.cli import reporting
from k8s_mgmt_lab.conductor import scale_types


def register(verbs):
    scale = verbs.add_parser(
        'scale', help='scale the lab\'s workers out or in',
        description='Through Tacker\'s API on a lab that runs Tacker (a '
                    'failed scale-out stays FAILED_TEMP for "lab rollback"). '
                    'On a shared control plane: scale the stack\'s group '
                    'through Heat and call the driver\'s scale_start/'
                    'scale_end with the arguments Tacker\'s conductor passes, '
                    'in its order (a scale-out whose scale_end fails is '
                    'rolled back as Tacker does: through Heat alone, no '
                    'hook).')
    scale.add_argument('--type', required=True,
                       choices=(scale_types.SCALE_OUT, scale_types.SCALE_IN))
    scale.add_argument('--aspect-id', default=scale_types.DEFAULT_ASPECT)
    scale.add_argument('--steps', type=int, default=1)
    scale.add_argument('--force-drain', action='store_true',
                       help='additionalParams force_drain: true (delete the '
                            'pods a PodDisruptionBudget protects)')
    scale.add_argument('--json', action='store_true')
    scale.add_argument('--quiet', action='store_true')
    scale.set_defaults(func=cmd_scale)
    term = verbs.add_parser(
        'terminate', help='terminate the lab\'s VNF instance',
        description='Through Tacker\'s API on a lab that runs Tacker. On a '
                    'shared control plane: terminate_start, delete the lab '
                    'stack (its VMs), then terminate_end with the VIM '
                    'connection emptied, as Tacker does.')
    term.add_argument('--graceful-timeout', type=int, metavar='SECONDS',
                      help='GRACEFUL termination within SECONDS (Tacker '
                           'only); FORCEFUL without it')
    term.add_argument('--quiet', action='store_true')
    term.add_argument('--json', action='store_true')
    term.set_defaults(func=cmd_terminate)


def cmd_scale(args):
    params = {'force_drain': True} if args.force_drain else None
    if lab_tacker.drives(args.state_dir):
        from k8s_mgmt_lab.tacker_lcm import operations
        return lab_tacker.run('scale', args.state_dir, lambda s: (
            operations.scale(s, args.type, args.aspect_id, args.steps,
                             params)), as_json=args.json, quiet=args.quiet)
    from k8s_mgmt_lab.conductor import lcm_scale
    settings = settings_mod.LabSettings(state_dir=args.state_dir)
    reporting.show_progress(args.quiet or args.json)
    with reporting.reported('scale', settings):
        result = lcm_scale.scale(settings, args.type,
                                 aspect_id=args.aspect_id, steps=args.steps,
                                 additional_params=params)
    if args.json:
        print(json.dumps(result.__dict__, indent=2, sort_keys=True))
    else:
        print('%s %s by %d step(s): members %s; cloud %.2f s, driver %.2f s'
              % (result.scale_type, result.aspect_id, result.steps,
                 ', '.join(result.member_names) or '-',
                 result.seconds_cloud, result.seconds_driver))
    return 0


def cmd_terminate(args):
    if lab_tacker.drives(args.state_dir):
        from k8s_mgmt_lab.tacker_lcm import operations
        return lab_tacker.run('terminate', args.state_dir, lambda s: (
            operations.terminate(s, args.graceful_timeout)),
            as_json=args.json, quiet=args.quiet)
    if args.graceful_timeout is not None:
        raise UserError('--graceful-timeout needs a lab that runs Tacker '
                        '(the lab\'s own conductor terminates FORCEFUL)')
    from k8s_mgmt_lab.conductor import lcm_scale
    settings = settings_mod.LabSettings(state_dir=args.state_dir)
    reporting.show_progress(args.quiet)
    with reporting.reported('terminate', settings):
        result = lcm_scale.terminate(settings)
    print('terminated VNF instance %s in %.2f s'
          % (result['vnf_instance_id'], result['seconds']))
    return 0
