"""Heal worker VNFCs.

heal_start::

    Check the registered VIM's credentials  (when the API refuses them:
                                     a master's, through SSH)
    Probe the workers to heal        (a dead VM answers nothing: no drain)
    Read the cluster's nodes
    Remove <worker>                  (cordon, drain via Eviction, stop
                                     its kubelet, delete)
    Forget the healed VMs' host keys

heal_end (Heat replaced the VMs: new server ids, same VNFC ids)::

    Connect to <helper>, <workers>
    Upload the scripts and prepare the workers  (in the background: the
                                     install script's prepare mode)
    Read the cluster's nodes
    Remove leftover nodes            (NotReady nodes Heat no longer has)
    Read join data                   (print-join on one master)
    Wait until the workers are prepared
    Join workers                     (all at once)
    Wait until the healed nodes are Ready
    Label workers                    (CIS-node from the NEW compute host)
    Find worker VMs that are no node (Heat may add one beside the heal:
                                     joined like the healed ones)

Each phase decides from what the API reports: a node already gone is not
drained again, a replacement already Ready is not joined again.
"""

from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import ssh
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import scripts
from k8s_mgmt.kube import drain
from k8s_mgmt.shared_phases import cluster_access
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import scaling

LOG = logging.getLogger(__name__)

Phase = phases.Phase
# A kubelet registers its Node when it starts: left running after its Node
# is deleted and restarted before Heat deletes the VM (after a crash, say),
# it registers the Node again, which then outlives the VM. Stopped, it does
# not restart. Its containers keep running (a master's static pods: the API
# server and etcd member still serve).
STOP_KUBELET = ssh.Command('systemctl', 'stop', 'kubelet').sudo()
TITLE_READY = 'Wait until the healed nodes are Ready'
TITLE_PREPARE = 'Upload the scripts and prepare the workers'
TITLE_WAIT_PREPARED = 'Wait until the workers are prepared'


def stop_kubelet(op, name):
    """Stop the kubelet of a node about to be deleted; a failure (the node
    died meanwhile, say) is only logged: the Node is deleted anyway."""
    try:
        result = op.session(name).run(STOP_KUBELET, step='stop kubelet',
                                      check=False, timeout=60)
        problem = None if result.ok else 'exit %s' % result.status
    except exceptions.SSHError as err:
        problem = str(err)
    if problem:
        LOG.warning('%s %s: stopping the kubelet failed (%s); it may '
                    'register its Node again until its VM is deleted',
                    op.prefix, name, problem)


def remove_phase(op, access, name, unreachable, force, title=None):
    """Cordon, drain (unless unreachable), stop the kubelet (when the node
    answers SSH) and delete one node."""
    work = (scaling.drain_work(name, force, unreachable),)
    if not unreachable:
        work += (phases.command_work(name, STOP_KUBELET),)
    before_delete = (None if unreachable
                     else lambda _report: stop_kubelet(op, name))
    return Phase(title or 'Remove %s' % name, nodes=(name,), work=work,
                 action=lambda: drain.drain_and_delete(
                     access.api, name, force=force,
                     node_unreachable=unreachable, prefix=op.prefix,
                     before_delete=before_delete),
                 assume=drain.DrainReport(node=name, node_deleted=True))


def forget_pins_phase(op, nodes):
    return Phase('Forget the healed VMs\' host keys',
                 nodes=node_work.names(nodes),
                 work=(phases.Work(None, 'local', 'drop the pinned host keys '
                                   'of servers %s' % ', '.join(
                                       n.server_id for n in nodes)),),
                 action=lambda: op.forget_pins(nodes))


def remove_workers(op, access, workers, reachable):
    """heal_start for workers: each drained (if alive) and deleted."""
    states = yield cluster_access.nodes_phase(op, access, wait=False)
    for worker in workers:
        if worker.name not in states:
            yield phases.skipped('Remove %s' % worker.name,
                                 'the cluster has no such node')
            continue
        yield remove_phase(op, access, worker.name,
                           worker.name not in reachable,
                           op.params.force_drain)
    yield forget_pins_phase(op, workers)


def leftover_nodes(topology, states):
    """NotReady nodes that no VM of the topology carries: what a healed
    or deleted VM left behind when nobody removed its Node."""
    known = {n.name for n in topology.all_nodes()}
    return sorted(name for name, state in states.items()
                  if name not in known and not state.ready)


TITLE_STRAYS = 'Find worker VMs that are no node'


def stray_workers(topology, states, targets):
    """Worker VMs of the stack that the cluster has no node for and that
    were not healed: what Heat added beside the heal."""
    healed = {t.name for t in targets}
    return [w for w in topology.workers
            if w.name not in states and w.name not in healed]


def join_strays(op, topology, access, targets, helper):
    """heal_end, after the healed VMs joined: join every worker VM Heat
    added beside them, so that the cluster matches the stack again.

    Tacker 16 heals a VNFC by updating the stack with each group's
    desired capacity computed from its own scale level; after a rolled
    back scale-out that level is one step too high (seen in the lab:
    instantiate, a failed scale-out rolled back, scale out, scale in,
    heal a worker), so Heat builds a worker the heal did not ask for.
    Joined, it is a worker like the others, and Tacker lists it."""
    states = yield cluster_access.nodes_phase(op, access, title=TITLE_STRAYS,
                                              wait=False)
    strays = stray_workers(topology, states, targets)
    if not strays:
        return
    LOG.warning('%s worker VM(s) %s of the stack are no node and were not '
                'healed (Heat added them beside the heal): joining them',
                op.prefix, ', '.join(w.name for w in strays))
    yield from join_workers(op, topology, access, strays, helper)


def join_workers(op, topology, access, workers, helper):
    """heal_end for workers: join the replacements, label them."""
    yield node_work.connect_phase(op, 'Connect to %s' % ', '.join(
        node_work.names([helper] + list(workers))), [helper] + list(workers))
    # The replacements get ready while the API is read and print-join runs
    # on the helper.
    wait = yield from node_work.prepare_in_background(
        op, TITLE_PREPARE, TITLE_WAIT_PREPARED, workers, access.ends)
    states = yield cluster_access.nodes_phase(op, access)
    gone = leftover_nodes(topology, states)
    if not gone:
        yield phases.skipped('Remove leftover nodes', 'none')
    for name in gone:
        yield remove_phase(op, access, name, True, False,
                           title='Remove leftover node %s' % name)
    todo = [w for w in workers
            if not (w.name in states and states[w.name].ready)]
    yield from node_work.join_workers(op, scripts.TITLE_JOIN_WORKERS, todo,
                                      helper, access.ends,
                                      'every healed worker is already Ready',
                                      prepared=wait)
    states = yield cluster_access.ready_phase(op, TITLE_READY, access, workers)
    yield node_work.label_phase(op, 'Label workers', access, topology,
                                workers, states)
