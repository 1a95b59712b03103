"""Heal of the registry VNF: its VM (a VNFC heal) or the whole VNF.

The registry's images and certificate are on its Cinder volume, so a heal
that would give it a new, empty volume is refused unless the request says
``storage_volume_recreate: true`` (the storage server's rule and words:
:mod:`k8s_mgmt.shared_phases.storage_heal`).

heal_start, the VM::

    Read the topology from Heat
    Check that the heal keeps the registry's volume
    Probe the registry VM to heal
    Stop the registry and unmount the volume on <node>
    Detach the volume from <node> and wait until it is available
    Forget the healed VMs' host keys

heal_end, the VM: instantiate's phases on the new VM (its volume must be
the one the registry was published with, when the heal kept it).

heal_start, the whole VNF: the same check (a v1 whole heal makes a new
stack, volume included); a kept volume (v2 without ``all``) is freed as
above and only the host keys are forgotten; a recreated one forgets the
instance's state. heal_end: instantiate's phases.
"""

from k8s_mgmt.shared_phases import forget
from k8s_mgmt.shared_phases import heal_plan
from k8s_mgmt.shared_phases import heal_worker
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import registry
from k8s_mgmt.shared_phases import storage_heal
from k8s_mgmt.shared_phases import storage_release
from k8s_mgmt.modes.registry import instantiate

HealRefused = heal_plan.HealRefused


def _target(op, topology):
    ids = heal_plan.requested_vnfc_ids(op.ctx.request)
    heal_plan.resolve_targets(topology, ids, roles=('registry',))
    return registry.registry_node(topology)


def _keeps(op, whole=False):
    if whole:
        return not storage_heal.whole_recreates_volume(op.ctx.request,
                                                       op.ctx.api)
    return storage_heal.keeps_volume(op.ctx.request, api=op.ctx.api)


def build_vnfcs_start(op):
    topology = yield node_work.topology_phase(op)
    node = _target(op, topology)
    yield storage_heal.check_phase(op, node)
    kept = (storage_release.kept_volumes(op.params, topology, node)
            if _keeps(op) else None)
    yield from storage_release.free_volume_phases(op, node, kept)
    yield heal_worker.forget_pins_phase(op, [node])


def build_vnfcs_end(op):
    return (yield from instantiate.build(
        op, title='Connect to the new registry VM', kept_volume=_keeps(op)))


def build_vnf_start(op):
    topology = yield node_work.topology_phase(op)
    node = registry.registry_node(topology)
    yield storage_heal.check_phase(op, node, whole=True)
    if _keeps(op, whole=True):
        yield from storage_release.free_volume_phases(
            op, node, storage_release.kept_volumes(op.params, topology,
                                                   node))
        yield heal_worker.forget_pins_phase(op, [node])
    else:
        yield forget.forget_state_phase(op)


def build_vnf_end(op):
    return (yield from instantiate.build(
        op, kept_volume=_keeps(op, whole=True)))
