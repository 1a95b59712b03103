"""``k8s-mgmt lab instantiate`` (LCM on the lab through the driver's hooks)."""

import json
import logging as std_logging
import os
import sys
import traceback

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt.cli import lab_scale
from k8s_mgmt import exceptions
from k8s_mgmt.lab import lcm
from k8s_mgmt.lab import lcm_heal
from k8s_mgmt.lab import LabError
from k8s_mgmt.lab import manager
from k8s_mgmt import secrets

ERROR_LOG = 'lab_lcm.log'


def register(verbs):
    """Add the LCM verbs to the ``k8s-mgmt lab`` parser."""
    inst = verbs.add_parser(
        'instantiate', help='build the Kubernetes cluster on the lab VMs',
        description='Call the driver\'s instantiate_start and instantiate_end '
                    'with the objects and keyword arguments Tacker\'s '
                    'conductor passes, using the sample request of the lab\'s '
                    'flavour; then show the cluster.')
    inst.add_argument('--request', metavar='FILE',
                      help='InstantiateVnfRequest body (JSON) instead of '
                           'the one "lab up" used')
    inst.add_argument('--json', action='store_true',
                      help='print the cluster as JSON')
    inst.add_argument('--quiet', action='store_true',
                      help='no progress lines from the driver on stderr')
    inst.set_defaults(func=cmd_instantiate)
    lcm_heal.register(verbs)        # heal and kill
    lab_scale.register(verbs)       # scale and terminate


def show_progress(quiet):
    """The driver's INFO lines on stderr: what it is doing, node by node."""
    if quiet:
        return
    logger = std_logging.getLogger('k8s_mgmt')
    if not any(getattr(h, '_k8s_mgmt_cli', False) for h in logger.handlers):
        handler = std_logging.StreamHandler(sys.stderr)
        handler.setFormatter(std_logging.Formatter(
            '%(asctime)s %(levelname)s %(message)s', '%H:%M:%S'))
        handler._k8s_mgmt_cli = True
        logger.addHandler(handler)
    logger.setLevel(std_logging.INFO)


def read_request(path):
    if not path:
        return None
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError) as err:
        raise UserError('cannot read request %s: %s' % (path, err))


def _first_line(text, log_path):
    """One line for the terminal; the whole message goes to the log."""
    lines = [line for line in str(text).splitlines() if line.strip()]
    first = lines[0] if lines else type(text).__name__
    if len(lines) > 1:
        try:
            with open(log_path, 'a') as log:
                log.write('\n'.join(lines) + '\n')
            first += ' (%d more lines in %s)' % (len(lines) - 1, log_path)
        except OSError:
            first += ' (%d more lines)' % (len(lines) - 1)
    return first


def run_instantiate(settings, request_body=None, driver=None,
                    log_path=None):
    """lcm.instantiate + the cluster report; every failure a UserError."""
    log_path = log_path or os.path.join(settings.state_dir, ERROR_LOG)
    try:
        result = lcm.instantiate(settings, driver=driver,
                                 request_body=request_body)
        return lcm.cluster_report(result)
    except LabError as err:
        raise UserError(_first_line(err, log_path))
    except exceptions.MgmtDriverError as err:
        raise UserError('instantiate failed: %s'
                        % _first_line(secrets.redact(str(err)), log_path))
    except Exception as err:  # a driver bug: one line here, details in a log
        detail = secrets.redact(traceback.format_exc())
        _first_line('-\n' + detail, log_path)
        raise UserError('instantiate failed: %s: %s (traceback in %s)'
                        % (type(err).__name__,
                           _first_line(secrets.redact(str(err)), log_path),
                           log_path))


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
    settings = manager.LabSettings(state_dir=args.state_dir)
    body = read_request(args.request)
    show_progress(args.quiet or args.json)
    report = run_instantiate(settings, request_body=body)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print_cluster(report)
    return 0
