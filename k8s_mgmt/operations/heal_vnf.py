"""Heal the whole VNF: Heat deletes the stack and creates it again.

heal_start::

    Check that the heal keeps the storage server's volume
                                     (with storage_server: refused, since
                                      the new stack's volume is empty,
                                      unless storage_volume_recreate)
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
from k8s_mgmt.operations import node_work
from k8s_mgmt.operations import storage
from k8s_mgmt.operations import storage_heal
from k8s_mgmt.operations import terminate


def build_start(op):
    if storage.enabled(op.params):
        # The new stack brings new, empty volumes: consent first.
        topology = yield node_work.topology_phase(op)
        yield storage_heal.check_phase(op, storage.storage_node(topology),
                                       whole=True)
    yield terminate.unregister_phase(op)
    yield terminate.forget_state_phase(op)


def build_end(op):
    return (yield from instantiate.build(op))
