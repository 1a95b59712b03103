"""Heal of the kubespray mode.

A worker VNFC: heal_start removes the node as a scale-in does (out of the
load balancer, drained, ``remove-node.yml``; a dead VM without reset), and
forgets its host key; heal_end adds the replacement as a scale-out does
(it may have a new address: the inventory, known_hosts and the load
balancer are written from the new topology).

The external load balancer's VNFC: Heat replaces the VM on the same port
(same address, so the API certificate and every kubeconfig stay valid);
heal_start forgets its host key, heal_end configures HAProxy on the new
VM with the current members.

A master VNFC is refused before anything changes: kubespray has no
playbook that replaces a control-plane (and etcd) node safely; its
documented procedure is a manual sequence of inventory reordering,
several playbooks and an edit of the ``cluster-info`` ConfigMap. Heal the
whole VNF instead.

The whole VNF: heal_start unregisters the VIM, removes the old cluster's
inventory directory and key pair from the Ansible server and forgets the
instance's state; heal_end is a full instantiate on the new VMs.
"""

from k8s_mgmt.engine import scripts
from k8s_mgmt.modes.kubespray import lb as lb_mod
from k8s_mgmt.modes.kubespray import server_phases
from k8s_mgmt.modes.kubespray import worker_phases
from k8s_mgmt.shared_phases import cluster_access
from k8s_mgmt.shared_phases import forget
from k8s_mgmt.shared_phases import heal_plan
from k8s_mgmt.shared_phases import heal_worker
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import scaling


HealRefused = heal_plan.HealRefused


def _targets(op, topology):
    """(workers, LB VMs) of the request's VNFC ids; HealRefused for an
    unknown id, a master or any other VNFC."""
    ids = heal_plan.requested_vnfc_ids(op.ctx.request)
    targets = heal_plan.resolve_targets(topology, ids, lb=True)
    masters = [t.name for t in targets if t.role == 'master']
    if masters:
        raise HealRefused(
            reason='%s %s a master; the kubespray mode cannot heal a master '
                   'VNFC: kubespray has no playbook that replaces a '
                   'control-plane and etcd node safely (its procedure is '
                   'manual and several steps long). Heal the whole VNF '
                   'instead, or heal only workers'
                   % (', '.join(masters),
                      'is' if len(masters) == 1 else 'are'))
    return (tuple(t for t in targets if t.role == 'worker'),
            tuple(t for t in targets if t.role == 'lb'))


def build_vnfcs_start(op):
    """heal_start with VNFC ids: the workers leave the cluster; the LB
    VM's host key is forgotten (its port, so its address, stays)."""
    topology = yield from server_phases.read_topology(op)
    workers, lbs = _targets(op, topology)
    if lbs:
        yield heal_worker.forget_pins_phase(op, lbs)
    return (yield from worker_phases.remove_workers(
        op, topology, workers, force=op.params.force_drain,
        forget_pins=True))


def build_vnfcs_end(op):
    """heal_end with VNFC ids: a new LB VM gets its configuration; the
    replacement VMs join as workers."""
    topology = yield from server_phases.read_topology(op)
    workers, lbs = _targets(op, topology)
    ends = scripts.lb_endpoints(topology)
    if lbs:
        yield node_work.connect_phase(op, 'Connect to the load balancer',
                                      lbs)
        yield lb_mod.upload_phase(op, lbs)
        yield lb_mod.lb_phase(op, topology, ends)
    if not workers:
        return {'healed': [n.name for n in lbs]}
    _master, access = yield from scaling.connect_master(op, topology)
    states = yield cluster_access.nodes_phase(op, access)
    todo = [w for w in workers
            if not (w.name in states and states[w.name].ready)]
    server = yield server_phases.connect_phase(
        op, 'Connect to the Ansible server, the healed workers and the '
        'load balancer', tuple(todo) + topology.lbs)
    yield from worker_phases.add_workers(
        op, topology, access, server, ends, workers, todo,
        'Run scale.yml on the healed workers')
    return {'healed': [n.name for n in workers + lbs]}


def build_vnf_start(op):
    """heal_start of the whole VNF: forget the old cluster."""
    yield forget.unregister_phase(op)
    server = yield server_phases.connect_phase(
        op, 'Connect to the Ansible server', ())
    yield server_phases.remove_phase(
        op, server, title='Remove the old cluster\'s inventory and key pair '
        'from the Ansible server')
    yield forget.forget_state_phase(op)
