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
# Tacker 16's OpenStack infra drivers name their stacks so: v1's
# ``vnflcm_<id>``, v2's ``vnf-<id>``.
STACK_PREFIXES = {'v1': 'vnflcm_', 'v2': 'vnf-'}


def vnfcs(instance, api='v1'):
    """[{id, vdu_id, server}] of a VNF instance as Tacker's ``api`` shows
    it (``server``: the Nova server id, None when Tacker names none). The
    id is what a heal request names: v1's vnfcResourceInfo id, v2's
    vnfcInfo id (``<VDU>-<server id>``; v1 lists vnfcInfo too, whose ids a
    v1 heal does not take)."""
    info = instance.get('instantiatedVnfInfo') or {}
    if api == 'v2':
        # A terminated v2 instance keeps a stub without VNFCs.
        return [{'id': v['id'], 'vdu_id': v.get('vduId'),
                 'server': v.get('vnfcResourceInfoId')}
                for v in info.get('vnfcInfo') or []]
    return [{'id': v['id'], 'vdu_id': v.get('vduId'),
             'server': (v.get('computeResource') or {}).get('resourceId')}
            for v in info.get('vnfcResourceInfo') or []]


def vnfc_ids(instance, api='v1'):
    """{server id: VNFC id} of a VNF instance as Tacker's API shows it."""
    return {v['server']: v['id'] for v in vnfcs(instance, api)
            if v['server']}


def find_stack(record, instance_id):
    """(id, name) of Tacker's stack for the instance in the lab's Heat,
    or None."""
    prefix = STACK_PREFIXES[record.get('api') or 'v1']
    # Heat answers a stack's name with a redirect to its name/id.
    stack = status_mod.lab_stacks(record).show(prefix + instance_id)
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
                           % (STACK_PREFIXES[record.get('api') or 'v1'],
                              instance['id']))
        record['stack_id'], record['stack_name'] = found
        record['vnfc_ids'] = vnfc_ids(instance, record.get('api') or 'v1')
        record.pop('terminated', None)
    else:
        # Not instantiated: terminated (no stack), or an instantiate that
        # ended FAILED_TEMP, whose VMs Heat still has and Tacker names in
        # no VNFC: the lab's tools (status, exec, kill) reach them until
        # a rollback or a retry.
        found = find_stack(record, instance['id'])
        record['stack_id'], record['stack_name'] = found or (None, None)
        record['vnfc_ids'] = {}
    manager.write_record(settings.lab_file, record)
    return record
