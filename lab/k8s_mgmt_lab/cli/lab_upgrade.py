"""``k8s-mgmt lab upgrade --to VERSION``."""

import json

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.cli import lab_tacker
from k8s_mgmt_lab.cli import reporting
from k8s_mgmt_lab.conductor import lcm_upgrade


def register(verbs):
    upgrade = verbs.add_parser(
        'upgrade', help='upgrade the lab cluster\'s Kubernetes one minor',
        description='As Tacker\'s v1 API asks for it: the instance\'s '
                    'metadata k8sMgmtUpgrade set to VERSION, then the '
                    'driver\'s modify_information_start/_end (the lab\'s '
                    'own conductor; a lab that runs Tacker is not served '
                    'yet).')
    upgrade.add_argument('--to', required=True, metavar='VERSION',
                         help='1.MINOR (its newest patch in the lab\'s '
                              'repository) or 1.MINOR.PATCH')
    upgrade.add_argument('--max-unavailable', type=int, metavar='N',
                         help='workers upgraded at once (default: the '
                              'driver\'s [k8s_mgmt] upgrade_max_unavailable)')
    upgrade.add_argument('--json', action='store_true')
    upgrade.add_argument('--quiet', action='store_true')
    upgrade.set_defaults(func=cmd_upgrade)


def cmd_upgrade(args):
    if lab_tacker.drives(args.state_dir):
        raise UserError('"lab upgrade" runs on the lab\'s own conductor; '
                        'through Tacker, PATCH the instance: openstack '
                        'vnflcm update VNF_INSTANCE_ID --I upgrade.json '
                        '(doc/source/operations.rst)')
    settings = manager.LabSettings(state_dir=args.state_dir)
    reporting.show_progress(args.quiet or args.json)
    with reporting.reported('upgrade', settings):
        result = lcm_upgrade.upgrade(settings, args.to,
                                     max_unavailable=args.max_unavailable)
    if args.json:
        print(json.dumps(result.__dict__, indent=2, sort_keys=True))
    else:
        print('upgraded VNF instance %s to %s in %.1f s'
              % (result.vnf_instance_id, result.target, result.seconds))
    return 0
