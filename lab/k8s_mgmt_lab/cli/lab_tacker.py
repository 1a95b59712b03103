"""The LCM verbs on a lab that runs Tacker: each goes through Tacker's v1
REST API (:mod:`k8s_mgmt_lab.tacker_lcm.operations`) and prints what
Tacker reports, the VNFCs, and the cluster's nodes as the lab sees them.

A lab runs Tacker when it has a control plane of its own; on a shared
control plane the verbs call the driver's hooks from the lab itself
(:mod:`k8s_mgmt_lab.conductor.lcm`), and say so. Each verb imports the
lab's modules it needs when it runs.
"""

import json

from k8s_mgmt_lab import settings as settings_mod
from k8s_mgmt_lab.cli import reporting


def drives(state_dir):
    """Whether the lab in ``state_dir`` runs Tacker."""
    record = settings_mod.read_record(
        settings_mod.LabSettings(state_dir=state_dir))
    return bool(record and record.get('tacker'))


def add_recovery_verbs(verbs):
    """``lab retry``, ``lab rollback`` and ``lab fail``: Tacker's own
    ways out of FAILED_TEMP; ``lab cancel``, its way into it from a
    PROCESSING operation no conductor runs any more."""
    helps = {
        'retry': 'run the FAILED_TEMP operation again from where it failed',
        'rollback': 'undo a FAILED_TEMP instantiate or scale out',
        'fail': 'give a FAILED_TEMP operation up (FAILED)',
        'cancel': 'mark a PROCESSING operation whose conductor died '
                  'FAILED_TEMP (once [vnf_lcm] operation_timeout passed)'}
    for verb, text in helps.items():
        parser = verbs.add_parser(
            verb, help=text + ' (Tacker\'s API)',
            description='POST /vnflcm/v1/vnf_lcm_op_occs/{id}/%s on the '
                        'lab\'s Tacker, then wait for the occurrence.' % verb)
        parser.add_argument('--op-id', help='the operation occurrence '
                                            '(default: the lab\'s last)')
        parser.add_argument('--json', action='store_true')
        parser.add_argument('--quiet', action='store_true',
                            help='no progress lines from the driver')
        parser.set_defaults(func=cmd_recover, verb=verb)


def conductor_log(state_dir):
    """The first tacker-conductor's log, where the driver's lines go."""
    return conductor_logs(state_dir)[0]


def conductor_logs(state_dir):
    """Every tacker-conductor's log, first to last: an operation runs on
    any one of them."""
    from k8s_mgmt_lab.tacker_lcm import logs
    return logs.conductor_logs(state_dir)


def run(verb, state_dir, call, as_json=False, quiet=False):
    """``call(settings)`` (one of :mod:`.operations`), reported; the
    driver's progress lines on stderr unless ``quiet`` or ``as_json``."""
    from k8s_mgmt_lab.tacker_lcm import logs
    from k8s_mgmt_lab.tacker_lcm import progress
    settings = settings_mod.LabSettings(state_dir=state_dir)
    with reporting.reported(verb, settings):
        if quiet or as_json:
            outcome = call(settings)
        else:
            with progress.ConductorProgress(logs.driver_logs(state_dir)):
                outcome = call(settings)
        report = report_of(settings, outcome)
    if as_json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print('\n'.join(summary_lines(report)))
    return 0


def cmd_recover(args):
    from k8s_mgmt_lab.tacker_lcm import operations
    calls = {'retry': operations.retry, 'rollback': operations.rollback,
             'fail': operations.fail, 'cancel': operations.cancel}
    return run(args.verb, args.state_dir,
               lambda s: calls[args.verb](s, args.op_id), args.json,
               args.quiet)


def report_of(settings, outcome):
    """What Tacker says of the instance and the operation, and the
    cluster's nodes read from the lab's masters."""
    from k8s_mgmt_lab.conductor import status as status_mod
    from k8s_mgmt_lab.tacker_lcm import record as record_mod
    instance = outcome.instance
    info = instance.get('instantiatedVnfInfo') or {}
    report = {
        'vnf_instance_id': instance['id'],
        'instantiation_state': instance.get('instantiationState'),
        'operation': outcome.operation, 'op_occ_id': outcome.op_id,
        'operation_state': outcome.state,
        'seconds': round(outcome.seconds, 1),
        'flavour': info.get('flavourId'),
        'vnfcs': record_mod.vnfcs(
            instance, (settings_mod.read_record(settings) or {}).get('api')
            or 'v1'),
    }
    kube = status_mod.lab_status(settings, check_ssh=False).get(
        'kubernetes') if info else None
    if kube:
        report['cluster'] = {'endpoint': kube.get('server'),
                             'nodes': kube.get('nodes', []),
                             'error': kube.get('error')}
    return report


def summary_lines(report):
    lines = ['VNF instance %s: %s; %s op occurrence %s %s in %.1f s' % (
        report['vnf_instance_id'], report['instantiation_state'],
        report['operation'], report['op_occ_id'], report['operation_state'],
        report['seconds'])]
    for vnfc in report['vnfcs']:
        lines.append('  VNFC %s  %-14s server %s' % (
            vnfc['id'], vnfc['vdu_id'], vnfc['server']))
    cluster = report.get('cluster')
    if cluster:
        lines.append('Kubernetes %s' % cluster['endpoint'])
        for node in cluster['nodes']:
            lines.append('  %-24s %-8s %s' % (
                node['name'], 'Ready' if node['ready'] else 'NotReady',
                ','.join(node['roles']) or '-'))
        if cluster.get('error'):
            lines.append('  API: %s' % cluster['error'])
    return lines
