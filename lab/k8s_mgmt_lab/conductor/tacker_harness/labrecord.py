"""The lab record (``D/lab.json``) kept in step with Tacker's database.

After each operation the record names what Tacker made, so that ``lab
status`` shows Tacker's stack and VMs and ``lab kill --vnfc`` takes
Tacker's VNFC ids: ``stack_id`` and ``stack_name`` (Tacker's stack, as
its Heat shows it), ``vnfc_ids`` ({server id: Tacker's vnfc id}) and
``vnf_instance_id``. ``lcm: tacker`` marks the lab as driven by Tacker:
the lab's own conductor (``lab instantiate/scale/heal/terminate`` without
``--tacker``) refuses it, and the harness refuses a lab that conductor
instantiated.
"""

from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import status as status_mod
from k8s_mgmt_lab.conductor.lcm import LCM_KEY, TACKER
from k8s_mgmt_lab.errors import LabError


def check_ours(record):
    """LabError unless no conductor, or Tacker, drives the lab's VNF."""
    if record.get('vnf_instance_id') and record.get(LCM_KEY) != TACKER:
        raise LabError(
            'the lab\'s VNF instance %s was instantiated by the lab\'s own '
            'conductor, not Tacker; run its verbs without --tacker, or '
            '"lab down" and "lab up" again' % record['vnf_instance_id'])


def vnfc_ids(report):
    """{server id: vnfc id} from a :func:`.report.summary`."""
    info = report.get('instantiated_vnf_info') or {}
    return {v['server']: v['id'] for v in info.get('vnfc_resource_info', [])
            if v.get('server')}


def follow(settings, report):
    """Write Tacker's instance, stack and VNFCs into the lab record."""
    record = manager.read_record(settings)
    record[LCM_KEY] = TACKER
    record['vnf_instance_id'] = report['vnf_instance_id']
    info = report.get('instantiated_vnf_info')
    stack_id = info.get('stack_id') if info else None
    if report['instantiation_state'] == 'INSTANTIATED' and stack_id:
        stack = status_mod.lab_stacks(record).show(stack_id)
        if stack is None:
            raise LabError('Tacker\'s stack %s is not in the lab\'s Heat'
                           % stack_id)
        record['stack_id'] = stack_id
        record['stack_name'] = stack['stack_name']
        record['vnfc_ids'] = vnfc_ids(report)
        record.pop('terminated', None)
    elif report['instantiation_state'] == 'NOT_INSTANTIATED':
        record.update(stack_id=None, stack_name=None, vnfc_ids={})
        if report.get('operation') == 'TERMINATE':
            record['terminated'] = True
    manager.write_record(settings.lab_file, record)
    return record


def delete_prebuilt_stack(settings, record):
    """Delete the stack ``lab up`` built (through the lab's Heat, until
    Heat no longer knows it), so that Tacker creates its own."""
    if not record.get('stack_id'):
        return None
    if record.get('vnf_instance_id'):
        raise LabError('the lab\'s stack %s belongs to VNF instance %s'
                       % (record['stack_id'], record['vnf_instance_id']))
    stack_id = record['stack_id']
    status_mod.lab_stacks(record).delete_and_wait(
        status_mod.stack_path(record))
    record.update(stack_id=None, stack_name=None, vnfc_ids={})
    manager.write_record(settings.lab_file, record)
    return stack_id
