"""Scale decisions as data: which nodes change.

Nothing here touches the network. The scale operations read the topology
and the cluster's node list, ask these functions what to do, and do it; the
unit tests call them with plain topologies.

What Tacker's conductor passes: ``scale_out_id_list`` holds the new
member nested-stack ids (a node's ``stack_id``); ``scale_name_list`` holds
member resource names in the AutoScalingGroup's stack (a node's
``parent_resource``).
"""

import dataclasses

from k8s_mgmt import exceptions

TITLE_JOIN_NEW = 'Join the new workers'


def _aspect_of(params, role):
    group = params.master_node if role == 'master' else params.worker_node
    return group.aspect_id if group is not None else None


def check_worker_aspect(params, aspect_id):
    """Refuse to scale anything but the worker group."""
    worker = _aspect_of(params, 'worker')
    if aspect_id and aspect_id == _aspect_of(params, 'master'):
        raise exceptions.MgmtDriverError(
            error_message='scaling aspect %s scales the master nodes; only '
                          'workers (aspect %s) can be scaled. Heal a master '
                          'instead' % (aspect_id, worker))
    if aspect_id and worker and aspect_id != worker:
        storage = (' The storage server cannot be scaled: there is one per '
                   'cluster; heal it instead.'
                   if params.storage_server is not None else '')
        raise exceptions.MgmtDriverError(
            error_message='scaling aspect %s is not the workers\' aspect %s; '
                          'only workers can be scaled.%s'
                          % (aspect_id, worker, storage))


def new_workers(topology, scale_out_ids):
    """The worker nodes living in the new member stacks, in list order.

    Every id must name a worker's member stack: an id that matches nothing
    means Heat and the request disagree, and joining "whatever is new"
    instead would be guessing.
    """
    found, problems = [], []
    for stack_id in scale_out_ids:
        node = topology.by_stack_id(stack_id)
        if node is None:
            problems.append('%s: no server in that stack' % stack_id)
        elif node.role != 'worker':
            problems.append('%s: holds %s node %s, not a worker'
                            % (stack_id, node.role, node.name))
        elif node not in found:
            found.append(node)
    if problems:
        raise exceptions.TopologyError(
            reason='scale_out_id_list of stack %s: %s'
                   % (topology.stack_id, '; '.join(problems)))
    return tuple(found)


def workers_not_in_cluster(topology, node_names):
    """Fallback when Tacker gave no ids: workers the API does not list."""
    listed = set(node_names)
    return tuple(w for w in topology.workers if w.name not in listed)


@dataclasses.dataclass(frozen=True)
class Removal:
    """Nodes a scale-in (or a scale-out rollback) takes out."""

    workers: tuple           # worker nodes to drain and delete
    unknown: tuple = ()      # names/ids matching no server (already gone)
    masters: tuple = ()      # names that resolve to masters (refused)


def _match(node, key):
    """``key`` names the node: its member resource or member stack (v1's
    scale lists), or its server (a v2 grant's removeResources)."""
    return key is not None and key in (node.parent_resource, node.stack_id,
                                       node.server_id)


def nodes_to_remove(topology, scale_names, scale_out_ids=()):
    """Resolve ``scale_name_list`` (and rollback's ids) to nodes.

    A member resource name is unique inside its group stack, but two groups
    (masters, workers) may in theory reuse one: a name matching both is
    taken as the worker, the only group that scales.
    """
    workers, masters, unknown = [], [], []
    for key in list(scale_names or ()) + list(scale_out_ids or ()):
        hits = [n for n in topology.workers + topology.masters
                if _match(n, key)]
        worker_hits = [n for n in hits if n.role == 'worker']
        if worker_hits:
            for node in worker_hits:
                if node not in workers:
                    workers.append(node)
        elif hits:
            masters.extend(n.name for n in hits)
        else:
            unknown.append(key)
    return Removal(tuple(workers), tuple(unknown), tuple(masters))


@dataclasses.dataclass(frozen=True)
class Vanished:
    """A node the API lists whose VM Heat no longer has."""

    name: str
    pin_id: str


def vanished_nodes(pins, topology, listed):
    """Nodes this instance's driver reached over SSH (their host keys are
    pinned under their server ids), that the API still lists, and whose
    server Heat no longer has under any name: the VM is gone, so the Node is
    an empty record. Tacker 16 rolls a scale-out that failed in scale_end
    back through Heat alone, without calling the driver, and leaves them.

    ``pins`` is the instance's own pin file's entries ({server id: entry});
    ``listed`` the node names the API reports.
    """
    servers = {n.server_id for n in topology.all_nodes()}
    current = {n.name for n in topology.all_nodes()}
    found = []
    for pin_id, entry in sorted(pins.items()):
        name = (entry or {}).get('node')
        if (pin_id in servers or ':' in pin_id or not name or
                name in current or name not in listed):
            continue
        found.append(Vanished(name, pin_id))
    return tuple(found)


def join_targets(new, ready_nodes):
    """New workers that still have to join (a re-run skips Ready ones)."""
    ready = set(ready_nodes)
    return tuple(n for n in new if n.name not in ready)
