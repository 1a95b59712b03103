"""Heal worker VNFCs.

heal_start::

    Probe the workers to heal        (a dead VM answers nothing: no drain)
    Remove <worker>                  (cordon, drain via Eviction, delete)
    Forget the healed VMs' host keys

heal_end (Heat replaced the VMs: new server ids, same VNFC ids)::

    Remove leftover nodes            (NotReady nodes Heat no longer has)
    Upload the scripts               (replacements only)
    Read join data                   (print-join on one master)
    Join workers                     (all at once)
    Wait until the healed nodes are Ready
    Label workers                    (CIS-node from the NEW compute host)

Each step decides from what the API reports: a node already gone is not
drained again, a replacement already Ready is not joined again.
"""

from oslo_log import log as logging

from k8s_mgmt.kube import drain
from k8s_mgmt.operations import labels as labels_mod
from k8s_mgmt.operations import scripts

LOG = logging.getLogger(__name__)


def remove_workers(run, workers, reachable):
    """heal_start for workers: each drained (if alive) and deleted."""
    states = run.api.nodes()
    for worker in workers:
        if worker.name not in states:
            run.steps.skip('Remove %s' % worker.name,
                           'the cluster has no such node')
            continue
        run.steps.run('Remove %s' % worker.name, drain.drain_and_delete,
                      run.api, worker.name, force=run.params.force_drain,
                      node_unreachable=worker.name not in reachable,
                      prefix=run.prefix)
    run.steps.run('Forget the healed VMs\' host keys', run.forget_pins,
                  workers)


def leftover_nodes(topology, states):
    """NotReady nodes that no VM of the topology carries: what a healed
    or deleted VM left behind when nobody removed its Node."""
    known = {n.name for n in topology.all_nodes()}
    return sorted(name for name, state in states.items()
                  if name not in known and not state.ready)


def remove_leftovers(run, states):
    gone = leftover_nodes(run.topology, states)
    if not gone:
        run.steps.skip('Remove leftover nodes', 'none')
        return
    for name in gone:
        run.steps.run('Remove leftover node %s' % name,
                      drain.drain_and_delete, run.api, name,
                      node_unreachable=True, prefix=run.prefix)


def join_workers(run, workers, helper):
    """heal_end for workers: join the replacements, label them."""
    states = run.api.wait_answering()
    remove_leftovers(run, states)
    todo = [w for w in workers
            if not (w.name in states and states[w.name].ready)]
    if todo:
        run.steps.run('Upload the scripts', run.upload, todo)
        join = run.steps.run(scripts.TITLE_JOIN_DATA, run.join_data, helper)
        calls = {w.name: scripts.join_call(w, run.params, run.ends, join)
                 for w in todo}
        run.steps.run(scripts.TITLE_JOIN_WORKERS, run.on_nodes,
                      'join-worker', todo,
                      lambda node: run.run_script(node, calls[node.name]))
    else:
        run.steps.skip(scripts.TITLE_JOIN_WORKERS,
                       'every healed worker is already Ready')
    states = run.steps.run('Wait until the healed nodes are Ready',
                           run.api.wait_ready, [w.name for w in workers],
                           prefix=run.prefix)
    run.steps.run('Label workers', label_workers, run, workers, states)


def label_workers(run, workers, states):
    """Labels of the healed workers, derived from their NEW placement."""
    names = {w.name for w in workers}
    wanted = {name: labels for name, labels in
              labels_mod.worker_labels(run.topology, run.ctx.grant).items()
              if name in names}
    return labels_mod.apply_missing(run.api, wanted, states, run.prefix)
