"""The phases the kubespray operations share: the Ansible server's side,
and the topology the mode needs (exactly one load balancer VM).

Connecting to the operator's Ansible server, preparing the instance's
inventory directory there, the cluster's key pair (made on the server; the
private key never leaves it), authorising its public key on the nodes over
the driver's own SSH, writing the inventory and a known_hosts file from the
driver's pinned host keys, and running one playbook. Each returns a
:class:`~k8s_mgmt.engine.phases.Phase` with its work as data, so
``k8s-mgmt plan`` shows the inventory as it would be written and every
playbook with its arguments.
"""

import dataclasses
import ipaddress

from k8s_mgmt import exceptions
from k8s_mgmt.ansible import ansible_server as server_mod
from k8s_mgmt.ansible import inventory as inventory_mod
from k8s_mgmt.ansible import playbook as playbook_mod
from k8s_mgmt.ansible import server_trust
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import sessions as sessions_mod
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.topology import model

Phase = phases.Phase

SERVER_NAME = 'ansible-server'
TITLE_INVENTORY = 'Write the inventory and known_hosts on the Ansible server'
# What a dry run shows for the key ssh-keygen makes on the Ansible server
# (the shape of a public key line; not a key).
PLANNED_PUBLIC_KEY = 'ssh-ed25519 AAAAplanned k8s-mgmt-made-at-the-first-run'


def server_node(params):
    """The Ansible server as a node of the operation (not of the stack:
    it has no server id; its host key is pinned by address)."""
    server_mod.check_address(params.ansible)
    address = params.ansible.ip_address
    return model.Node(role='ansible', name=SERVER_NAME, server_id=None,
                      vnfc_id=None, resource_name=None, stack_id=None,
                      parent_resource=None, ssh_ip=address, nic_ip=address,
                      compute_host=None, server_groups=(), status=None)


def connect_phase(op, title, nodes):
    """A session to the Ansible server, then to ``nodes`` all at once;
    the server's phases use the returned AnsibleServer."""
    server = server_node(op.params)
    everyone = [server] + list(nodes)
    done = node_work.connect_phase(op, title, everyone)

    def connect():
        if not op.connected(SERVER_NAME):
            # A session of its own: its first contact is checked against
            # the request's fingerprint, where the nodes' use the console.
            op.sessions.adopt({SERVER_NAME: server_trust.open_session(
                sessions_mod.target_for(server, op.params), op.params.ansible,
                op.store)})
        done.action()
        return server_mod.AnsibleServer(op.session(SERVER_NAME),
                                        op.params.ansible,
                                        op.ctx.vnf_instance_id)
    return dataclasses.replace(
        done, action=connect,
        assume=op.assume(lambda: server_mod.AnsibleServer(
            None, op.params.ansible, op.ctx.vnf_instance_id)))


def prepare_phase(op, server):
    return Phase(
        'Prepare the inventory directory on the Ansible server',
        nodes=(SERVER_NAME,),
        work=(phases.Work(SERVER_NAME, 'ssh', 'mkdir -p -m 0700 %s'
                          % server.inventory_dir),
              phases.Work(SERVER_NAME, 'sftp', 'put %s/callback_plugins/'
                          'k8s_mgmt_events.py (mode 0600)'
                          % server.inventory_dir)),
        action=server.prepare)


def key_pair_phase(op, server):
    return Phase(
        'Create the cluster\'s key pair on the Ansible server',
        nodes=(SERVER_NAME,),
        work=(phases.Work(SERVER_NAME, 'ssh', 'ssh-keygen -t ed25519 -N \'\' '
                          '-f %s (unless it exists; the private key stays '
                          'there)' % server.key_path),),
        action=server.ensure_key_pair, assume=PLANNED_PUBLIC_KEY)


def authorize_phase(op, nodes, public_key):
    """The cluster's public key in each node's authorized_keys, over the
    driver's own (host-key checked) sessions."""
    command = server_mod.authorize_key_command(public_key)

    def authorize():
        return op.on_nodes('authorize key', nodes,
                           lambda node, session: session.run(
                               command, step='authorize key'))
    return Phase('Authorize the Ansible server\'s key on %s'
                 % _listed(nodes), nodes=node_work.names(nodes),
                 parallel=True,
                 work=tuple(phases.command_work(n.name, command)
                            for n in nodes),
                 action=authorize)


def inventory_for(op, topology, ends, masters=None, workers=None):
    """The inventory of ``masters`` and ``workers`` (default: the
    topology's), as data."""
    masters = topology.masters if masters is None else masters
    workers = topology.workers if workers is None else workers
    if op.dry:
        masters, workers = _planned(masters), _planned(workers)
    users = {n.name: op.params.group(n.role).username
             for n in tuple(masters) + tuple(workers)}
    return inventory_mod.build(
        masters, workers, lb_address=ends.join.rsplit(':', 1)[0],
        lb_port=ends.api_port, users=users,
        pod_cidr=op.params.effective_pod_cidr,
        service_cidr=op.params.effective_service_cidr,
        extra_sans=ends.extra_sans)


def _planned(nodes):
    """A dry run's nodes with the addresses of VMs Heat has not made yet
    shown as documentation addresses (198.51.100.x)."""
    out = []
    for index, node in enumerate(nodes, 1):
        if not _is_address(node.ssh_ip) or not _is_address(node.nic_ip):
            address = '198.51.100.%d' % index
            node = dataclasses.replace(node, ssh_ip=address, nic_ip=address)
        out.append(node)
    return tuple(out)


def _is_address(text):
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def inventory_phase(op, server, inventory, nodes, title=TITLE_INVENTORY):
    """hosts.yaml and known_hosts (the pinned keys of ``nodes``) on the
    Ansible server."""
    text = inventory_mod.to_yaml(inventory)

    def write():
        server.write_known_hosts(server_mod.known_hosts_lines(nodes,
                                                              op.store))
        server.write_inventory(inventory)
        return inventory
    return Phase(
        title, nodes=(SERVER_NAME,),
        work=(phases.Work(SERVER_NAME, 'sftp', 'put %s (mode 0600):\n%s'
                          % (server.inventory_path, text.rstrip())),
              phases.Work(SERVER_NAME, 'sftp', 'put %s (mode 0600): the '
                          'pinned host keys of %s'
                          % (server.known_hosts_path, _listed(nodes)))),
        action=write, assume=inventory)


def playbook_phase(op, server, call, title=None, after=None):
    """One ansible-playbook run on the Ansible server; its result is the
    PlaybookResult (recap, failures). ``after`` runs once it succeeded."""
    def run():
        result = server.run(call)
        if after is not None:
            after()
        return result

    def assumed():
        return playbook_mod.PlaybookResult(
            playbook=call.playbook, recap={h: {} for h in call.limit},
            failures=(), seconds=0.0)
    return Phase(title or 'Run %s' % call.playbook, nodes=(SERVER_NAME,),
                 work=(phases.Work(SERVER_NAME, 'ssh', 'cd %s && %s' % (
                     op.params.ansible.kubespray_root_path,
                     call.display(server.inventory_path))),),
                 action=run, assume=op.assume(assumed))


def remove_phase(op, server, title=None):
    """The instance's inventory directory, key pair included, removed
    from the Ansible server."""
    return Phase(title or 'Remove the inventory and key pair from the '
                 'Ansible server', nodes=(SERVER_NAME,),
                 work=(phases.Work(SERVER_NAME, 'ssh', 'rm -rf %s'
                                   % server.inventory_dir),),
                 action=server.remove)


def _listed(nodes):
    names = node_work.names(nodes)
    if len(names) > 4:
        return '%d nodes' % len(names)
    return ', '.join(names) or 'no node'


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


def prepare_cluster(op, server, topology, ends, authorize, masters=None,
                    workers=None):
    """The inventory directory, the key pair, the key on the nodes of
    ``authorize``, and the inventory of ``masters`` + ``workers``
    (default: the topology's) with known_hosts for them."""
    yield prepare_phase(op, server)
    public_key = yield key_pair_phase(op, server)
    if authorize:
        yield authorize_phase(op, authorize, public_key)
    masters = topology.masters if masters is None else masters
    workers = topology.workers if workers is None else workers
    inventory = inventory_for(op, topology, ends, masters, workers)
    return (yield inventory_phase(
        op, server, inventory, tuple(masters) + tuple(workers)))
