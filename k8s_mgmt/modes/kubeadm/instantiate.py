"""instantiate_end: turn the VMs Heat created into a Kubernetes cluster.

The phases, in order (HA only: the prefix read and the load balancer)::

    Read the topology from Heat
    Connect to every node           (all at once: bad credentials fail fast)
    Upload the scripts
    Read the cluster network's prefix on <first master>
    Prepare <first master> meanwhile
                                    (in the background: containerd,
                                     kernel, packages; the scripts take
                                     turns at apt-get)
    Configure the load balancer on <first master>
                                    (it tracks HAProxy only: it wins the
                                     VIP during its init)
    Wait until <first master> is prepared
    Initialise the first master     (kubeadm init; it prints the join
                                     data and the VIM's token. Meanwhile
                                     the other nodes get ready to join
                                     (prepare), the other masters'
                                     load balancers are configured (no
                                     join needs them), and with a storage
                                     server
                                     it is set up and every NFS client
                                     installed: storage.py)
    Create the VIM token            (token-secret: only when the package's
                                     install script cannot print it)
    Read the cluster's nodes        (who is Ready already: no join again)
    Read join data                  (print-join: likewise)
    Join workers                    (all at once, bounded; in the
                                     background while masters join)
    Join master <name>              (one at a time: etcd membership)
    Wait for the workers to join    (only when masters joined meanwhile)
    Track the API server in keepalived on <first master>
                                    (HA; in the background)
    Wait until every node is Ready  (Kubernetes API, backoff to a deadline)
    Label workers                   (CIS-node, zone)
    Register the PersistentVolumes  (storage server only; then wait until
                                     they are Available)
    Register the VIM

Read -> decide -> act: what the API reports decides what still has to be
done, so a re-run on the same VMs completes a half-built cluster and changes
nothing on a finished one. The scripts themselves skip what is done.
"""

import dataclasses

from oslo_log import log as logging

from k8s_mgmt.engine import phases
from k8s_mgmt.engine import script_output
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import uploads
from k8s_mgmt.shared_phases import cluster
from k8s_mgmt.shared_phases import cluster_access
from k8s_mgmt.shared_phases import early_join
from k8s_mgmt.shared_phases import heal_plan
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import storage

LOG = logging.getLogger(__name__)

Phase = phases.Phase
TITLE_WAIT_WORKERS = 'Wait for the workers to join'
TITLE_TRACK_APISERVER = 'Track the API server in keepalived on %s'
TITLE_PREPARE_ALONGSIDE = '; prepare the other nodes meanwhile'
TITLE_LB_FIRST = 'Configure the load balancer on %s'
TITLE_PREPARE_FIRST = 'Prepare %s meanwhile'
TITLE_WAIT_FIRST = 'Wait until %s is prepared'
TITLE_LB_ALONGSIDE = '; configure the other masters\' load balancers'
PLANNED_REPORT = script_output.InitReport(node_work.PLANNED_JOIN,
                                          cluster_access.PLANNED_CREDENTIALS)


def track_apiserver_phase(op, topology, first, prefix):
    """configure_lb.sh without -B on the initialised master: keepalived
    tracks its API server from now on, as on every other master."""
    return cluster.lb_phase(
        op, TITLE_TRACK_APISERVER % first.name, topology, heal_plan.lb_full(
            topology, prefix, op.state.vrrp_password(),
            reachable={first.name}))


def prepare_first_meanwhile(op, first, ends):
    """Phases: the install script's prepare on ``first`` in the background
    (its load balancer is set up meanwhile; the init then skips the
    prepare's checks: node_work.prepared), when both scripts take turns at
    apt-get on a node (feature apt-turn: apt-get update fails at once on
    another's lock). Returns the phase that waits for it, or None when it
    did not start."""
    if not op.scripts.features.apt_turn:
        return None
    # The scripts were uploaded to every node already.
    return (yield from node_work.prepare_in_background(
        op, TITLE_PREPARE_FIRST % first.name, TITLE_WAIT_FIRST % first.name,
        [first], ends, upload=False))


def with_prepare(op, first, ends, nodes, alongside):
    """``alongside`` (node_work.Alongside; None: nothing yet) with the
    install script's prepare mode first on every node but ``first``: they
    get ready to join while the first master initialises."""
    others = [n for n in nodes if n is not first]
    for node in others:
        op.prepared.add(node.name)
    return (alongside or node_work.Alongside()).adding(
        others, {n.name: [scripts.prepare_call(
            n, op.params, ends, apt_repo=op.scripts.features.apt_repo)]
            for n in others}, before=True)


def with_lb(topology, change, alongside):
    """``alongside`` (as with_prepare) with the load balancer calls of
    ``change`` (heal_plan.LBChange) after what each master runs there."""
    alongside = alongside or node_work.Alongside()
    added = {}
    for call in change.calls:
        added.setdefault(call.node, []).append(call)
    running = set(alongside.calls) | set(added)
    return alongside.adding(
        [m for m in topology.masters if m.name in running], added)


def record_init(op, first, ends):
    """The cluster record names the initialised master and the endpoint."""
    op.state.update_cluster_record(
        init_master_server_id=first.server_id, endpoint=ends.api_url,
        kubernetes_version=op.params.kubernetes_version)


def init_phase(op, first, ends, alongside=None):
    """kubeadm init on ``first``. ``alongside`` (node_work.Alongside):
    what runs at the same time as the init, on the other nodes
    (prepare: with_prepare) and with a storage server its setup and the
    NFS clients (the first master installs its own once its init is
    done). The result: the join data and the VIM's
    credentials the init printed (script_output.InitReport), or None when the
    install script cannot print them."""
    report = op.scripts.features.init_report
    call = scripts.init_call(first, op.params, ends, report=report,
                             prepared=node_work.prepared(op, first),
                             apt_repo=op.scripts.features.apt_repo)

    def record():
        record_init(op, first, ends)

    def read(result):
        if not report:
            return None
        return script_output.InitReport.from_output(
            first.name, call.mode, result.stdout, need_key=op.params.is_ha)

    def init():
        result = op.run_script(first, call)
        record()
        return read(result)
    assume = op.assume(PLANNED_REPORT) if report else None
    if alongside is None:
        return Phase(scripts.title_init(first), nodes=(first.name,),
                     work=(phases.script_work(call, uploads.REMOTE_DIR),),
                     action=init, assume=assume)
    nodes, calls = alongside.nodes, dict(alongside.calls)
    calls[first.name] = [call] + list(calls.get(first.name, ()))
    title = scripts.title_init(first)
    if storage.enabled(op.params):
        title += storage.TITLE_ALONGSIDE_INIT
    modes = {c.mode for n in nodes if n is not first
             for c in calls.get(n.name, ())}
    if 'prepare' in modes:
        title += TITLE_PREPARE_ALONGSIDE
    if 'configure-lb' in modes:
        title += TITLE_LB_ALONGSIDE
    phase = node_work.scripts_phase(
        op, title, [first] + [n for n in nodes if n is not first], calls,
        'init', after=record)
    return dataclasses.replace(
        phase, action=lambda: read(phase.action()[first.name][0]),
        assume=assume)


def build(op):
    """The phases of instantiate_end (a generator: see phases.py)."""
    params = op.params
    topology = yield node_work.topology_phase(op)
    nodes = topology.masters + topology.workers
    alongside = None
    if storage.enabled(params):
        # Checked before any VM is touched: the volumes are attached.
        server, server_call = storage.server_call(op, topology)
        alongside = storage.alongside_init(op, nodes, server, server_call)
        everyone = nodes + (server,)
    else:
        everyone = nodes
    yield node_work.connect_phase(op, 'Connect to every node', everyone)
    for script in op.scripts.shipped_instead(everyone):
        LOG.info('%s using the shipped %s (%s): the VNF package has none '
                 'at %s', op.prefix, script.name, script.origin,
                 uploads.package_path(params, script.name))
    yield node_work.upload_phase(op, everyone)
    first = cluster.first_master_of(op, topology)
    ends = scripts.endpoints(topology, params, first)
    features = op.scripts.features
    bootstrap = params.is_ha and features.lb_bootstrap
    others_lb = None
    if params.is_ha:
        prefix = yield cluster.prefix_phase(op, topology, first)
        own, others_lb = heal_plan.split_lb(heal_plan.lb_full(
            topology, prefix, op.state.vrrp_password(),
            bootstrap=first.name if bootstrap else None), {first.name})
        # The init needs the VIP, so the first master's load balancer
        # first, with its prepare meanwhile when the scripts take turns at
        # apt-get; the other masters' during the init (after their
        # prepare).
        prepared = yield from prepare_first_meanwhile(op, first, ends)
        yield cluster.lb_phase(op, TITLE_LB_FIRST % first.name, topology,
                               own)
        if prepared is not None:
            yield prepared
    if features.prepare:
        alongside = with_prepare(op, first, ends, nodes, alongside)
    if others_lb is not None and others_lb.calls:
        alongside = with_lb(topology, others_lb, alongside)
    if early_join.offered(op):
        # The joins start on the init's join data line (early_join.py).
        join, init_end = yield from early_join.init_phases(
            op, first, ends, alongside, lambda: record_init(op, first, ends),
            PLANNED_REPORT)
        states = yield early_join.known_nodes_phase(op, ends)
        yield from join_missing(op, topology, first, ends, states, join)
        report = yield init_end
        access = cluster_access.access_with(op, ends, report.credentials)
    else:
        report = yield init_phase(op, first, ends, alongside)
        if report is None:
            access = yield cluster_access.api_phase(op, scripts.TITLE_TOKEN,
                                                    topology, first, first)
        else:
            access = cluster_access.access_with(op, ends, report.credentials)
        # Joins need no Ready master, only a working API: do not wait
        # longer.
        states = yield cluster_access.nodes_phase(op, access)
        yield from join_missing(op, topology, first, ends, states,
                                report.join if report else None)
    if bootstrap:
        # After the joins, which go through the VIP: a keepalived reload
        # keeps the VIP where it is. The runner waits for it at the end.
        yield dataclasses.replace(track_apiserver_phase(
            op, topology, first, prefix), background=True)
    states = yield cluster_access.ready_phase(op, cluster.TITLE_READY, access,
                                              nodes)
    yield node_work.label_phase(op, 'Label workers', access, topology,
                                topology.workers, states)
    yield from node_work.helm_phases(op, topology.masters)
    if storage.enabled(params):
        yield from storage.register_phases(op, access, topology)
    registered = yield cluster.register_phase(op, access)
    LOG.info('%s cluster ready: %d master(s), %d worker(s), API %s',
             op.prefix, len(topology.masters), len(topology.workers),
             ends.api_url)
    return {'endpoint': ends.api_url, 'vim': registered,
            'nodes': sorted(states)}


def join_missing(op, topology, first, ends, states, join=None):
    """Join the masters (one at a time) and the workers that are not
    Ready yet; ``join``: the join data when known (else print-join)."""
    ready = {name for name, s in states.items() if s.ready}
    masters = [m for m in topology.masters
               if m is not first and m.name not in ready]
    workers = [w for w in topology.workers if w.name not in ready]
    if not (masters or workers):
        yield phases.skipped('Join nodes', 'every node is already Ready')
        return
    if join is None:
        join = yield node_work.join_data_phase(op, first,
                                               for_masters=bool(masters))
    # Their NFS clients were installed during the init.
    if workers:
        workers_phase = node_work.join_workers_phase(
            op, scripts.TITLE_JOIN_WORKERS, workers, ends, join,
            nfs_client=False)
    else:
        workers_phase = phases.skipped(scripts.TITLE_JOIN_WORKERS,
                                       'every worker is already Ready')
    if not (masters and workers):
        for master in masters:
            yield node_work.join_master_phase(op, master, ends, join,
                                              nfs_client=False)
        yield workers_phase
        return
    # Workers need only the API (through the endpoint), not the other
    # masters: they join while the masters join one at a time.
    workers_phase = dataclasses.replace(workers_phase, background=True)
    joining = yield workers_phase
    for master in masters:
        yield node_work.join_master_phase(op, master, ends, join,
                                          nfs_client=False)
    yield phases.wait_for(TITLE_WAIT_WORKERS, workers_phase, joining)
