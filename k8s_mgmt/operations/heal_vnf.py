"""Heal the whole VNF: Heat deletes the stack and creates it again.

heal_start::

    Unregister the VIM               (the old cluster's API is going away)
    Forget the old cluster's state   (pins, VRRP password, cluster record,
                                      kubeconfig: the instance's state dir)

heal_end::

    a full instantiate_end on the new VMs (operations/instantiate.py)

Both are safe to re-run: nothing to unregister or forget is not an error,
and instantiate_end completes a half-built cluster. The unregistering and
forgetting are terminate's (operations/terminate.py): the same job.
"""

from k8s_mgmt import state as state_mod
from k8s_mgmt.operations import instantiate
from k8s_mgmt.operations import steps as steps_mod
from k8s_mgmt.operations import terminate


def heal_vnf_start(ctx):
    steps = steps_mod.StepRunner('[%s %s]' % (ctx.hook, ctx.vnf_instance_id))
    state = state_mod.InstanceState(ctx.vnf_instance_id)
    try:
        steps.run('Unregister the VIM', terminate.unregister_vim, ctx, state)
        steps.run('Forget the old cluster\'s state', terminate.forget_state,
                  ctx, state)
    finally:
        steps.summary()


def heal_vnf_end(ctx):
    return instantiate.build_cluster(ctx)
