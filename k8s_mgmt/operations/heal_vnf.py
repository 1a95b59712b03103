"""Heal the whole VNF: Heat deletes the stack and creates it again.

heal_start::

    Unregister the VIM               (the old cluster's API is going away)
    Forget the old cluster's state   (pins, VRRP password, cluster record,
                                      kubeconfig: the instance's state dir)

heal_end::

    the phases of instantiate_end on the new VMs (instantiate.py)

Both are safe to re-run: nothing to unregister or forget is not an error,
and instantiate_end completes a half-built cluster. The unregistering and
forgetting are terminate's (terminate.py): the same job.
"""

from k8s_mgmt.operations import instantiate
from k8s_mgmt.operations import terminate


def build_start(op):
    yield terminate.unregister_phase(op)
    yield terminate.forget_state_phase(op)


def build_end(op):
    return (yield from instantiate.build(op))
