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

from k8s_mgmt import exceptions
from k8s_mgmt.kubespray import lb as lb_mod
from k8s_mgmt.kubespray import playbook as playbook_mod
from k8s_mgmt.kubespray import server_phases
from k8s_mgmt.operations import instantiate as kubeadm_instantiate
from k8s_mgmt.operations import node_work
from k8s_mgmt.operations import scripts

LOG = logging.getLogger(__name__)

CLUSTER = playbook_mod.PlaybookCall('cluster.yml')


def check_topology(op, topology):
    """A master and exactly one external load balancer VM."""
    if len(topology.lbs) != 1:
        raise exceptions.TopologyError(
            reason='stack %s has %d external load balancer VM(s) on port %s; '
                   'the kubespray mode needs exactly one'
                   % (op.ctx.stack_id, len(topology.lbs),
                      op.params.external_lb_param.ssh_cp_name))
    return topology


def read_topology(op):
    topology = yield node_work.topology_phase(op)
    return check_topology(op, topology)


def build(op):
    """The phases of instantiate_end (a generator: see phases.py)."""
    topology = yield from read_topology(op)
    nodes = topology.masters + topology.workers
    lb = topology.lbs[0]
    ends = scripts.lb_endpoints(topology)
    first = kubeadm_instantiate.first_master(topology,
                                             op.state.cluster_record())
    server = yield server_phases.connect_phase(
        op, 'Connect to the Ansible server, the nodes and the load '
        'balancer', nodes + (lb,))
    yield from prepare_cluster(op, server, topology, ends, nodes)
    yield lb_mod.upload_phase(op, [lb, first])
    yield lb_mod.lb_phase(op, topology, ends)

    def record():
        op.state.update_cluster_record(
            init_master_server_id=first.server_id, endpoint=ends.api_url)
    yield server_phases.playbook_phase(op, server, CLUSTER, after=record)
    access = yield node_work.api_phase(op, scripts.TITLE_TOKEN, topology,
                                       first, first)
    states = yield node_work.ready_phase(
        op, kubeadm_instantiate.TITLE_READY, access, nodes)
    yield node_work.label_phase(op, 'Label workers', access, topology,
                                topology.workers, states)
    registered = yield kubeadm_instantiate.register_phase(op, access)
    LOG.info('%s cluster ready (kubespray): %d master(s), %d worker(s), '
             'API %s', op.prefix, len(topology.masters),
             len(topology.workers), ends.api_url)
    return {'endpoint': ends.api_url, 'vim': registered,
            'nodes': sorted(states)}


def prepare_cluster(op, server, topology, ends, authorize, masters=None,
                    workers=None):
    """The inventory directory, the key pair, the key on the nodes of
    ``authorize``, and the inventory of ``masters`` + ``workers``
    (default: the topology's) with known_hosts for them."""
    yield server_phases.prepare_phase(op, server)
    public_key = yield server_phases.key_pair_phase(op, server)
    if authorize:
        yield server_phases.authorize_phase(op, authorize, public_key)
    masters = topology.masters if masters is None else masters
    workers = topology.workers if workers is None else workers
    inventory = server_phases.inventory_for(op, topology, ends, masters,
                                            workers)
    return (yield server_phases.inventory_phase(
        op, server, inventory, tuple(masters) + tuple(workers)))
