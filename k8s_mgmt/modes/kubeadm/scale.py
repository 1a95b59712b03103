"""Scale: workers out (join) and in (cordon, drain, delete).

scale_end, SCALE_OUT::

    Read the topology from Heat
    Find the new workers            (scale_out_id_list -> member stacks)
    Connect to master <m>           (the initialised one first; the next
    Upload the scripts to <m>        one if it is down, HA only)
    Read the API credentials        (the registered VIM's; else
                                     token-secret on the master)
    Read the cluster's nodes        (a re-run skips new workers already Ready)
    Delete the nodes whose VM is gone  (only when there are: see below)
    Read join data                  (print-join: a fresh token)
    Wait until the new workers are prepared  (connected, scripts uploaded,
                                     the install script's prepare mode: in
                                     the background since the new workers
                                     were known, right after Heat's read)
    Join the new workers            (all at once)
    Wait until the new workers are Ready
    Label the new workers           (CIS-node, zone: from their placement)

scale_start, SCALE_IN (and the rollback of a failed SCALE_OUT)::

    Read the topology from Heat
    Find the workers to remove      (scale_name_list -> member resources)
    Check the registered VIM's credentials  (when the API takes them, no
                                     master is connected to:)
    Connect to master <m>, read the API credentials
    Read the cluster's nodes
    Delete the nodes whose VM is gone  (only when there are)
    Drain and delete the workers    (all at once: cordon, evict, delete)

A node "whose VM is gone" is one the driver reached over SSH (its host key
is pinned under its server id in the instance's own pin file) that the API
still lists while Heat no longer has its server. Tacker 16 leaves such
nodes behind: it rolls back a scale-out that failed in scale_end through
Heat alone, without calling the driver. Their Nodes (and the pods bound to
them) are deleted and their pins forgotten.

Only the nodes that change and one master are touched, so a scale-out costs
the same on a cluster of 1 or 100 workers. Every phase is decided from what
Heat and the API report, so a re-run finishes what a failed run left.
"""

from oslo_log import log as logging

from k8s_mgmt.engine import phases
from k8s_mgmt.engine import scripts
from k8s_mgmt.shared_phases import cluster
from k8s_mgmt.shared_phases import cluster_access
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import scale_plan
from k8s_mgmt.shared_phases import scaling

LOG = logging.getLogger(__name__)

Phase = phases.Phase
TITLE_DRAIN = 'Drain and delete the workers'
TITLE_PREPARE_NEW = 'Connect to the new workers and prepare them'
TITLE_WAIT_PREPARED = 'Wait until the new workers are prepared'


def build_scale_out(op):
    """The phases of scale_end for SCALE_OUT."""
    scale_plan.check_worker_aspect(op.params, scaling.aspect_id(op))
    topology = yield node_work.topology_phase(op)
    waits = []

    def prepare(new):
        # The new workers connect and get ready while the master side
        # (its session, the API, print-join) is done.
        ends = scripts.endpoints(topology, op.params,
                                 cluster.first_master_of(op, topology))
        waits.append((yield from node_work.prepare_in_background(
            op, TITLE_PREPARE_NEW, TITLE_WAIT_PREPARED, new, ends,
            connect=True)))
    new, todo, master, access = yield from scaling.find_new_workers(
        op, topology, before_master=prepare)
    wait = waits[0] if waits else None
    if wait is None and todo:
        yield node_work.connect_phase(op, 'Connect to the new workers', todo)
    yield from node_work.join_workers(op, scale_plan.TITLE_JOIN_NEW, todo,
                                      master, access.ends,
                                      'every new worker is already Ready',
                                      prepared=wait)
    states = yield cluster_access.ready_phase(
        op, 'Wait until the new workers are Ready', access, new)
    labelled = yield node_work.label_phase(op, 'Label the new workers',
                                           access, topology, new, states)
    LOG.info('%s joined %d worker(s): %s', op.prefix, len(new),
             ', '.join(n.name for n in new))
    return {'joined': [n.name for n in todo],
            'nodes': [n.name for n in new], 'labels': labelled}


def build_scale_in(op):
    """The phases of scale_start for SCALE_IN."""
    scale_plan.check_worker_aspect(op.params, scaling.aspect_id(op))
    return (yield from _remove(op, force=op.params.force_drain,
                               rollback=False))


def build_rollback(op):
    """The phases of scale_start rolling a failed SCALE_OUT back.

    The VMs go away with Heat's rollback anyway, so their pods are lost
    whatever happens: a blocked drain must not stop the rollback.
    """
    return (yield from _remove(op, force=True, rollback=True))


def _remove(op, force, rollback):
    topology = yield node_work.topology_phase(op)
    ids = list(op.ctx.scale_out_ids) if rollback else []
    removal = yield node_work.local_phase(
        op, 'Find the workers to remove', scale_plan.nodes_to_remove,
        topology, list(op.ctx.scale_names), ids)
    scaling.check_removal(op, removal, rollback)
    if not removal.workers:
        yield phases.skipped(TITLE_DRAIN, 'no worker to remove')
        return {'removed': [], 'reports': {}}
    # Drain and delete are API calls: no master needs a script.
    access = yield from scaling.api_access(op, topology)
    states = yield cluster_access.nodes_phase(op, access, wait=False)
    yield from scaling.delete_vanished(op, topology, access, states)
    reports = yield scaling.drain_phase(op, TITLE_DRAIN, access,
                                        removal.workers, force)
    return {'removed': sorted(r.node for r in reports.values()
                              if r.node_deleted),
            'reports': reports}
