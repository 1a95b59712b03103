"""``python -m k8s_mgmt_lab.conductor.tacker_harness VERB --state-dir D ...``.

Verbs: ``instantiate``, ``scale``, ``heal``, ``terminate``. Standard
output is the JSON report alone; progress and logs go to standard error.
"""

import argparse
import contextlib
import json
import sys

from oslo_config import cfg
from oslo_log import log as logging

from k8s_mgmt_lab import manager

LOG = logging.getLogger('k8s_mgmt_lab.conductor.tacker_harness')
# The sample VNFD's aspect of the worker group (lcm_scale.DEFAULT_ASPECT).
DEFAULT_ASPECT = 'worker_instance'


def parse(argv):
    parser = argparse.ArgumentParser(
        prog='python -m k8s_mgmt_lab.conductor.tacker_harness',
        description='Tacker\'s own conductor on the lab\'s VNF')
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument('--state-dir', default=manager.DEFAULT_STATE_DIR)
    common.add_argument('--debug', action='store_true')
    verbs = parser.add_subparsers(dest='verb', required=True)
    inst = verbs.add_parser('instantiate', parents=[common],
                            help='onboard the lab\'s CSAR (first time) and '
                                 'instantiate it through Tacker')
    inst.add_argument('--request', metavar='FILE',
                      help='InstantiateVnfRequest body (JSON; default: the '
                           'one the lab was brought up with)')
    inst.add_argument('--name', help='vnfInstanceName')
    scale = verbs.add_parser('scale', parents=[common])
    scale.add_argument('--type', required=True,
                       choices=('SCALE_OUT', 'SCALE_IN'))
    scale.add_argument('--aspect-id', default=DEFAULT_ASPECT)
    scale.add_argument('--steps', type=int, default=1)
    heal = verbs.add_parser('heal', parents=[common])
    heal.add_argument('--vnfc', metavar='VNFC_ID', action='append',
                      help='Tacker\'s vnfc instance id (repeatable); '
                           'without it the whole VNF')
    heal.add_argument('--keep-volumes', action='store_true',
                      help='additionalParams '
                           'tacker_extension_heal_include_block_storage: '
                           'false')
    heal.add_argument('--recreate-volumes', action='store_true',
                      help='additionalParams storage_volume_recreate: true')
    verbs.add_parser('terminate', parents=[common], help='FORCEFUL')
    return parser.parse_args(argv)


def setup_logging(debug):
    logging.register_options(cfg.CONF)
    logging.set_defaults(default_log_levels=logging.get_default_log_levels()
                         + ['stevedore=WARN', 'glance_store=WARN'])
    cfg.CONF.set_override('debug', debug)
    cfg.CONF.set_override('use_stderr', True)
    logging.setup(cfg.CONF, 'k8s-mgmt-tacker-harness')


def run_verb(args, settings):
    from k8s_mgmt_lab.conductor.tacker_harness import ops
    from k8s_mgmt_lab.conductor.tacker_harness import run
    if args.verb == 'instantiate':
        body = None
        if args.request:
            with open(args.request) as handle:
                body = json.load(handle)
        return run.instantiate(settings, request_body=body, name=args.name)
    if args.verb == 'scale':
        body = ops.scale_body(args.type, args.aspect_id, args.steps)
    elif args.verb == 'heal':
        body = ops.heal_body(args.vnfc or (), args.keep_volumes,
                             args.recreate_volumes)
    else:
        body = ops.terminate_body()
    return run.operate(settings, args.verb, body)


def main(argv=None):
    args = parse(argv)
    setup_logging(args.debug)
    from k8s_mgmt_lab.conductor.tacker_harness import report as report_mod
    settings = manager.LabSettings(state_dir=args.state_dir)
    try:
        # Standard output is the report's: what Tacker prints on the way
        # (its OpenStack infra driver prints the UserData class) goes to
        # standard error with the log.
        with contextlib.redirect_stdout(sys.stderr):
            report = run_verb(args, settings)
    except Exception as err:
        LOG.exception('%s through Tacker failed', args.verb)
        print(json.dumps({'verb': args.verb, 'error': str(err)}))
        return 1
    report['verb'] = args.verb
    print(report_mod.dump(report))
    return 0 if report_mod.cluster_ready(report) else 1


if __name__ == '__main__':
    sys.exit(main())
