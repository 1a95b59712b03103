"""The Tacker management driver ``mgmt-drivers-kubernetes``.

Thin on purpose: each hook validates its input, builds a per-call
:class:`~k8s_mgmt.context.OperationContext` and runs the operation's phases
(:func:`k8s_mgmt.modes.catalog.run`). The instance holds no
per-operation state, because Tacker shares one instance between
concurrent operations on different VNFs.
"""

import functools

from oslo_log import log as logging

from k8s_mgmt import abstract
from k8s_mgmt import context as ctx_mod
from k8s_mgmt import DRIVER_TYPE
from k8s_mgmt import exceptions
from k8s_mgmt import preload
from k8s_mgmt import modify_request
from k8s_mgmt import shared_state
from k8s_mgmt import state as state_mod
from k8s_mgmt import tacker_modify_info
from k8s_mgmt import vim as vim_mod
from k8s_mgmt import vim_owner
from k8s_mgmt.modes import catalog
from k8s_mgmt.tacker_objects import field

LOG = logging.getLogger(__name__)

SCALE_OUT = 'SCALE_OUT'
SCALE_IN = 'SCALE_IN'


# The hooks Tacker calls (k8s_mgmt.abstract.BaseDriver).
TACKER_HOOKS = (
    'instantiate_start', 'instantiate_end', 'terminate_start',
    'terminate_end', 'scale_start', 'scale_end', 'heal_start', 'heal_end',
    'change_external_connectivity_start', 'change_external_connectivity_end',
    'modify_information_start', 'modify_information_end')


def one_line_errors(hook):
    """A hook whose MgmtDriverError reaches Tacker as one line (Tacker
    shows ``str(error)`` as the operation's ``error.detail``); the full
    text is logged first."""
    @functools.wraps(hook)
    def wrapper(self, *args, **kwargs):
        try:
            return hook(self, *args, **kwargs)
        except exceptions.MgmtDriverError as err:
            short = exceptions.one_line(err)
            if short != str(err):
                LOG.error('%s failed: %s', hook.__name__, err)
                err.shorten(short)
            raise
    return wrapper


def _unused_hook(hook, vnf_instance):
    LOG.debug('%s: nothing to do for VNF instance %s', hook,
              field(vnf_instance, 'id'))


class KubernetesMgmtDriver(abstract.BaseDriver):
    """Builds and runs a Kubernetes cluster on the VNF's VMs over SSH."""

    # How this driver builds clusters: 'kubeadm' (here, over SSH) or
    # 'kubespray' (k8s_mgmt.kubespray.driver); this one also builds the
    # registry VNF. A request for another mode is refused before anything
    # runs.
    MODES = (catalog.MODE_KUBEADM, catalog.MODE_REGISTRY)
    TYPE = DRIVER_TYPE

    def __init__(self):
        super().__init__()
        # Tacker constructs the driver once, at the conductor's start: the
        # place for the imports the first operation would otherwise pay.
        preload.load()

    def get_type(self):
        return self.TYPE

    def get_name(self):
        return self.TYPE

    def get_description(self):
        return ('Kubernetes cluster management driver: kubeadm clusters '
                '(single or HA masters) on Heat VMs, scale, heal, terminate')

    # -- instantiate -------------------------------------------------------

    def instantiate_start(self, context, vnf_instance,
                          instantiate_vnf_request, grant,
                          grant_request, **kwargs):
        # Runs before Heat creates any VM: the place to refuse bad input.
        ctx = ctx_mod.build(
            'instantiate', 'instantiate_start', context, vnf_instance,
            instantiate_vnf_request, grant, kwargs,
            additional_params=self._request_params(instantiate_vnf_request))
        with shared_state.shared(ctx):
            self._check_mode(ctx)
            self._check_vim_name(ctx)
        LOG.info('%s parameters are valid (flavour %s)', ctx.log_prefix,
                 ctx.flavour)

    def instantiate_end(self, context, vnf_instance,
                        instantiate_vnf_request, grant,
                        grant_request, **kwargs):
        ctx = ctx_mod.build(
            'instantiate', 'instantiate_end', context, vnf_instance,
            instantiate_vnf_request, grant, kwargs,
            additional_params=self._request_params(instantiate_vnf_request))
        self._run(ctx)

    # -- terminate ---------------------------------------------------------

    def terminate_start(self, context, vnf_instance,
                        terminate_vnf_request, grant,
                        grant_request, **kwargs):
        _unused_hook('terminate_start', vnf_instance)

    def terminate_end(self, context, vnf_instance,
                      terminate_vnf_request, grant,
                      grant_request, **kwargs):
        ctx = ctx_mod.build('terminate', 'terminate_end', context,
                            vnf_instance, terminate_vnf_request, grant,
                            kwargs)
        self._run(ctx)

    # -- scale -------------------------------------------------------------

    def scale_start(self, context, vnf_instance,
                    scale_vnf_request, grant,
                    grant_request, **kwargs):
        # Tacker calls scale_start for SCALE_IN, and with the original
        # SCALE_OUT request when it rolls a failed scale-out back.
        kind = field(scale_vnf_request, 'type')
        operation = 'scale_in' if kind == SCALE_IN else 'scale_out_rollback'
        ctx = self._stored_context(operation, 'scale_start', context,
                                   vnf_instance, scale_vnf_request, grant,
                                   kwargs)
        self._run(ctx)

    def scale_end(self, context, vnf_instance,
                  scale_vnf_request, grant,
                  grant_request, **kwargs):
        # Tacker calls scale_end only for SCALE_OUT; a SCALE_IN has nothing
        # left to do once Heat removed the (already drained) VMs.
        if field(scale_vnf_request, 'type') != SCALE_OUT:
            _unused_hook('scale_end', vnf_instance)
            return
        ctx = self._stored_context('scale_out', 'scale_end', context,
                                   vnf_instance, scale_vnf_request, grant,
                                   kwargs)
        self._run(ctx)

    # -- heal --------------------------------------------------------------

    def heal_start(self, context, vnf_instance,
                   heal_vnf_request, grant,
                   grant_request, **kwargs):
        whole = not field(heal_vnf_request, 'vnfc_instance_id')
        ctx = self._stored_context('heal_vnf' if whole else 'heal_vnfc',
                                   'heal_start', context, vnf_instance,
                                   heal_vnf_request, grant, kwargs)
        self._run(ctx)

    def heal_end(self, context, vnf_instance,
                 heal_vnf_request, grant,
                 grant_request, **kwargs):
        whole = not field(heal_vnf_request, 'vnfc_instance_id')
        ctx = self._stored_context('heal_vnf' if whole else 'heal_vnfc',
                                   'heal_end', context, vnf_instance,
                                   heal_vnf_request, grant, kwargs)
        self._run(ctx)

    # -- hooks with nothing to do for a Kubernetes cluster -----------------

    def change_external_connectivity_start(
            self, context, vnf_instance,
            change_ext_conn_request, grant,
            grant_request, **kwargs):
        _unused_hook('change_external_connectivity_start', vnf_instance)

    def change_external_connectivity_end(
            self, context, vnf_instance,
            change_ext_conn_request, grant,
            grant_request, **kwargs):
        _unused_hook('change_external_connectivity_end', vnf_instance)

    def modify_information_start(self, context, vnf_instance,
                                 modify_vnf_request, **kwargs):
        # Tacker 16 recorded this PATCH's operationParams as a Python
        # literal its own API cannot show: rewritten as JSON, so that
        # 'openstack vnflcm op show' follows the operation.
        instance_id = field(vnf_instance, 'id')
        tacker_modify_info.repair(context, instance_id)
        try:
            # Before Tacker merges the PATCH: none of the driver's keys.
            modify_request.refuse_own_keys(
                modify_vnf_request if modify_vnf_request is not None else
                tacker_modify_info.processing_request(context, instance_id))
        except Exception:
            tacker_modify_info.autocommit_legacy_session(context)
            raise

    def modify_information_end(self, context, vnf_instance,
                               modify_vnf_request, **kwargs):
        # Also here, for a VNFD that names no modify_information_start.
        tacker_modify_info.repair(context, field(vnf_instance, 'id'))
        try:
            self._modify(context, vnf_instance, modify_vnf_request, kwargs)
        except Exception:
            # Tacker 16's revert of a failed PATCH would leave the VNF's
            # row locked (tacker_modify_info).
            tacker_modify_info.autocommit_legacy_session(context)
            raise

    def _modify(self, context, vnf_instance, modify_vnf_request, kwargs):
        # A PATCH of the instance's metadata k8sMgmtUpgrade asks for an
        # upgrade, k8sMgmtCertificates for a check or renewal (Tacker saved
        # the metadata before this hook).
        wanted = modify_request.asked(vnf_instance)
        if wanted is None:
            LOG.info('modify_information_end of VNF instance %s: nothing '
                     'for k8s-mgmt in this change',
                     field(vnf_instance, 'id'))
            return
        operation, options = wanted
        ctx = ctx_mod.build(
            operation, 'modify_information_end', context, vnf_instance,
            modify_vnf_request, None, dict(kwargs, **options))
        self._run(ctx)
        # Done: a later change does not run it again. After a failure the
        # keys stay, and the next change of the instance resumes.
        shared_state.drop_metadata(vnf_instance, modify_request.KEYS)

    # -- helpers (stateless) -----------------------------------------------

    def _check_mode(self, ctx):
        mode = catalog.mode_of(ctx.params)
        if mode not in self.MODES:
            other = catalog.DRIVER_OF_MODE[mode]
            where = ('private_registry_installation_param'
                     if mode == catalog.MODE_REGISTRY else
                     'k8s_cluster_installation_param.ansible')
            raise exceptions.ValidationError([(
                'additionalParams.' + where,
                'the request asks for a %s %s, which %s does not build: '
                'name %s in the VNFD\'s Vnflcm interface'
                % (mode, 'VNF' if mode == catalog.MODE_REGISTRY else
                   'cluster', self.TYPE, other))])

    @staticmethod
    def _check_vim_name(ctx):
        """A VIM name another VIM holds is refused before any VM is made
        (a cluster's; a registry VNF registers no VIM)."""
        if catalog.mode_of(ctx.params) == catalog.MODE_REGISTRY:
            return
        state = state_mod.InstanceState(ctx.vnf_instance_id)
        vim_owner.check_vim_name(vim_mod.registrar_for(ctx, state), state,
                                 vim_mod.instance_vim_name(ctx))

    def _run(self, ctx):
        # What an earlier operation learnt, from Tacker's database: this
        # conductor may not be the one that ran it (shared_state).
        with shared_state.shared(ctx):
            self._check_mode(ctx)
            return catalog.run(ctx)

    @staticmethod
    def _request_params(request):
        return field(request, 'additional_params') or {}

    @staticmethod
    def _stored_context(operation, hook, context, vnf_instance, request,
                        grant, kwargs):
        return ctx_mod.build(
            operation, hook, context, vnf_instance, request, grant, kwargs,
            overrides=field(request, 'additional_params'))


for _hook in TACKER_HOOKS:
    setattr(KubernetesMgmtDriver, _hook,
            one_line_errors(getattr(KubernetesMgmtDriver, _hook)))
