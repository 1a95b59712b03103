"""The driver's operations run from v2 hooks: the same phases as under v1.

Each v2 hook builds the driver's :class:`~k8s_mgmt.context.OperationContext`
from what Tacker's v2 conductor sent, the way the lab's conductor builds it
from plain dicts (the request and the instance in the v1 shape the context
reads, the VIM as an auth dict, the package's copy as the package path),
and runs the same operation as the v1 driver (:func:`k8s_mgmt.modes.catalog.
run`). What differs is only where things come from:

* **the cluster parameters**: v2 keeps no instantiate additionalParams, so
  the validated ``k8s_cluster_installation_param`` is kept with the
  instance's shared state (sealed, :mod:`k8s_mgmt.shared_state`, file
  ``request_params.json``), and a scale or heal request carries only what
  it changes, never a password;
* **the shared state** lives in the instance's ``metadata``, which the hook
  returns (Tacker saves it when the operation completes);
* **which VMs a scale or heal concerns**: the grant's ``removeResources``
  (scale-in, heal), the first VNFCs of the workers' VDU after a scale-out
  (Tacker lists the newest first);
* **terminate** runs in ``terminate_start``: at ``terminate_end`` Tacker
  has already deleted the stack and emptied the VIM connection.

:mod:`k8s_mgmt.v2.modify` holds the hooks that change an instantiated
cluster's information or package (an upgrade, the certificates).

The hook table (:mod:`k8s_mgmt.v2.hooks`) maps each hook a v2 VNFD names
to one of these, or to nothing where v2 leaves the driver nothing to do.
"""

import dataclasses
import json

from oslo_log import log as logging

from k8s_mgmt import context as ctx_mod
from k8s_mgmt import exceptions
from k8s_mgmt import shared_state
from k8s_mgmt import state as state_mod
from k8s_mgmt import state_key
from k8s_mgmt import state_watch
from k8s_mgmt import vim as vim_mod
from k8s_mgmt import vim_owner
from k8s_mgmt import vim_rest
from k8s_mgmt.modes import catalog
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import registry as registry_phases
from k8s_mgmt.topology import heat
from k8s_mgmt.v2 import instance as v2_instance

LOG = logging.getLogger(__name__)

ROOT = 'k8s_cluster_installation_param'
# The registry VNF's request (params.registry_vnf).
REGISTRY_ROOT = 'private_registry_installation_param'
WORKER_VDU = 'workerNode'
# v2 request keys -> the v1 names the context reads.
_REQUEST_KEYS = {
    'flavourId': 'flavour_id', 'additionalParams': 'additional_params',
    'extVirtualLinks': 'ext_virtual_links', 'type': 'type',
    'aspectId': 'aspect_id', 'numberOfSteps': 'number_of_steps',
    'vnfcInstanceId': 'vnfc_instance_id',
    'terminationType': 'termination_type',
    'gracefulTerminationTimeout': 'graceful_termination_timeout',
}


def v1_request(request):
    """The v2 request with the v1 field names the driver reads."""
    return {_REQUEST_KEYS[key]: value for key, value in (request or {}).items()
            if key in _REQUEST_KEYS}


def v1_instance(vnf_instance, stored_params=None):
    """The v2 instance in the v1 shape the driver reads: its id, the top
    stack, the VNFCs (the vnfcInfo ids a heal names, their servers), the
    flavour and the stored cluster parameters."""
    info = vnf_instance.get('instantiatedVnfInfo') or {}
    return {
        'id': v2_instance.instance_id(vnf_instance),
        'vnfd_id': vnf_instance.get('vnfdId'),
        'instantiated_vnf_info': {
            'flavour_id': info.get('flavourId'),
            'instance_id': (info.get('metadata') or {}).get('stack_id'),
            'vnfc_resource_info': [
                {'id': vnfc['id'], 'vdu_id': vnfc['vdu_id'],
                 'compute_resource': {'resource_id': vnfc['server_id']}}
                for vnfc in v2_instance.vnfcs(vnf_instance)],
            'additional_params': stored_params or {}},
        'vim_connection_info': [],
    }


def _member_stack_id(stack):
    """The id part of a ``name/id`` stack reference."""
    return stack.rsplit('/', 1)[-1] if stack else None


def scale_in_keys(script_dict):
    """The servers a scale-in removes (the grant's COMPUTE resources)."""
    return v2_instance.removed_servers(script_dict.get('grant_request'))


def scale_out_stacks(script_dict):
    """The member stacks of the workers a scale-out added: the first as
    many VNFCs of the workers' VDU as the grant added (newest first)."""
    added = v2_instance.added_count(script_dict.get('grant_request'),
                                    WORKER_VDU)
    workers = [vnfc for vnfc in v2_instance.vnfcs(
        script_dict['vnf_instance']) if vnfc['vdu_id'] == WORKER_VDU]
    return [_member_stack_id(vnfc['stack']) for vnfc in workers[:added]]


def root_of(params):
    """Which root a request's (or the stored) parameters have."""
    return REGISTRY_ROOT if REGISTRY_ROOT in (params or {}) else ROOT


class V2Hook(object):
    """One hook call: its state pulled from the instance's metadata, the
    context built, the operation run, the metadata returned."""

    def __init__(self, script_dict):
        self.script_dict = script_dict
        self.instance = script_dict['vnf_instance']
        self.instance_id = v2_instance.instance_id(self.instance)
        self.local = state_mod.InstanceState(self.instance_id)
        self.sync = shared_state.SharedState(
            self.local, shared_state.V2Metadata(self.instance),
            state_key.load_or_create())

    def stored_params(self):
        """The cluster parameters kept at instantiate, or a one-line
        refusal saying what to do."""
        text = self.local.read(state_mod.REQUEST_PARAMS)
        if text is None:
            # Sent again, as the refusal below asks: kept from now on.
            additional = additional_of(self.script_dict)
            root = root_of(additional)
            given = additional.get(root)
            if given is not None:
                self.keep_params({root: given})
                return {root: given}
            raise exceptions.ValidationError([(
                'vnf_instance.metadata.%s' % shared_state.METADATA_KEY,
                'holds no cluster parameters for this instance (it was not '
                'instantiated by this driver under the v2 API, or its '
                'metadata was changed): send the instantiate request\'s %s '
                'again in this request\'s additionalParams; it is kept '
                'from then on' % ROOT)])
        return json.loads(text)

    def keep_params(self, additional_params):
        """Keep the request's cluster (or registry) parameters for later
        operations."""
        name = root_of(additional_params)
        root = (additional_params or {}).get(name)
        if root is not None:
            self.local.write(state_mod.REQUEST_PARAMS,
                             json.dumps({name: root}, sort_keys=True))

    def show_registry(self):
        """The registry VNF's address and CA, shown in the instance's
        metadata (Tacker saves the instance the hook returns)."""
        record = self.local.read_json(state_mod.REGISTRY)
        if record:
            shared_state.publish(self.instance,
                                 registry_phases.public(record))

    def registrar(self, vim_info):
        """The cluster's VIM goes to Tacker's VIM API, with the VNF's
        own OpenStack credentials (no request context under v2)."""
        session, region = heat.session_for_vim(vim_info)
        return vim_rest.RestVimRegistrar(session, self.instance_id, region)

    def context(self, operation, hook, validate=None, kwargs=None):
        """The OperationContext: ``validate`` (a request's
        additionalParams) validated as given, else the stored parameters
        with the request's additionalParams as overrides."""
        request = v1_request(self.script_dict.get('request'))
        kwargs = dict(kwargs or {})
        kwargs['vim_info'] = v2_instance.vim_auth(self.instance)
        kwargs['vim_registrar'] = self.registrar(kwargs['vim_info'])
        kwargs['vnf_package_path'] = self.script_dict.get('tmp_csar_dir')
        if validate is not None:
            return ctx_mod.build(operation, hook, None,
                                 v1_instance(self.instance), request, None,
                                 kwargs, additional_params=validate,
                                 api='v2')
        stored = self.stored_params()
        overrides = dict(request.get('additional_params') or {})
        root = root_of(stored)
        if overrides.get(root) == stored[root]:
            # The parameters sent again: what is stored, not a change.
            del overrides[root]
        return ctx_mod.build(
            operation, hook, None, v1_instance(self.instance, stored),
            request, None, kwargs, overrides=overrides, api='v2')

    def run(self, operation, hook, validate=None, kwargs=None,
            refine=None):
        """Run the operation; the instance with its metadata, whatever
        the outcome of the operation (its error goes on). ``refine``
        (ctx -> ctx) completes the context from what only the built
        context can read (Heat)."""
        self.sync.pull()
        kept = self.local.read(state_mod.REQUEST_PARAMS)
        try:
            with state_watch.watched(self.local.path, self.sync.push):
                if validate is not None:
                    self.keep_params(validate)
                ctx = self.context(operation, hook, validate, kwargs)
                if refine is not None:
                    ctx = refine(ctx)
                catalog.run(ctx)
                self.show_registry()
        finally:
            # The whole VNF's heal forgets the old cluster's state in its
            # heal_start; its heal_end builds the new one with the same
            # parameters, which only terminate gives up.
            if (operation != 'terminate' and kept is not None and
                    self.local.read(state_mod.REQUEST_PARAMS) is None):
                self.local.write(state_mod.REQUEST_PARAMS, kept)
            self.sync.push()
        return {'vnf_instance': self.instance}


def instantiate_start(script_dict):
    """Refuse bad input before Heat makes any VM (as v1)."""
    hook = V2Hook(script_dict)
    ctx = hook.context('instantiate', 'instantiate_start',
                       validate=additional_of(script_dict))
    if catalog.mode_of(ctx.params) != catalog.MODE_REGISTRY:
        # A VIM name another VIM holds: refused before any VM is made.
        hook.sync.pull()
        vim_owner.check_vim_name(ctx.vim_registrar, hook.local,
                                 vim_mod.instance_vim_name(ctx))
    LOG.info('%s parameters are valid (flavour %s, %s mode)',
             ctx.log_prefix, ctx.flavour, catalog.mode_of(ctx.params))


def instantiate_end(script_dict):
    return V2Hook(script_dict).run('instantiate', 'instantiate_end',
                                   validate=additional_of(script_dict))


def terminate_start(script_dict):
    # v1's terminate_end phases, run at v2's terminate_start: at v2's
    # terminate_end the stack is gone and the VIM connection emptied.
    return V2Hook(script_dict).run('terminate', 'terminate_end')


def scale_start(script_dict):
    if (script_dict.get('request') or {}).get('type') != 'SCALE_IN':
        return None
    return V2Hook(script_dict).run(
        'scale_in', 'scale_start',
        kwargs={'scale_name_list': scale_in_keys(script_dict)})


def scale_end(script_dict):
    if (script_dict.get('request') or {}).get('type') != 'SCALE_OUT':
        return None
    return V2Hook(script_dict).run(
        'scale_out', 'scale_end',
        kwargs={'scale_out_id_list': scale_out_stacks(script_dict)})


def added_workers(ctx):
    """The context with, as the scale-out's new workers, the servers of
    the workers' groups in Heat that the instance does not list: at
    ``scale_rollback_start`` the instance is the one from before the
    scale-out and the new servers still exist."""
    known = {vnfc['compute_resource']['resource_id'] for vnfc in
             ctx.vnf_instance['instantiated_vnf_info']['vnfc_resource_info']}
    topology = node_work.read_topology(ctx)
    added = tuple(node.server_id for node in topology.workers
                  if node.server_id not in known)
    LOG.info('%s the failed scale-out added %s', ctx.log_prefix,
             ', '.join(added) or 'no worker')
    return dataclasses.replace(ctx, scale_out_ids=added)


def scale_rollback_start(script_dict):
    """Take the failed scale-out's workers out of the cluster before Heat
    deletes them (v1 does so in the scale_start of its rollback)."""
    if (script_dict.get('request') or {}).get('type') != 'SCALE_OUT':
        return None
    return V2Hook(script_dict).run('scale_out_rollback', 'scale_start',
                                   refine=added_workers)


def instantiate_rollback_start(script_dict):
    """Forget what a failed instantiate left (its VIM, host keys, state)
    before Heat deletes the VMs: terminate's phases, which touch no VM.
    The instance's metadata has nothing (Tacker saved none of the failed
    operation): the parameters are the instantiate request's."""
    return V2Hook(script_dict).run('terminate', 'terminate_end',
                                   validate=additional_of(script_dict))


def additional_of(script_dict):
    return (script_dict.get('request') or {}).get('additionalParams') or {}


# heal_start's VNFCs by their member stacks, for heal_end: a healed VNFC
# gets a new server, so a new vnfcInfo id, in the same member stack.
HEALED = 'v2_healed_stacks.json'


def _heal_operation(script_dict):
    request = script_dict.get('request') or {}
    whole = (not request.get('vnfcInstanceId') or
             (request.get('additionalParams') or {}).get('all') is True)
    return 'heal_vnf' if whole else 'heal_vnfc'


def healed_stacks(script_dict):
    """The member stack of each VNFC the heal request names."""
    named = set((script_dict.get('request') or {}).get('vnfcInstanceId')
                or ())
    return sorted({vnfc['stack'] for vnfc in
                   v2_instance.vnfcs(script_dict['vnf_instance'])
                   if vnfc['id'] in named and vnfc['stack']})


def vnfcs_in_stacks(script_dict, stacks):
    """The ids of the VNFCs living in ``stacks`` now."""
    wanted = set(stacks)
    return [vnfc['id'] for vnfc in
            v2_instance.vnfcs(script_dict['vnf_instance'])
            if vnfc['stack'] in wanted]


def heal_start(script_dict):
    operation = _heal_operation(script_dict)
    hook = V2Hook(script_dict)
    if operation == 'heal_vnfc':
        hook.local.write(HEALED, json.dumps(healed_stacks(script_dict)))
    return hook.run(operation, 'heal_start')


def heal_end(script_dict):
    operation = _heal_operation(script_dict)
    hook = V2Hook(script_dict)
    if operation == 'heal_vnfc':
        recorded = hook.local.read(HEALED)
        if recorded is None:
            raise exceptions.ValidationError([(
                'vnfcInstanceId', 'heal_start\'s record of the VNFCs to '
                'heal is not on this conductor: retry the heal')])
        stacks = json.loads(recorded)
        request = dict(script_dict.get('request') or {})
        request['vnfcInstanceId'] = vnfcs_in_stacks(script_dict, stacks)
        script_dict = dict(script_dict, request=request)
        hook.script_dict = script_dict
    return hook.run(operation, 'heal_end')


OPERATIONS = {
    'instantiate_start': instantiate_start,
    'instantiate_rollback_start': instantiate_rollback_start,
    'scale_rollback_start': scale_rollback_start,
    'instantiate_end': instantiate_end,
    'terminate_start': terminate_start,
    'scale_start': scale_start,
    'scale_end': scale_end,
    'heal_start': heal_start,
    'heal_end': heal_end,
}
