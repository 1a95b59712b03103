"""instantiate_end of the kubespray mode: kubespray builds the cluster.

The phases, in order::

    Read the topology from Heat       (masters, workers, the LB VM)
    Connect to the Ansible server, the nodes and the load balancer
                                      (the server first, its host key
                                       checked against the request's
                                       fingerprint; then the VMs all at
                                       once, new ones checked against
                                       their console)
    Prepare the inventory directory on the Ansible server
    Create the cluster's key pair on the Ansible server
    Authorize the Ansible server's key on the nodes
    Write the inventory and known_hosts on the Ansible server
    Upload the scripts                (the LB's; token-secret's, first master)
    Configure the external load balancer
                                      (before cluster.yml: kubeadm reaches
                                       the API through it)
    Run cluster.yml
    Create the VIM token              (token-secret on the first master)
    Wait until every node is Ready    (through the load balancer)
    Label workers                     (CIS-node, zone)
    Register the VIM                  (the load balancer's address)

A re-run on the same VMs is safe: the key pair and the authorized key are
kept, the inventory is written again from the topology, cluster.yml is
idempotent and the LB script changes nothing when nothing changed.
"""

from oslo_log import log as logging

from k8s_mgmt.ansible import playbook as playbook_mod
from k8s_mgmt.engine import scripts
from k8s_mgmt.modes.kubespray import lb as lb_mod
from k8s_mgmt.modes.kubespray import server_phases
from k8s_mgmt.shared_phases import cluster
from k8s_mgmt.shared_phases import cluster_access
from k8s_mgmt.shared_phases import node_work

LOG = logging.getLogger(__name__)

CLUSTER = playbook_mod.PlaybookCall('cluster.yml')


def build(op):
    """The phases of instantiate_end (a generator: see phases.py)."""
    topology = yield from server_phases.read_topology(op)
    nodes = topology.masters + topology.workers
    lb = topology.lbs[0]
    ends = scripts.lb_endpoints(topology)
    first = cluster.first_master(topology, op.state.cluster_record())
    server = yield server_phases.connect_phase(
        op, 'Connect to the Ansible server, the nodes and the load '
        'balancer', nodes + (lb,))
    yield from server_phases.prepare_cluster(op, server, topology, ends, nodes)
    yield lb_mod.upload_phase(op, [lb, first])
    yield lb_mod.lb_phase(op, topology, ends)

    def record():
        op.state.update_cluster_record(
            init_master_server_id=first.server_id, endpoint=ends.api_url)
    yield server_phases.playbook_phase(op, server, CLUSTER, after=record)
    access = yield cluster_access.api_phase(op, scripts.TITLE_TOKEN, topology,
                                            first, first)
    states = yield cluster_access.ready_phase(
        op, cluster.TITLE_READY, access, nodes)
    yield node_work.label_phase(op, 'Label workers', access, topology,
                                topology.workers, states)
    registered = yield cluster.register_phase(op, access)
    LOG.info('%s cluster ready (kubespray): %d master(s), %d worker(s), '
             'API %s', op.prefix, len(topology.masters),
             len(topology.workers), ends.api_url)
    return {'endpoint': ends.api_url, 'vim': registered,
            'nodes': sorted(states)}
