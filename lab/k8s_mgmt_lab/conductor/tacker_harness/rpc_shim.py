"""Tacker's RPC casts, delivered to the conductor in this process.

Tacker's API reaches the conductor over oslo.messaging (``VNFLcmRPCAPI``:
a cast per operation, and ``send_notification``; the package API's
``upload_vnf_package_content`` and its ``load_csar_data``). There is no
message bus here, so :func:`deliver` does what a cast does on the way,
then calls the conductor's handler of the same name directly and
synchronously: the context goes through ``to_dict``/``from_dict`` (so the
handler gets a context, and a database session, of its own), and each
argument through Tacker's object serializer and JSON, as on the wire (so
the handler's objects are not the caller's; read the result from the
database).
"""

from oslo_log import log as logging
from oslo_serialization import jsonutils

LOG = logging.getLogger(__name__)


def deliver(conductor, method, context, **kwargs):
    """``conductor.<method>(context, **kwargs)`` as an RPC cast hands it
    over."""
    from tacker.common import rpc
    from tacker import objects
    serializer = rpc.RequestContextSerializer(
        objects.base.TackerObjectSerializer())
    wire = jsonutils.loads(jsonutils.dumps({
        'context': serializer.serialize_context(context),
        'args': {name: serializer.serialize_entity(context, value)
                 for name, value in kwargs.items()}}))
    their_context = serializer.deserialize_context(wire['context'])
    args = {name: serializer.deserialize_entity(their_context, value)
            for name, value in wire['args'].items()}
    LOG.debug('RPC %s delivered in this process', method)
    return getattr(conductor, method)(their_context, **args)


class InProcessRPC(object):
    """Stands in for ``VNFLcmRPCAPI`` (the casts the v1 VNF LCM controller
    makes: instantiate, terminate, heal, scale, rollback and
    send_notification; the same keyword arguments) on one conductor."""

    def __init__(self, conductor):
        self.conductor = conductor

    def instantiate(self, context, vnf_instance, vnf, instantiate_vnf,
                    vnf_lcm_op_occs_id):
        LOG.info('RPC instantiate of VNF instance %s (op occ %s) runs in '
                 'this process', vnf_instance.id, vnf_lcm_op_occs_id)
        return deliver(self.conductor, 'instantiate', context,
                       vnf_instance=vnf_instance, vnf_dict=vnf,
                       instantiate_vnf=instantiate_vnf,
                       vnf_lcm_op_occs_id=vnf_lcm_op_occs_id)

    def terminate(self, context, vnf_instance, vnf, terminate_vnf_req,
                  vnf_lcm_op_occs_id):
        LOG.info('RPC terminate of VNF instance %s (op occ %s) runs in '
                 'this process', vnf_instance.id, vnf_lcm_op_occs_id)
        return deliver(self.conductor, 'terminate', context,
                       vnf_lcm_op_occs_id=vnf_lcm_op_occs_id,
                       vnf_instance=vnf_instance,
                       terminate_vnf_req=terminate_vnf_req, vnf_dict=vnf)

    def heal(self, context, vnf_instance, vnf_dict, heal_vnf_request,
             vnf_lcm_op_occs_id):
        LOG.info('RPC heal of VNF instance %s (op occ %s) runs in this '
                 'process', vnf_instance.id, vnf_lcm_op_occs_id)
        return deliver(self.conductor, 'heal', context,
                       vnf_instance=vnf_instance, vnf_dict=vnf_dict,
                       heal_vnf_request=heal_vnf_request,
                       vnf_lcm_op_occs_id=vnf_lcm_op_occs_id)

    def scale(self, context, vnf_info, vnf_instance, scale_vnf_request):
        LOG.info('RPC scale of VNF instance %s runs in this process',
                 vnf_instance.id)
        return deliver(self.conductor, 'scale', context, vnf_info=vnf_info,
                       vnf_instance=vnf_instance,
                       scale_vnf_request=scale_vnf_request)

    def rollback(self, context, vnf_info, vnf_instance, operation_params):
        LOG.info('RPC rollback of VNF instance %s runs in this process',
                 vnf_instance.id)
        return deliver(self.conductor, 'rollback', context,
                       vnf_info=vnf_info, vnf_instance=vnf_instance,
                       operation_params=operation_params)

    def send_notification(self, context, notification):
        # The conductor looks for subscriptions and POSTs to each; the
        # lab has none, so it finds nothing to send.
        return deliver(self.conductor, 'send_notification', context,
                       notification=notification)
