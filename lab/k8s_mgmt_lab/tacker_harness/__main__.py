"""``python -m k8s_mgmt_lab.tacker_harness instantiate --state-dir D``."""

import argparse
import contextlib
import json
import sys

from oslo_config import cfg
from oslo_log import log as logging

from k8s_mgmt_lab import manager

LOG = logging.getLogger('k8s_mgmt_lab.tacker_harness')


def parse(argv):
    parser = argparse.ArgumentParser(
        prog='python -m k8s_mgmt_lab.tacker_harness',
        description='Tacker\'s own conductor against a lab brought up with '
                    '"lab up --no-stack"')
    verbs = parser.add_subparsers(dest='verb', required=True)
    inst = verbs.add_parser('instantiate', help='onboard the lab\'s CSAR '
                            'and instantiate it through Tacker')
    inst.add_argument('--state-dir', default=manager.DEFAULT_STATE_DIR)
    inst.add_argument('--request', metavar='FILE',
                      help='InstantiateVnfRequest body (JSON; default: the '
                           'one the lab was brought up with)')
    inst.add_argument('--name', help='vnfInstanceName')
    inst.add_argument('--debug', action='store_true')
    return parser.parse_args(argv)


def setup_logging(debug):
    logging.register_options(cfg.CONF)
    logging.set_defaults(default_log_levels=logging.get_default_log_levels()
                         + ['stevedore=WARN', 'glance_store=WARN'])
    cfg.CONF.set_override('debug', debug)
    cfg.CONF.set_override('use_stderr', True)
    logging.setup(cfg.CONF, 'k8s-mgmt-tacker-harness')


def main(argv=None):
    args = parse(argv)
    setup_logging(args.debug)
    from k8s_mgmt_lab.tacker_harness import report as report_mod
    from k8s_mgmt_lab.tacker_harness import run
    body = None
    if args.request:
        with open(args.request) as handle:
            body = json.load(handle)
    settings = manager.LabSettings(state_dir=args.state_dir)
    try:
        # Standard output is the report's: what Tacker prints on the way
        # (its OpenStack infra driver prints the UserData class) goes to
        # standard error with the log.
        with contextlib.redirect_stdout(sys.stderr):
            report = run.instantiate(settings, request_body=body,
                                     name=args.name)
    except Exception:
        LOG.exception('instantiate through Tacker failed')
        return 1
    print(report_mod.dump(report))
    return 0 if report_mod.cluster_ready(report) else 1


if __name__ == '__main__':
    sys.exit(main())
