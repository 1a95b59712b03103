"""Scale, heal and terminate through Tacker's v1 VNF LCM controller.

What ``POST /vnf_instances/{id}/scale``, ``/heal`` and ``/terminate`` do
after the policy check: the controller's own ``_scale``, ``_heal`` and
``_terminate`` (state checks, the op occ, the task state), whose RPC cast
:class:`.rpc_shim.InProcessRPC` delivers to the conductor in this process,
synchronously. Each returns the op occ id (from the Location header, as
an API client reads it).
"""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

SCALE_OUT = 'SCALE_OUT'
SCALE_IN = 'SCALE_IN'


class Refused(Exception):
    """The controller answered with an error instead of 202."""


def op_occ_id(response):
    if response.status_int != 202:
        raise Refused('Tacker answered %s: %s' % (
            response.status_int, response.body.decode(errors='replace')))
    location = dict(response.headerlist).get('Location', '')
    return location.rstrip('/').rsplit('/', 1)[-1]


def scale_body(scale_type, aspect_id, steps):
    return {'type': scale_type, 'aspectId': aspect_id,
            'numberOfSteps': steps}


def heal_body(vnfc_ids=(), keep_volumes=False, recreate_volumes=False):
    body = {'cause': 'k8s-mgmt lab heal --tacker'}
    if vnfc_ids:
        body['vnfcInstanceId'] = list(vnfc_ids)
    additional = {}
    if keep_volumes:
        additional['tacker_extension_heal_include_block_storage'] = False
    if recreate_volumes:
        additional['storage_volume_recreate'] = True
    if additional:
        body['additionalParams'] = additional
    return body


def terminate_body():
    return {'terminationType': 'FORCEFUL'}


def scale(context, ctl, instance_id, body):
    """``VnfLcmController.scale`` after its policy check: the VNF (from
    the VNFM plugin) must be ACTIVE and the instance have a scale
    status."""
    from tacker import objects
    vnf_info = ctl._vnfm_plugin.get_vnf(context, instance_id)
    if vnf_info['status'] != 'ACTIVE':
        raise Refused('VNF %s is %s, not ACTIVE'
                      % (instance_id, vnf_info['status']))
    instance = objects.VnfInstance.get_by_id(context, instance_id)
    if not instance.instantiated_vnf_info.scale_status:
        raise Refused('VNF instance %s has no scale status' % instance_id)
    return op_occ_id(ctl._scale(context, instance, vnf_info, body))


def heal(context, ctl, instance_id, body):
    """``VnfLcmController.heal`` after its policy check."""
    from tacker import objects
    vnf = ctl._get_vnf(context, instance_id)
    instance = objects.VnfInstance.get_by_id(context, instance_id)
    if instance.instantiation_state != 'INSTANTIATED' or \
            instance.task_state is not None:
        raise Refused('VNF instance %s is %s (task %s); heal needs it '
                      'INSTANTIATED and idle' % (
                          instance_id, instance.instantiation_state,
                          instance.task_state))
    return op_occ_id(ctl._heal(context, instance, vnf, body))


def terminate(context, ctl, instance_id, body):
    """``VnfLcmController.terminate`` after its policy check."""
    from tacker import objects
    vnf = ctl._get_vnf(context, instance_id)
    instance = objects.VnfInstance.get_by_id(context, instance_id)
    return op_occ_id(ctl._terminate(context, instance, vnf, body))
