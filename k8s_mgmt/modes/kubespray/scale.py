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

from k8s_mgmt.engine import phases
from k8s_mgmt.engine import scripts
from k8s_mgmt.modes.kubespray import server_phases
from k8s_mgmt.modes.kubespray import worker_phases
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import scale_plan
from k8s_mgmt.shared_phases import scaling

Phase = phases.Phase


def build_scale_out(op):
    """The phases of scale_end for SCALE_OUT."""
    scale_plan.check_worker_aspect(op.params, scaling.aspect_id(op))
    topology = yield from server_phases.read_topology(op)
    new, todo, _master, access = yield from scaling.find_new_workers(
        op, topology)
    ends = scripts.lb_endpoints(topology)
    server = yield server_phases.connect_phase(
        op, 'Connect to the Ansible server, the new workers and the load '
        'balancer', tuple(todo) + topology.lbs)
    labelled = yield from worker_phases.add_workers(
        op, topology, access, server, ends, new, todo,
        'Run scale.yml on the new workers')
    return {'joined': [n.name for n in todo],
            'nodes': [n.name for n in new], 'labels': labelled}


def build_scale_in(op):
    """The phases of scale_start for SCALE_IN."""
    scale_plan.check_worker_aspect(op.params, scaling.aspect_id(op))
    topology = yield from server_phases.read_topology(op)
    removal = yield node_work.local_phase(
        op, 'Find the workers to remove', scale_plan.nodes_to_remove,
        topology, list(op.ctx.scale_names), [])
    scaling.check_removal(op, removal, False)
    return (yield from worker_phases.remove_workers(
        op, topology, removal.workers, force=op.params.force_drain))


def build_rollback(op):
    """scale_start rolling a failed SCALE_OUT back: remove what joined
    (the VMs go with Heat's rollback: a blocked drain must not stop it)."""
    topology = yield from server_phases.read_topology(op)
    removal = yield node_work.local_phase(
        op, 'Find the workers to remove', scale_plan.nodes_to_remove,
        topology, list(op.ctx.scale_names), list(op.ctx.scale_out_ids))
    scaling.check_removal(op, removal, True)
    return (yield from worker_phases.remove_workers(
        op, topology, removal.workers, force=True))
