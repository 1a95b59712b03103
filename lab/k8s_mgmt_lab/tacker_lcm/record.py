"""The lab record (``D/lab.json``) kept in step with the lab's Tacker.

After each operation the record names what Tacker made: ``stack_id`` and
``stack_name`` (Tacker's stack, ``vnflcm_<instance id>``, as the lab's Heat
shows it), ``vnfc_ids`` ({server id: Tacker's VNFC id}) and
``vnf_instance_id``, so that ``lab status`` shows Tacker's VMs and ``lab
kill --vnfc`` takes Tacker's VNFC ids. ``lcm: tacker`` marks a lab driven
by Tacker.
"""

from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import status as status_mod
from k8s_mgmt_lab.errors import LabError

LCM_KEY = 'lcm'
TACKER = 'tacker'
# Tacker 16's v1 OpenStack infra driver names its stack so.
STACK_PREFIX = 'vnflcm_'


def vnfcs(instance):
    """[{id, vdu_id, server}] of a VNF instance as Tacker's API shows it
    (``server``: the Nova server id, None when Tacker names none)."""
    info = instance.get('instantiatedVnfInfo') or {}
    return [{'id': v['id'], 'vdu_id': v.get('vduId'),
             'server': (v.get('computeResource') or {}).get('resourceId')}
            for v in info.get('vnfcResourceInfo') or []]


def vnfc_ids(instance):
    """{server id: VNFC id} of a VNF instance as Tacker's API shows it."""
    return {v['server']: v['id'] for v in vnfcs(instance) if v['server']}


def find_stack(record, instance_id):
    """(id, name) of Tacker's stack for the instance in the lab's Heat,
    or None."""
    # Heat answers a stack's name with a redirect to its name/id.
    stack = status_mod.lab_stacks(record).show(STACK_PREFIX + instance_id)
    return (stack['id'], stack['stack_name']) if stack else None


def follow(settings, instance):
    """Write Tacker's instance, stack and VNFCs into the lab record."""
    record = manager.read_record(settings)
    record[LCM_KEY] = TACKER
    record['vnf_instance_id'] = instance['id']
    if instance.get('instantiationState') == 'INSTANTIATED':
        found = find_stack(record, instance['id'])
        if found is None:
            raise LabError('Tacker\'s stack %s%s is not in the lab\'s Heat'
                           % (STACK_PREFIX, instance['id']))
        record['stack_id'], record['stack_name'] = found
        record['vnfc_ids'] = vnfc_ids(instance)
        record.pop('terminated', None)
    else:
        record.update(stack_id=None, stack_name=None, vnfc_ids={})
    manager.write_record(settings.lab_file, record)
    return record
