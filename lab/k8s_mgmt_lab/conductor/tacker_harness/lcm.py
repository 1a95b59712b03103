"""A VNF instance created and instantiated through Tacker's v1 VNF LCM API
controller and conductor, in this process.

Create follows ``VnfLcmController.create`` (``POST /vnflcm/v1/
vnf_instances``): the VnfInstance from the VNFD row, a VimConnectionInfo
for the default VIM, the ``vnf`` table row (the controller's own
``_create_vnf``) and the package marked IN_USE. Instantiate is the
controller's ``_instantiate`` itself, which validates flavour and VIM,
builds the InstantiateVnfRequest, marks the instance INSTANTIATING, creates
the VnfLcmOpOcc (STARTING) and hands the request to the conductor over RPC:
here :class:`rpc_shim.InProcessRPC` calls ``Conductor.instantiate``
directly, which runs the whole operation before returning.
"""

import copy

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def controller_for(conductor):
    from tacker.api.vnflcm.v1 import controller as lcm_controller
    from k8s_mgmt_lab.conductor.tacker_harness import rpc_shim
    ctl = lcm_controller.VnfLcmController()
    ctl.rpc_api = rpc_shim.InProcessRPC(conductor)
    return ctl


def create_instance(context, ctl, vnfd_id, name):
    """The VNF instance row and its ``vnf`` row; returns the instance."""
    from oslo_utils import uuidutils
    from tacker.db.db_sqlalchemy import models
    from tacker import objects
    from tacker.objects import fields
    from tacker.vnfm import vim_client

    vnfd = objects.VnfPackageVnfd.get_by_id(context, vnfd_id)
    default_vim = vim_client.VimClient().get_vim(context)
    instance = objects.VnfInstance(
        context=context, vnf_instance_name=name,
        vnf_instance_description='instantiated by the k8s-mgmt lab\'s '
                                 'Tacker harness',
        vnfd_id=vnfd_id,
        instantiation_state=fields.VnfInstanceState.NOT_INSTANTIATED,
        vnf_provider=vnfd.vnf_provider,
        vnf_product_name=vnfd.vnf_product_name,
        vnf_software_version=vnfd.vnf_software_version,
        vnfd_version=vnfd.vnfd_version, vnf_pkg_id=vnfd.package_uuid,
        tenant_id=context.project_id, vnf_metadata={})
    instance.create()
    instance.vim_connection_info = [objects.VimConnectionInfo(
        id=uuidutils.generate_uuid(), vim_id=default_vim.get('vim_id'),
        vim_type=default_vim.get('vim_type'), access_info={},
        interface_info={}, extra=default_vim.get('extra', {}))]
    instance.save()
    ctl._create_vnf(context, instance, default_vim,
                    {'placement_attr': default_vim.get('placement_attr',
                                                       {})})
    package = objects.VnfPackage.get_by_id(
        context, vnfd.package_uuid, expected_attrs=[models.VnfPackage.vnfd])
    ctl._update_package_usage_state(context, package)
    LOG.info('VNF instance %s created (VNFD %s, VIM %s)', instance.id,
             vnfd_id, default_vim.get('vim_id'))
    return instance


def request_for_vim(body, vim_id, region=None):
    """The InstantiateVnfRequest body with its VIM connections on the
    registered VIM: a sample names a placeholder VIM id, which an operator
    replaces with their own VIM's; ``region`` (the lab's Keystone region)
    goes in their accessInfo, where Tacker's ``_get_vim`` reads it."""
    body = copy.deepcopy(body)
    for conn in body.get('vimConnectionInfo') or []:
        conn['vimId'] = vim_id
        if region:
            conn.setdefault('accessInfo', {})['region'] = region
    return body


def instantiate(context, ctl, instance_id, body):
    """``POST /vnf_instances/{id}/instantiate``: the controller's own
    checks and op occ, then the conductor (synchronously here). Returns
    the op occ id."""
    from tacker import objects
    vnf = ctl._get_vnf(context, instance_id)
    instance = objects.VnfInstance.get_by_id(context, instance_id)
    from k8s_mgmt_lab.conductor.tacker_harness import ops
    return ops.op_occ_id(ctl._instantiate(context, instance, vnf, body))
