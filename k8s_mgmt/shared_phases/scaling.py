"""Phases the scale operations of both modes, and the heal, share: a
master's API, the new workers, the nodes whose VM is gone, drain and
delete, and the checks of a removal."""

from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import parallel
from k8s_mgmt.engine import phases
from k8s_mgmt.kube import drain
from k8s_mgmt.shared_phases import cluster
from k8s_mgmt.shared_phases import cluster_access
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import scale_plan
from k8s_mgmt.tacker_objects import field

LOG = logging.getLogger(__name__)

Phase = phases.Phase

TITLE_VANISHED = 'Delete the nodes whose VM is gone'


def api_access(op, topology):
    """The API through the registered VIM's credentials when the API takes
    them (no SSH), else through a master (connect_master)."""
    first = cluster.first_master_of(op, topology)
    access = yield cluster_access.registered_phase(op, topology, first)
    if access is None:
        _master, access = yield from connect_master(op, topology,
                                                    registered=False)
    return access


def connect_master(op, topology, registered=True):
    """Phases: a session to a master (the initialised one first), its
    scripts, and an API client from its credentials; on an HA cluster the
    next master when one is down. Returns (master, ClusterAccess).
    ``registered``: the registered VIM's credentials are not checked yet."""
    first = cluster.first_master_of(op, topology)
    candidates = [first] + [m for m in topology.masters if m is not first]
    errors = []
    for master in candidates:
        try:
            yield node_work.connect_phase(
                op, 'Connect to master %s' % master.name, [master])
            yield node_work.upload_phase(
                op, [master], title='Upload the scripts to %s' % master.name)
            access = yield cluster_access.api_phase(
                op, 'Read the API credentials', topology, master, master,
                registered=registered)
            return master, access
        except exceptions.MgmtDriverError as err:
            errors.append((master.name, err))
            if not op.params.is_ha:
                raise
    raise exceptions.NodesFailed('%s reach a master' % op.prefix, errors,
                                 len(candidates))


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
    states = yield cluster_access.nodes_phase(op, access)
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


def aspect_id(op):
    return field(op.ctx.request, 'aspect_id')


def check_removal(op, removal, rollback):
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
