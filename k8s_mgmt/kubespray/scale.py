"""Scale of the kubespray mode: workers added by scale.yml, removed by
remove-node.yml.

scale_end, SCALE_OUT::

    Read the topology from Heat
    Find the new workers              (scale_out_id_list -> member stacks)
    Connect to master <m>, read the API credentials
    Read the cluster's nodes          (a re-run skips workers already Ready)
    Connect to the Ansible server, the new workers and the load balancer
    Prepare the inventory directory, the key pair, the key on the new
    workers, the inventory with them and known_hosts
    Run playbooks/facts.yml           (every host: kubespray's --limit runs
                                       need every other host's facts)
    Run scale.yml --limit=<new>       (only the new workers are touched)
    Wait until the new workers are Ready
    Label the new workers
    Add the new workers to the load balancer

scale_start, SCALE_IN (and the rollback of a failed SCALE_OUT)::

    Read the topology from Heat
    Find the workers to remove
    Connect to master <m>, read the API credentials
    Read the cluster's nodes
    Connect to the Ansible server and the load balancer
    Remove the workers from the load balancer
    Prepare the inventory directory ... (the inventory still lists them)
    Probe the workers to remove       (a dead VM cannot be reset)
    Drain the workers                 (Eviction API, as the kubeadm mode)
    Run remove-node.yml -e node=<names> -e skip_confirmation=yes
                                      (dead ones: reset_nodes=false,
                                       allow_ungraceful_removal=true)
    Write the inventory without them
"""

from k8s_mgmt import context as ctx_mod
from k8s_mgmt import parallel
from k8s_mgmt.kube import drain
from k8s_mgmt.kubespray import instantiate
from k8s_mgmt.kubespray import lb as lb_mod
from k8s_mgmt.kubespray import playbook as playbook_mod
from k8s_mgmt.kubespray import server_phases
from k8s_mgmt.operations import heal_worker
from k8s_mgmt.operations import node_work
from k8s_mgmt.operations import phases
from k8s_mgmt.operations import scale as kubeadm_scale
from k8s_mgmt.operations import scale_plan
from k8s_mgmt.operations import scripts

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
    yield from instantiate.prepare_cluster(op, server, topology, ends, todo)
    if todo:
        yield server_phases.playbook_phase(op, server, FACTS)
        yield server_phases.playbook_phase(op, server, scale_call(todo),
                                           title=title)
    else:
        yield phases.skipped(title, 'every new worker is already Ready')
    states = yield node_work.ready_phase(
        op, 'Wait until the new workers are Ready', access, new)
    labelled = yield node_work.label_phase(op, 'Label the new workers',
                                           access, topology, new, states)
    yield lb_mod.lb_phase(op, topology, ends,
                          title='Add the new workers to the load balancer')
    return labelled


def build_scale_out(op):
    """The phases of scale_end for SCALE_OUT."""
    scale_plan.check_worker_aspect(op.params, _aspect_id(op))
    topology = yield from instantiate.read_topology(op)
    new, todo, _master, access = yield from kubeadm_scale.find_new_workers(
        op, topology)
    ends = scripts.lb_endpoints(topology)
    server = yield server_phases.connect_phase(
        op, 'Connect to the Ansible server, the new workers and the load '
        'balancer', tuple(todo) + topology.lbs)
    labelled = yield from add_workers(
        op, topology, access, server, ends, new, todo,
        'Run scale.yml on the new workers')
    return {'joined': [n.name for n in todo],
            'nodes': [n.name for n in new], 'labels': labelled}


def build_scale_in(op):
    """The phases of scale_start for SCALE_IN."""
    scale_plan.check_worker_aspect(op.params, _aspect_id(op))
    topology = yield from instantiate.read_topology(op)
    removal = yield node_work.local_phase(
        op, 'Find the workers to remove', scale_plan.nodes_to_remove,
        topology, list(op.ctx.scale_names), [])
    kubeadm_scale._check_removal(op, removal, False)
    return (yield from remove_workers(op, topology, removal.workers,
                                      force=op.params.force_drain))


def build_rollback(op):
    """scale_start rolling a failed SCALE_OUT back: remove what joined
    (the VMs go with Heat's rollback: a blocked drain must not stop it)."""
    topology = yield from instantiate.read_topology(op)
    removal = yield node_work.local_phase(
        op, 'Find the workers to remove', scale_plan.nodes_to_remove,
        topology, list(op.ctx.scale_names), list(op.ctx.scale_out_ids))
    kubeadm_scale._check_removal(op, removal, True)
    return (yield from remove_workers(op, topology, removal.workers,
                                      force=True))


def remove_workers(op, topology, workers, force, forget_pins=False):
    """Take ``workers`` out of the LB and the cluster (drain, then
    remove-node.yml) and out of the inventory."""
    if not workers:
        yield phases.skipped(TITLE_DRAIN, 'no worker to remove')
        return {'removed': []}
    _master, access = yield from kubeadm_scale.connect_master(op, topology)
    states = yield node_work.nodes_phase(op, access, wait=False)
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
    yield from instantiate.prepare_cluster(op, server, topology, ends, ())
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


def _aspect_id(op):
    return ctx_mod.field(op.ctx.request, 'aspect_id')
