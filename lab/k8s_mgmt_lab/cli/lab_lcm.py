"""``k8s-mgmt lab instantiate`` (LCM on the lab through the driver's hooks).

The verb imports the lab's modules it needs when it runs.
"""

import json

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt_lab import settings as settings_mod
from k8s_mgmt_lab.cli import lab_tacker
from k8s_mgmt_lab.cli import reporting


def register(verbs):
    """Add the LCM verbs to the ``k8s-mgmt lab`` parser."""
    inst = verbs.add_parser(
        'instantiate', help='build the Kubernetes cluster on the lab VMs',
        description='On a lab that runs Tacker: onboard the lab\'s package, '
                    'create the VNF instance and instantiate it through '
                    'Tacker\'s v1 API with the request "lab up" recorded '
                    '(its VIM made the lab\'s registered VIM), waiting for '
                    'the operation occurrence. On a lab on a shared control '
                    'plane (no Tacker): call the driver\'s instantiate_start '
                    'and instantiate_end as Tacker\'s conductor does. Then '
                    'show the cluster.')
    inst.add_argument('--request', metavar='FILE',
                      help='InstantiateVnfRequest body (JSON) instead of '
                           'the one "lab up" used')
    inst.add_argument('--json', action='store_true',
                      help='print the cluster as JSON')
    inst.add_argument('--quiet', action='store_true',
                      help='no progress lines from the driver on stderr')
    inst.set_defaults(func=cmd_instantiate)
    lab_tacker.add_recovery_verbs(verbs)


def read_request(path):
    if not path:
        return None
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError) as err:
        raise UserError('cannot read request %s: %s' % (path, err))


def run_instantiate(settings, request_body=None, driver=None,
                    log_path=None):
    """lcm.instantiate + the cluster's (or the registry's) report; every
    failure a UserError."""
    from k8s_mgmt_lab.conductor import lcm
    with reporting.reported('instantiate', settings, log_path):
        result = lcm.instantiate(settings, driver=driver,
                                 request_body=request_body)
        if result.flavour == 'registry':
            return lcm.registry_report(result)
        return lcm.cluster_report(result)


def print_registry(report):
    print('registry of VNF instance %s: %s (%s)'
          % (report['vnf_instance_id'], report['url'],
             report['certificate']))
    print('CA SHA-256 %s; clients trust the CA in %s'
          % (report['ca_sha256'], report['record']))
    seconds = report['seconds']
    print('instantiate_start %.2f s, instantiate_end %.2f s'
          % (seconds['instantiate_start'], seconds['instantiate_end']))


def print_cluster(report, vip=None):
    print('cluster of VNF instance %s (flavour %s)'
          % (report['vnf_instance_id'], report['flavour']))
    print('VIM endpoint %s' % report['vim_endpoint'])
    if vip:
        print('VIP %s' % vip)
    print('kubeconfig %s' % report['kubeconfig'])
    print('VIM config %s' % report['vim_config'])
    ready = sum(1 for n in report['nodes'] if n['ready'])
    print('nodes: %d, Ready: %d' % (len(report['nodes']), ready))
    for node in report['nodes']:
        print('  %-24s %-8s %s' % (node['name'],
                                   'Ready' if node['ready'] else 'NotReady',
                                   ','.join(node['roles']) or '-'))
    seconds = report['seconds']
    print('instantiate_start %.2f s, instantiate_end %.2f s'
          % (seconds['instantiate_start'], seconds['instantiate_end']))


def cmd_instantiate(args):
    body = read_request(args.request)
    if lab_tacker.drives(args.state_dir):
        from k8s_mgmt_lab.tacker_lcm import operations
        return lab_tacker.run(
            'instantiate', args.state_dir,
            lambda s: operations.instantiate(s, request_body=body),
            as_json=args.json, quiet=args.quiet)
    settings = settings_mod.LabSettings(state_dir=args.state_dir)
    reporting.show_progress(args.quiet or args.json)
    report = run_instantiate(settings, request_body=body)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    elif 'url' in report:
        print_registry(report)
    else:
        print_cluster(report)
    return 0
