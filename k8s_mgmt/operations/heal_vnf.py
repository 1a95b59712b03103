"""Heal the whole VNF: Heat deletes the stack and creates it again.

heal_start::

    Unregister the VIM               (the old cluster's API is going away)
    Forget the old cluster's state   (pins, VRRP password, cluster record,
                                      kubeconfig: the instance's state dir)

heal_end::

    a full instantiate_end on the new VMs (operations/instantiate.py)

Both are safe to re-run: nothing to unregister or forget is not an error,
and instantiate_end completes a half-built cluster.
"""

import shutil

from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import secrets
from k8s_mgmt import ssh
from k8s_mgmt import state as state_mod
from k8s_mgmt import vim as vim_mod
from k8s_mgmt.operations import instantiate
from k8s_mgmt.operations import steps as steps_mod

LOG = logging.getLogger(__name__)


def vim_name(ctx):
    return (ctx.params.vim_name or
            vim_mod.default_vim_name(ctx.vnf_instance_id))


def unregister_vim(ctx, state):
    registrar = vim_mod.registrar_for(ctx.tacker_context, ctx.vnf_instance,
                                      state)
    unregister = getattr(registrar, 'unregister', None)
    if unregister is None:
        # The file registrar's files live in the state dir removed next.
        LOG.warning('[heal %s] %s cannot unregister VIM %s',
                    ctx.vnf_instance_id, type(registrar).__name__,
                    vim_name(ctx))
        return None
    return unregister(vim_name(ctx))


def shared_pins(ctx):
    """Server ids whose pins live outside the state dir (a shared host key
    file): read from Heat while the old stack still exists."""
    if not conf.CONF.k8s_mgmt.host_key_file:
        return []
    try:
        topology = instantiate.read_topology(ctx)
    except Exception as err:  # the old stack may be half gone already
        LOG.warning('[heal %s] old topology unreadable, host key pins in %s '
                    'stay: %s', ctx.vnf_instance_id,
                    conf.CONF.k8s_mgmt.host_key_file,
                    secrets.redact(str(err)))
        return []
    return [n.server_id for n in topology.all_nodes()]


def forget_state(ctx, state):
    pinned = shared_pins(ctx)
    if pinned:
        ssh.HostKeyStore(state.host_key_file()).forget_many(pinned)
    shutil.rmtree(state.path, ignore_errors=True)
    return state.path


def heal_vnf_start(ctx):
    prefix = '[%s %s]' % (ctx.hook, ctx.vnf_instance_id)
    steps = steps_mod.StepRunner(prefix)
    state = state_mod.InstanceState(ctx.vnf_instance_id)
    try:
        steps.run('Unregister the VIM', unregister_vim, ctx, state)
        steps.run('Forget the old cluster\'s state', forget_state, ctx,
                  state)
    finally:
        steps.summary()


def heal_vnf_end(ctx):
    return instantiate.build_cluster(ctx)
