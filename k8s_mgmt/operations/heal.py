"""Heal: one or more master or worker VNFCs, or the whole VNF.

The VNFC ids of the request map to nodes through the instance's
``vnfc_resource_info`` (server id -> VNFC id) and the Heat topology. An
unknown id, the only master or an etcd quorum at risk stop the heal before
anything changes. Masters are handled first (one etcd change at a time),
then workers. See heal_master.py, heal_worker.py and heal_vnf.py.
"""

from k8s_mgmt.operations import heal_master
from k8s_mgmt.operations import heal_plan
from k8s_mgmt.operations import heal_run
from k8s_mgmt.operations import heal_vnf
from k8s_mgmt.operations import heal_worker

HealRefused = heal_plan.HealRefused


def _split(targets):
    return ([t for t in targets if t.role == 'master'],
            [t for t in targets if t.role == 'worker'])


def _api_through_a_master(run, targets):
    """Open the API through a master that is not being healed."""
    helper, _reachable = heal_master.pick_helper(run, targets)
    run.open_api(helper)
    return helper


def heal_vnfcs_start(ctx):
    """heal_start with VNFC ids: take the nodes out of the cluster."""
    with heal_run.HealRun(ctx) as run:
        run.read_topology()
        masters, workers = _split(run.targets())
        if masters:
            heal_master.refuse_unless_healable(run, masters)
            heal_master.remove_masters(run, masters)
        if workers:
            if run.api is None:
                _api_through_a_master(run, workers)
            reachable = run.steps.run('Probe the workers to heal', run.probe,
                                      workers)
            heal_worker.remove_workers(run, workers, reachable)


def heal_vnfcs_end(ctx):
    """heal_end with VNFC ids: join the replacement VMs."""
    with heal_run.HealRun(ctx) as run:
        run.read_topology()
        masters, workers = _split(run.targets())
        helper = None
        if masters:
            helper = heal_master.join_masters(run, masters)
        if workers:
            if run.api is None:
                helper = _api_through_a_master(run, workers)
            run.connect([helper] + workers)
            heal_worker.join_workers(run, workers, helper)


def heal_vnf_start(ctx):
    """heal_start for the whole VNF: unregister the VIM, forget state."""
    heal_vnf.heal_vnf_start(ctx)


def heal_vnf_end(ctx):
    """heal_end for the whole VNF: a full instantiate on the new VMs."""
    return heal_vnf.heal_vnf_end(ctx)
