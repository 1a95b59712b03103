"""Heal: one or more master or worker VNFCs, or the whole VNF.

The VNFC ids of the request map to nodes through the instance's
``vnfc_resource_info`` (server id -> VNFC id) and the Heat topology. An
unknown id, the only master or an etcd quorum at risk stop the heal before
anything changes. Masters are handled first (one etcd change at a time),
then workers. The storage server VNFC is healed as storage.py says: a
heal that would give it an empty volume is refused unless the request
accepts it (storage_heal.py), its PVs are checked and deleted first,
registered again last; a volume the heal keeps is unmounted on the old
server and detached from it through Nova before Heat replaces the server
(storage_release.py). See heal_master.py, heal_worker.py and storage.py
(k8s_mgmt.shared_phases).

The whole VNF: Heat deletes the stack and creates it again.

heal_start::

    Check that the heal keeps the storage server's volume
                                     (with storage_server: refused, since
                                      the new stack's volume is empty,
                                      unless storage_volume_recreate)
    Unregister the VIM               (the old cluster's API is going away)
    Forget the old cluster's state   (pins, VRRP password, cluster record,
                                      kubeconfig: the instance's state dir)

heal_end::

    the phases of instantiate_end on the new VMs (instantiate.py;
    the catalog runs them)

Both are safe to re-run: nothing to unregister or forget is not an error,
and instantiate_end completes a half-built cluster. The unregistering and
forgetting are terminate's (shared_phases.forget): the same job.
"""

from k8s_mgmt.shared_phases import cluster
from k8s_mgmt.shared_phases import cluster_access
from k8s_mgmt.shared_phases import forget
from k8s_mgmt.shared_phases import heal_master
from k8s_mgmt.shared_phases import heal_plan
from k8s_mgmt.shared_phases import heal_worker
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import storage
from k8s_mgmt.shared_phases import storage_heal
from k8s_mgmt.shared_phases import storage_release

HealRefused = heal_plan.HealRefused


def _split(targets):
    return ([t for t in targets if t.role == 'master'],
            [t for t in targets if t.role == 'worker'],
            [t for t in targets if t.role == 'storage'])


def _targets(op, topology):
    """The nodes of the request's VNFC ids (HealRefused if unknown)."""
    ids = heal_plan.requested_vnfc_ids(op.ctx.request)
    return heal_plan.resolve_targets(topology, ids,
                                     storage=storage.enabled(op.params))


def build_vnfcs_start(op):
    """heal_start with VNFC ids: take the nodes out of the cluster.

    The storage server's PVs are checked first: a PV in use refuses the
    whole heal before any node is touched."""
    topology = yield node_work.topology_phase(op)
    targets = _targets(op, topology)
    masters, workers, storage_targets = _split(targets)
    access = helper = None
    if storage_targets:
        server = storage_targets[0]
        # Before any node is touched: an emptied volume needs consent.
        yield storage_heal.check_phase(op, server)
        kept = (storage_release.kept_volumes(op.params, topology, server)
                if storage_heal.keeps_volume(op.ctx.request, api=op.ctx.api)
                else None)
        helper, access = yield from heal_master.api_through_a_master(
            op, topology, targets)
        names = yield storage.check_phase(
            op, access, 'healing the storage server %s' % server.name)
        yield storage.delete_phase(op, access, names)
        # Heat's new server takes the kept volume only once it is free.
        yield from storage_release.free_volume_phases(op, server, kept)
        yield heal_worker.forget_pins_phase(op, storage_targets)
    if masters:
        helper, access = yield from heal_master.remove_masters(
            op, topology, masters)
    if workers:
        if access is None:
            # Drain and delete are API calls: no master needs a script.
            access = yield cluster_access.registered_phase(
                op, topology, cluster.first_master_of(op, topology))
        if access is None:
            helper, access = yield from heal_master.api_through_a_master(
                op, topology, workers, registered=False)
        reachable = yield node_work.probe_phase(
            op, 'Probe the workers to heal', workers)
        yield from heal_worker.remove_workers(op, access, workers, reachable)
    if helper is not None:
        # The other masters' sessions: heal_end works on them again.
        yield node_work.hold_phase(
            op, heal_plan.staying_masters(topology, targets), 'heal_end')


def build_vnfcs_end(op):
    """heal_end with VNFC ids: join the replacement VMs; set up a new
    storage server and register the PVs with its address."""
    topology = yield node_work.topology_phase(op)
    targets = _targets(op, topology)
    masters, workers, storage_targets = _split(targets)
    access = helper = None
    yield node_work.take_held_phase(
        op, heal_plan.staying_masters(topology, targets), 'heal_start')
    if storage_targets:
        yield from storage.heal_server(op, topology)
    if masters:
        helper, access = yield from heal_master.join_masters(op, topology,
                                                             masters)
        yield from node_work.helm_phases(op, masters)
    if workers:
        if access is None:
            helper, access = yield from heal_master.api_through_a_master(
                op, topology, workers)
        yield from heal_worker.join_workers(op, topology, access, workers,
                                            helper)
    if topology.workers:
        if access is None:
            helper, access = yield from heal_master.api_through_a_master(
                op, topology, targets)
        yield from heal_worker.join_strays(op, topology, access, targets,
                                           helper)
    if storage_targets:
        if access is None:
            helper, access = yield from heal_master.api_through_a_master(
                op, topology, ())
        yield from storage.register_phases(op, access, topology)


def build_vnf_start(op):
    """heal_start of the whole VNF: forget the old cluster."""
    if storage.enabled(op.params):
        # The new stack brings new, empty volumes: consent first. Under
        # v2 without "all" the servers are replaced in the same stack and
        # the volume kept: free it for the new storage server, as for a
        # VNFC heal.
        topology = yield node_work.topology_phase(op)
        server = storage.storage_node(topology)
        yield storage_heal.check_phase(op, server, whole=True)
        if not storage_heal.whole_recreates_volume(op.ctx.request,
                                                   op.ctx.api):
            yield from storage_release.free_volume_phases(
                op, server, storage_release.kept_volumes(
                    op.params, topology, server))
    yield forget.unregister_phase(op)
    yield forget.forget_state_phase(op)
