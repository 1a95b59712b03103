"""``--tacker`` on the lab's LCM verbs: Tacker's own conductor, run by
:mod:`k8s_mgmt_lab.conductor.tacker_harness` in a process of its own.

Tacker is never imported here (its imports, eventlet among them, break
the threaded servers a CLI process may share). The harness's standard
error (its progress and log) goes through to ours; its standard output is
the JSON report, which is printed as a short summary or, with ``--json``,
as it is. The exit status is the harness's.
"""

import importlib.util
import json
import subprocess
import sys

from k8s_mgmt.cli.errors import UserError

HARNESS = 'k8s_mgmt_lab.conductor.tacker_harness'
EXTRA = 'k8s-mgmt[tacker]'


def add_flag(parser):
    parser.add_argument('--tacker', action='store_true',
                        help='run the operation through Tacker\'s own v1 '
                             'VNF LCM code (needs pip install \'%s\')'
                             % EXTRA)


def require_tacker():
    if importlib.util.find_spec('tacker') is None:
        raise UserError('--tacker needs Tacker in this Python (%s); '
                        'install it with: pip install \'%s\''
                        % (sys.executable, EXTRA))


def command(verb, state_dir, extra=()):
    return [sys.executable, '-m', HARNESS, verb, '--state-dir', state_dir,
            *extra]


def summary_lines(report):
    """A few lines a person reads: the op occ, the VNFCs, the nodes."""
    if 'operation_state' not in report:
        return ['%s through Tacker failed: %s'
                % (report.get('verb'), report.get('error'))]
    lines = ['VNF instance %s: %s; %s op occ %s %s' % (
        report['vnf_instance_id'], report['instantiation_state'],
        report.get('operation'), report['op_occ_id'],
        report['operation_state'])]
    if report.get('error'):
        lines.append('  error: %s' % report['error'])
    info = report.get('instantiated_vnf_info') or {}
    if info.get('stack_id'):
        lines.append('stack %s' % info['stack_id'])
    for vnfc in info.get('vnfc_resource_info', []):
        lines.append('  VNFC %s  %-12s server %s' % (
            vnfc['id'], vnfc['vdu_id'], vnfc['server']))
    cluster = report.get('cluster')
    if cluster:
        lines.append('Kubernetes %s (VIM %s)' % (cluster['endpoint'],
                                                 cluster['vim_id']))
        for node in cluster['nodes']:
            lines.append('  %-24s %-8s %s' % (
                node['name'], 'Ready' if node['ready'] else 'NotReady',
                ','.join(node['roles']) or '-'))
    if report.get('cluster_error'):
        lines.append('cluster unreadable: %s' % report['cluster_error'])
    seconds = report.get('seconds') or {}
    if seconds:
        lines.append(', '.join('%s %.1f s' % item
                               for item in sorted(seconds.items())))
    return lines


def run(verb, state_dir, extra=(), as_json=False, quiet=False):
    """The harness's ``verb``; its exit status. ``quiet``: its
    standard error is dropped."""
    require_tacker()
    proc = subprocess.run(command(verb, state_dir, extra),
                          stdout=subprocess.PIPE, text=True,
                          stderr=subprocess.DEVNULL if quiet else None)
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        raise UserError('the Tacker harness (exit status %d) printed no '
                        'report' % proc.returncode)
    if as_json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print('\n'.join(summary_lines(report)))
    return proc.returncode
