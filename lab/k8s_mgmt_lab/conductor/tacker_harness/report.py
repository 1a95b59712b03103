"""What Tacker's database says about the instance and its op occ."""

import json

COMPLETED = 'COMPLETED'
INSTANTIATED = 'INSTANTIATED'


def _vnfc(vnfc):
    compute = vnfc.compute_resource
    return {'id': vnfc.id, 'vdu_id': vnfc.vdu_id,
            'server': compute.resource_id if compute else None,
            'stack': (vnfc.metadata or {}).get('stack_id')}


def summary(context, instance_id, op_occ_id):
    from tacker import objects
    instance = objects.VnfInstance.get_by_id(context, instance_id)
    op_occ = objects.VnfLcmOpOcc.get_by_id(context, op_occ_id)
    info = instance.instantiated_vnf_info
    report = {
        'vnf_instance_id': instance.id,
        'instantiation_state': instance.instantiation_state,
        'task_state': instance.task_state,
        'op_occ_id': op_occ.id,
        'operation': op_occ.operation,
        'operation_state': op_occ.operation_state,
        'error': (op_occ.error.detail if op_occ.obj_attr_is_set('error')
                  and op_occ.error else None),
    }
    if info is not None and info.obj_attr_is_set('flavour_id'):
        report['instantiated_vnf_info'] = {
            'flavour_id': info.flavour_id,
            'stack_id': info.instance_id,
            'vnfc_resource_info': [_vnfc(v)
                                   for v in info.vnfc_resource_info],
            'scale_status': [{'aspect_id': s.aspect_id,
                              'scale_level': s.scale_level}
                             for s in info.scale_status or []],
        }
    return report


def succeeded(report):
    """The op occ COMPLETED (and, but after a terminate, the instance
    INSTANTIATED)."""
    if report['operation_state'] != COMPLETED:
        return False
    return (report.get('operation') == 'TERMINATE' or
            report['instantiation_state'] == INSTANTIATED)


def cluster_ready(report):
    """Succeeded, and (when instantiated) every node of the cluster
    Ready."""
    from k8s_mgmt_lab.conductor.tacker_harness import cluster as cluster_mod
    if not succeeded(report):
        return False
    if report['instantiation_state'] != INSTANTIATED:
        return True
    return cluster_mod.all_ready(report.get('cluster'))


def dump(report):
    return json.dumps(report, indent=2, sort_keys=True, default=str)
