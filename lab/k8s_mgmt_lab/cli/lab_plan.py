"""``k8s-mgmt lab plan``: what an operation would do on the lab's instance.

The same walk as ``k8s-mgmt plan`` (the driver's own phases, nothing
connected, nothing written), with the lab's request, its topology read
from the lab's Heat, the instance's driver state, and the nodes the
cluster's API reports Ready when the lab's cluster is up. The verb
imports the driver's and the lab's modules when it runs.
"""

import os

from k8s_mgmt.cli import plan as plan_cli
from k8s_mgmt_lab import settings as settings_mod


def register(verbs):
    parser = verbs.add_parser(
        'plan', help='print the phases an operation would run on the lab',
        description='Walk the driver\'s phases of an operation on the lab\'s '
                    'instance without connecting: per phase the nodes and '
                    'the commands that would run, in order, parallel groups '
                    'marked, secrets masked. The titles are the "==>" lines '
                    'the real run logs.')
    plan_cli.add_arguments(parser)
    parser.set_defaults(func=cmd_plan)


def ready_nodes(settings, inst_id):
    """Names of the Ready nodes of the lab's cluster; None when it has no
    cluster yet (no VIM config from an instantiate)."""
    from k8s_mgmt import state as state_mod
    from k8s_mgmt.kube import client as kube_client
    from k8s_mgmt_lab.conductor import lcm
    path = os.path.join(lcm.driver_state_dir(settings), inst_id,
                        state_mod.VIM_CONFIG)
    if not os.path.exists(path):
        return None
    vim = lcm.load_yaml(path)
    with kube_client.ClusterAPI(vim['auth_url'], vim['bearer_token'],
                                vim['ssl_ca_cert']) as api:
        return {name for name, s in api.nodes().items() if s.ready}


def cmd_plan(args):
    from k8s_mgmt_lab import manager
    from k8s_mgmt_lab.conductor import lcm
    from k8s_mgmt_lab.conductor import status as status_mod
    settings = settings_mod.LabSettings(state_dir=args.state_dir)
    record = lcm.read_lab(settings)
    body = manager.lab_request(record)
    if args.operation == 'instantiate' and args.request:
        body = plan_cli.read_json(args.request, 'request')
    # The instance id a first instantiate will make is not known yet; the
    # driver has no state for it either way.
    inst_id = record.get('vnf_instance_id') or 'lab-not-instantiated'
    lcm.use_driver_state_dir(settings)
    if args.package_dir is None and os.path.isdir(lcm.package_dir(settings)):
        args.package_dir = lcm.package_dir(settings)
    args.vnf_instance_id = inst_id
    if args.ready is None and record.get('vnf_instance_id'):
        ready = ready_nodes(settings, inst_id)
        if ready is not None:
            args.ready = ','.join(sorted(ready))
    topology = status_mod.read_topology(record)
    plan_cli.show(plan_cli.plan_for(args, body, topology), args.json)
    return 0
