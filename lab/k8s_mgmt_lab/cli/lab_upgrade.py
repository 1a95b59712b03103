"""``k8s-mgmt lab upgrade --to VERSION`` and ``k8s-mgmt lab certs
check|renew``: the instance's metadata changed as an operator changes it
(``k8sMgmtUpgrade``, ``k8sMgmtCertificates``), through Tacker's API on a
lab that runs Tacker, else by the lab's own conductor. Each verb
imports the driver's and the lab's modules when it runs."""

import json

from k8s_mgmt_lab import settings as settings_mod
from k8s_mgmt_lab.cli import lab_tacker
from k8s_mgmt_lab.cli import reporting

# k8s_mgmt.modify_request.CERTIFICATE_ACTIONS: the parser cannot import
# that module without loading oslo.config, oslo.log and yaml at every
# start-up; tests/functional/packaging/test_cli_importtime.py checks they
# agree.
CERTIFICATE_ACTIONS = ('check', 'renew')


def register(verbs):
    upgrade = verbs.add_parser(
        'upgrade', help='upgrade the lab cluster\'s Kubernetes one minor',
        description='The instance\'s metadata k8sMgmtUpgrade set to '
                    'VERSION: a PATCH through Tacker\'s API on a lab that '
                    'runs Tacker (v1 or v2, as the lab was brought up), '
                    'else the driver\'s modify_information_start/_end on '
                    'the lab\'s own conductor.')
    upgrade.add_argument('--to', required=True, metavar='VERSION',
                         help='1.MINOR (its newest patch in the lab\'s '
                              'repository) or 1.MINOR.PATCH')
    upgrade.add_argument('--max-unavailable', type=int, metavar='N',
                         help='workers upgraded at once (default: the '
                              'driver\'s [k8s_mgmt] upgrade_max_unavailable)')
    upgrade.add_argument('--json', action='store_true')
    upgrade.add_argument('--quiet', action='store_true')
    upgrade.set_defaults(func=cmd_upgrade)
    certs = verbs.add_parser(
        'certs', help='check or renew the lab cluster\'s certificates',
        description='The instance\'s metadata k8sMgmtCertificates set to '
                    'check (every master\'s kubeadm certificates read and '
                    'recorded) or renew (one master at a time, the VIP '
                    'answering): through Tacker\'s API on a lab that runs '
                    'Tacker, else on the lab\'s own conductor.')
    certs.add_argument('action', choices=CERTIFICATE_ACTIONS)
    certs.add_argument('--json', action='store_true')
    certs.add_argument('--quiet', action='store_true')
    certs.set_defaults(func=cmd_certs)


def _metadata(args):
    from k8s_mgmt import modify_request
    change = {modify_request.UPGRADE_KEY: args.to}
    if args.max_unavailable:
        change[modify_request.MAX_UNAVAILABLE_KEY] = str(
            args.max_unavailable)
    return change


def cmd_upgrade(args):
    if lab_tacker.drives(args.state_dir):
        from k8s_mgmt_lab.tacker_lcm import operations
        return lab_tacker.run('upgrade', args.state_dir, lambda s: (
            operations.modify(s, _metadata(args))), as_json=args.json,
            quiet=args.quiet)
    from k8s_mgmt_lab.conductor import lcm_upgrade
    settings = settings_mod.LabSettings(state_dir=args.state_dir)
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


def cmd_certs(args):
    from k8s_mgmt import modify_request
    change = {modify_request.CERTIFICATES_KEY: args.action}
    if lab_tacker.drives(args.state_dir):
        from k8s_mgmt_lab.tacker_lcm import operations
        return lab_tacker.run('certs ' + args.action, args.state_dir,
                              lambda s: operations.modify(s, change),
                              as_json=args.json, quiet=args.quiet)
    from k8s_mgmt_lab.conductor import lcm_upgrade
    settings = settings_mod.LabSettings(state_dir=args.state_dir)
    reporting.show_progress(args.quiet or args.json)
    with reporting.reported('certs ' + args.action, settings):
        inst_id, seconds = lcm_upgrade.patch_metadata(settings, change)
    if args.json:
        print(json.dumps({'vnf_instance_id': inst_id, 'action': args.action,
                          'seconds': round(seconds, 1)}, indent=2,
                         sort_keys=True))
    else:
        print('certificates of VNF instance %s: %s done in %.1f s'
              % (inst_id, args.action, seconds))
    return 0
