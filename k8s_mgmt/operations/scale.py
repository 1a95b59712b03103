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

from k8s_mgmt import conf
from k8s_mgmt import context as ctx_mod
from k8s_mgmt import exceptions
from k8s_mgmt import parallel
from k8s_mgmt.kube import drain
from k8s_mgmt.operations import instantiate
from k8s_mgmt.operations import node_work
from k8s_mgmt.operations import phases
from k8s_mgmt.operations import scale_plan
from k8s_mgmt.operations import scripts

LOG = logging.getLogger(__name__)

Phase = phases.Phase
TITLE_DRAIN = 'Drain and delete the workers'
TITLE_VANISHED = 'Delete the nodes whose VM is gone'
TITLE_PREPARE_NEW = 'Connect to the new workers and prepare them'
TITLE_WAIT_PREPARED = 'Wait until the new workers are prepared'


def api_access(op, topology):
    """The API through the registered VIM's credentials when the API takes
    them (no SSH), else through a master (connect_master)."""
    first = instantiate.first_master_of(op, topology)
    access = yield node_work.registered_phase(op, topology, first)
    if access is None:
        _master, access = yield from connect_master(op, topology,
                                                    registered=False)
    return access


def connect_master(op, topology, registered=True):
    """Phases: a session to a master (the initialised one first), its
    scripts, and an API client from its credentials; on an HA cluster the
    next master when one is down. Returns (master, ClusterAccess).
    ``registered``: the registered VIM's credentials are not checked yet."""
    first = instantiate.first_master_of(op, topology)
    candidates = [first] + [m for m in topology.masters if m is not first]
    errors = []
    for master in candidates:
        try:
            yield node_work.connect_phase(
                op, 'Connect to master %s' % master.name, [master])
            yield node_work.upload_phase(
                op, [master], title='Upload the scripts to %s' % master.name)
            access = yield node_work.api_phase(
                op, 'Read the API credentials', topology, master, master,
                registered=registered)
            return master, access
        except exceptions.MgmtDriverError as err:
            errors.append((master.name, err))
            if not op.params.is_ha:
                raise
    raise exceptions.NodesFailed('%s reach a master' % op.prefix, errors,
                                 len(candidates))


def build_scale_out(op):
    """The phases of scale_end for SCALE_OUT."""
    scale_plan.check_worker_aspect(op.params, _aspect_id(op))
    topology = yield node_work.topology_phase(op)
    waits = []

    def prepare(new):
        # The new workers connect and get ready while the master side
        # (its session, the API, print-join) is done.
        ends = scripts.endpoints(topology, op.params,
                                 instantiate.first_master_of(op, topology))
        waits.append((yield from node_work.prepare_in_background(
            op, TITLE_PREPARE_NEW, TITLE_WAIT_PREPARED, new, ends,
            connect=True)))
    new, todo, master, access = yield from find_new_workers(
        op, topology, before_master=prepare)
    wait = waits[0] if waits else None
    if wait is None and todo:
        yield node_work.connect_phase(op, 'Connect to the new workers', todo)
    yield from node_work.join_workers(op, scale_plan.TITLE_JOIN_NEW, todo,
                                      master, access.ends,
                                      'every new worker is already Ready',
                                      prepared=wait)
    states = yield node_work.ready_phase(
        op, 'Wait until the new workers are Ready', access, new)
    labelled = yield node_work.label_phase(op, 'Label the new workers',
                                           access, topology, new, states)
    LOG.info('%s joined %d worker(s): %s', op.prefix, len(new),
             ', '.join(n.name for n in new))
    return {'joined': [n.name for n in todo],
            'nodes': [n.name for n in new], 'labels': labelled}


def find_new_workers(op, topology, before_master=None):
    """Phases: the workers Heat added, a master's API, and which of them
    still have to join. Returns (new, todo, master, ClusterAccess).
    ``before_master(new)``: phases (a generator) that go before the
    master's, once the new workers are known from their ids."""
    ids = list(op.ctx.scale_out_ids)
    new = ()
    if ids:
        new = yield node_work.local_phase(op, 'Find the new workers',
                                          scale_plan.new_workers, topology,
                                          ids)
        if before_master is not None:
            yield from before_master(new)
    master, access = yield from connect_master(op, topology)
    states = yield node_work.nodes_phase(op, access)
    yield from delete_vanished(op, topology, access, states)
    if not ids:
        # No ids from the conductor: the workers the API does not know.
        new = scale_plan.workers_not_in_cluster(topology, states)
        LOG.warning('%s no scale_out_id_list given; adding the workers '
                    'the cluster does not list: %s', op.prefix,
                    ', '.join(n.name for n in new) or 'none')
    todo = scale_plan.join_targets(
        new, [n for n, s in states.items() if s.ready])
    return new, todo, master, access


def build_scale_in(op):
    """The phases of scale_start for SCALE_IN."""
    scale_plan.check_worker_aspect(op.params, _aspect_id(op))
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
    _check_removal(op, removal, rollback)
    if not removal.workers:
        yield phases.skipped(TITLE_DRAIN, 'no worker to remove')
        return {'removed': [], 'reports': {}}
    # Drain and delete are API calls: no master needs a script.
    access = yield from api_access(op, topology)
    states = yield node_work.nodes_phase(op, access, wait=False)
    yield from delete_vanished(op, topology, access, states)
    reports = yield drain_phase(op, TITLE_DRAIN, access, removal.workers,
                                force)
    return {'removed': sorted(r.node for r in reports.values()
                              if r.node_deleted),
            'reports': reports}


def delete_vanished(op, topology, access, states):
    """Phases (only when there are any): delete the Nodes whose VM is gone
    and forget their pins. Skipped with a shared pin file
    (``[k8s_mgmt] host_key_file``): its pins are not this instance's."""
    if conf.CONF.k8s_mgmt.host_key_file:
        return
    vanished = scale_plan.vanished_nodes(op.store.all(), topology,
                                         set(states))
    if not vanished:
        return
    LOG.warning('%s Heat no longer has the VM(s) of node(s) %s (a rollback '
                'that did not call the driver?); deleting those Nodes',
                op.prefix, ', '.join(v.name for v in vanished))
    names = {v.name for v in vanished}
    yield drain_phase(op, TITLE_VANISHED, access, vanished, force=True,
                      unreachable=names)
    pin_ids = [v.pin_id for v in vanished]
    yield Phase('Forget their host keys',
                action=lambda: op.store.forget_many(pin_ids))


def drain_phase(op, title, access, workers, force, unreachable=()):
    """Cordon, evict and delete each node, all at once."""
    def drain_all():
        if force:
            LOG.info('%s force_drain: pods whose eviction is refused will '
                     'be deleted', op.prefix)
        return parallel.run_on_nodes(
            op.label, 'drain and delete', workers,
            lambda node: drain.drain_and_delete(
                access.api, node.name, force=force,
                node_unreachable=node.name in unreachable,
                prefix=op.prefix))

    def assumed():
        return {w.name: drain.DrainReport(node=w.name, node_deleted=True)
                for w in workers}
    return Phase(title, nodes=node_work.names(workers), parallel=True,
                 work=tuple(drain_work(w.name, force, w.name in unreachable)
                            for w in workers),
                 action=drain_all, assume=op.assume(assumed))


def drain_work(name, force, unreachable=False):
    how = ('delete its pods (the node does not answer)' if unreachable
           else 'evict its pods%s' % (' (delete those refused)'
                                      if force else ''))
    return phases.api_work('cordon node %s, %s, delete the node'
                           % (name, how))


def _aspect_id(op):
    return ctx_mod.field(op.ctx.request, 'aspect_id')


def _check_removal(op, removal, rollback):
    if removal.unknown:
        LOG.warning('%s no server for %s in stack %s (already removed?)',
                    op.prefix, ', '.join(removal.unknown), op.ctx.stack_id)
    if removal.masters and not rollback:
        raise exceptions.MgmtDriverError(
            error_message='scale-in would remove master node(s) %s; only '
                          'workers can be scaled in'
                          % ', '.join(removal.masters))
    if removal.masters:
        LOG.warning('%s rollback leaves master(s) %s to Heat', op.prefix,
                    ', '.join(removal.masters))
