"""The worker phases the kubespray mode's scale and heal share: add
workers with ``scale.yml``, remove them with ``remove-node.yml``, and keep
the load balancer and the inventory in step."""

from k8s_mgmt import parallel
from k8s_mgmt.ansible import playbook as playbook_mod
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import scripts
from k8s_mgmt.kube import drain
from k8s_mgmt.modes.kubespray import lb as lb_mod
from k8s_mgmt.modes.kubespray import server_phases
from k8s_mgmt.shared_phases import cluster_access
from k8s_mgmt.shared_phases import heal_worker
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import scaling

Phase = phases.Phase

FACTS = playbook_mod.PlaybookCall('playbooks/facts.yml')

TITLE_DRAIN = 'Drain the workers'


def scale_call(workers):
    return playbook_mod.PlaybookCall(
        'scale.yml', limit=tuple(w.name for w in workers))


def remove_call(workers, unreachable=False):
    extra = [('node', ','.join(w.name for w in workers)),
             ('skip_confirmation', 'yes')]
    if unreachable:
        extra += [('reset_nodes', 'false'),
                  ('allow_ungraceful_removal', 'true')]
    return playbook_mod.PlaybookCall('remove-node.yml',
                                     extra_vars=tuple(extra))


def add_workers(op, topology, access, server, ends, new, todo, title):
    """The phases that make ``todo`` (of ``new``) kubespray workers, wait
    for ``new`` to be Ready, label them and put them behind the LB."""
    yield from server_phases.prepare_cluster(op, server, topology, ends, todo)
    if todo:
        yield server_phases.playbook_phase(op, server, FACTS)
        yield server_phases.playbook_phase(op, server, scale_call(todo),
                                           title=title)
    else:
        yield phases.skipped(title, 'every new worker is already Ready')
    states = yield cluster_access.ready_phase(
        op, 'Wait until the new workers are Ready', access, new)
    labelled = yield node_work.label_phase(op, 'Label the new workers',
                                           access, topology, new, states)
    yield lb_mod.lb_phase(op, topology, ends,
                          title='Add the new workers to the load balancer')
    return labelled


def remove_workers(op, topology, workers, force, forget_pins=False):
    """Take ``workers`` out of the LB and the cluster (drain, then
    remove-node.yml) and out of the inventory."""
    if not workers:
        yield phases.skipped(TITLE_DRAIN, 'no worker to remove')
        return {'removed': []}
    _master, access = yield from scaling.connect_master(op, topology)
    states = yield cluster_access.nodes_phase(op, access, wait=False)
    leaving = {w.name for w in workers}
    staying = tuple(w for w in topology.workers if w.name not in leaving)
    listed = [w for w in workers if w.name in states]
    ends = scripts.lb_endpoints(topology)
    server = yield server_phases.connect_phase(
        op, 'Connect to the Ansible server and the load balancer',
        topology.lbs)
    yield lb_mod.lb_phase(op, topology, ends, workers=staying,
                          title='Remove the workers from the load balancer')
    if not listed:
        yield phases.skipped('Run remove-node.yml', 'the cluster lists '
                             'none of %s' % ', '.join(sorted(leaving)))
    else:
        yield from _remove_listed(op, topology, access, server, ends,
                                  listed, force)
    if forget_pins:
        yield heal_worker.forget_pins_phase(op, workers)
    inventory = server_phases.inventory_for(op, topology, ends,
                                            workers=staying)
    yield server_phases.inventory_phase(
        op, server, inventory, topology.masters + staying,
        title='Write the inventory without the removed workers')
    return {'removed': sorted(w.name for w in listed)}


def _remove_listed(op, topology, access, server, ends, listed, force):
    yield from server_phases.prepare_cluster(op, server, topology, ends, ())
    reachable = yield node_work.probe_phase(
        op, 'Probe the workers to remove', listed)
    yield drain_phase(op, access, listed, force, reachable)
    alive = [w for w in listed if w.name in reachable]
    dead = [w for w in listed if w.name not in reachable]
    if alive:
        yield server_phases.playbook_phase(op, server, remove_call(alive))
    if dead:
        yield server_phases.playbook_phase(
            op, server, remove_call(dead, unreachable=True),
            title='Run remove-node.yml on the unreachable workers')


def drain_phase(op, access, workers, force, reachable):
    """Cordon and evict through the API, all at once; remove-node.yml
    deletes the Node objects."""
    def drain_all():
        return parallel.run_on_nodes(
            op.label, 'drain', workers,
            lambda node: drain.drain_and_delete(
                access.api, node.name, force=force,
                node_unreachable=node.name not in reachable,
                prefix=op.prefix, delete=False))

    def assumed():
        return {w.name: drain.DrainReport(node=w.name) for w in workers}
    return Phase(TITLE_DRAIN, nodes=node_work.names(workers), parallel=True,
                 work=tuple(phases.api_work(
                     'cordon node %s, %s' % (
                         w.name, 'evict its pods' if w.name in reachable
                         else 'leave its pods (it does not answer)'))
                     for w in workers),
                 action=drain_all, assume=op.assume(assumed))
