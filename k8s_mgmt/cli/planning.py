"""A dry run from request bodies: the context and facts ``k8s-mgmt plan``
hands to :func:`k8s_mgmt.modes.catalog.plan`.

The context is built by the same code as a hook call's
(:func:`k8s_mgmt.context.build`), so the parameters are validated exactly
as the driver validates them. The facts say what the plan assumes the
phases would read; by default what a first run of the operation finds
(instantiate: no node has joined; scale-out: every node but the new ones
is Ready; heal_end: every node but the healed ones is Ready).
"""

import dataclasses

from k8s_mgmt import context as ctx_mod
from k8s_mgmt import exceptions
from k8s_mgmt.engine import run as run_mod
from k8s_mgmt.modes import catalog
from k8s_mgmt.params import casing
from k8s_mgmt.tacker_objects import field
from k8s_mgmt.topology import model

# Command-line name -> (context operation, hook); heal picks whole-VNF or
# VNFC from the request.
OPERATIONS = {
    'instantiate': ('instantiate', 'instantiate_end'),
    'scale-out': ('scale_out', 'scale_end'),
    'scale-in': ('scale_in', 'scale_start'),
    'scale-out-rollback': ('scale_out_rollback', 'scale_start'),
    'heal-start': ('heal', 'heal_start'),
    'heal-end': ('heal', 'heal_end'),
    'terminate': ('terminate', 'terminate_end'),
    # The metadata PATCH's hook (k8sMgmtUpgrade: --to;
    # k8sMgmtCertificates: check or renew).
    'upgrade': ('upgrade', 'modify_information_end'),
    'certs-check': ('certs_check', 'modify_information_end'),
    'certs-renew': ('certs_renew', 'modify_information_end'),
}
PLANNED = '<from Heat>'


class PlanError(exceptions.MgmtDriverError):
    message = 'Cannot plan: %(reason)s'


def snake_request(body):
    """A SOL003 request body (camelCase) with top-level snake_case keys,
    as Tacker's objects name them."""
    return {casing.camel_to_snake(k): v for k, v in (body or {}).items()}


def _node(data):
    fields = {f.name for f in dataclasses.fields(model.Node)}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise PlanError(reason='topology node has unknown field(s) %s'
                               % ', '.join(unknown))
    data = dict(data)
    data['server_groups'] = tuple(data.get('server_groups') or ())
    try:
        return model.Node(**data)
    except TypeError as err:
        raise PlanError(reason='topology node: %s' % err) from None


def topology_from_dict(data):
    """A :class:`~k8s_mgmt.topology.model.Topology` from its ``to_dict``."""
    if not isinstance(data, dict) or 'stack_id' not in data:
        raise PlanError(reason='a topology is a JSON object with stack_id, '
                               'masters and workers')
    groups = tuple(
        model.ServerGroup(g['resource_name'], g['group_id'],
                          tuple(g.get('policies') or ()),
                          tuple(g.get('members') or ()))
        for g in data.get('server_groups') or ())
    volumes = tuple(model.Volume(**v) for v in data.get('volumes') or ())
    nodes = {role: tuple(_node(n) for n in data.get(role) or ())
             for role in ('masters', 'workers', 'storage', 'lbs', 'ansible')}
    return model.Topology(stack_id=data['stack_id'], vip=data.get('vip'),
                          vip_fip=data.get('vip_fip'), volumes=volumes,
                          server_groups=groups, **nodes)


def with_new_workers(topology, count):
    """The topology after a scale-out of ``count`` workers Heat has not
    made yet: placeholder nodes, and their member stack ids."""
    template = topology.workers[-1] if topology.workers else None
    new = []
    for index in range(1, count + 1):
        new.append(model.Node(
            role='worker', name='new-worker-%d' % index,
            server_id='%s (new worker %d)' % (PLANNED, index),
            vnfc_id=None, resource_name=(template.resource_name
                                         if template else 'workerNode'),
            stack_id='planned-member-%d' % index, parent_resource=None,
            ssh_ip=PLANNED, nic_ip=PLANNED, compute_host=None,
            server_groups=template.server_groups if template else (),
            status='CREATE_COMPLETE'))
    return (dataclasses.replace(topology, workers=topology.workers +
                                tuple(new)),
            [n.stack_id for n in new])


def member_names(topology, names):
    """Scale-in names: node names are turned into the member resource
    names Tacker passes (``scale_name_list``)."""
    found = []
    for name in names:
        node = topology.by_name(name)
        if node is not None and node.parent_resource:
            found.append(node.parent_resource)
        elif node is not None and node.stack_id:
            found.append(node.stack_id)
        else:
            found.append(name)
    return found


def vnf_instance(vnf_instance_id, instantiate_body, topology):
    """The instance as Tacker would hand it to a hook after instantiate."""
    vnfcs = [{'id': n.vnfc_id,
              'compute_resource': {'resource_id': n.server_id}}
             for n in topology.masters + topology.workers if n.vnfc_id]
    return {'id': vnf_instance_id, 'instantiated_vnf_info': {
        'flavour_id': instantiate_body.get('flavourId'),
        'instance_id': topology.stack_id,
        'additional_params': instantiate_body.get('additionalParams') or {},
        'vnfc_resource_info': vnfcs}}


def context_for(name, instantiate_body, topology, request_body=None,
                vnf_instance_id='plan', package_dir=None, scale_out_ids=(),
                scale_names=(), upgrade_target=None, max_unavailable=0):
    """The OperationContext the hook call of ``name`` would build."""
    if name not in OPERATIONS:
        raise PlanError(reason='unknown operation %r (one of: %s)'
                               % (name, ', '.join(OPERATIONS)))
    operation, hook = OPERATIONS[name]
    instance = vnf_instance(vnf_instance_id, instantiate_body, topology)
    kwargs = {'vnf_package_path': package_dir,
              'scale_out_id_list': list(scale_out_ids),
              'scale_name_list': list(scale_names),
              'upgrade_target': upgrade_target,
              'max_unavailable': max_unavailable}
    if operation == 'upgrade' and not upgrade_target:
        raise PlanError(reason='an upgrade needs its target (--to)')
    if operation == 'instantiate':
        request = snake_request(instantiate_body)
        return ctx_mod.build(
            operation, hook, None, instance, request, None, kwargs,
            additional_params=request.get('additional_params') or {})
    request = snake_request(request_body)
    if operation == 'heal':
        operation = ('heal_vnfc' if request.get('vnfc_instance_id')
                     else 'heal_vnf')
    return ctx_mod.build(operation, hook, None, instance, request, None,
                         kwargs, overrides=request.get('additional_params'))


def default_facts(ctx, topology, ready=None, unreachable=(),
                  vip_prefix=None):
    """What the plan assumes: ``ready`` when given, else what a first run
    finds (see the module's doc)."""
    if ready is None:
        names = {n.name for n in topology.all_nodes()}
        if ctx.operation in ('instantiate', 'heal_vnf'):
            ready = set()
        elif ctx.operation == 'scale_out':
            ready = names - {topology.by_stack_id(i).name
                             for i in ctx.scale_out_ids
                             if topology.by_stack_id(i) is not None}
        elif ctx.operation == 'heal_vnfc' and ctx.hook == 'heal_end':
            ids = set(field(ctx.request, 'vnfc_instance_id') or ())
            ready = {n.name for n in topology.all_nodes()
                     if n.vnfc_id not in ids}
        else:
            ready = names
    return run_mod.Facts(topology=topology, ready=frozenset(ready),
                         unreachable=frozenset(unreachable),
                         vip_prefix=vip_prefix)


def plan(ctx, facts):
    return catalog.plan(ctx, facts)
