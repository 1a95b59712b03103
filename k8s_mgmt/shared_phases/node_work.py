"""The phases every operation shares, written once.

Reading the topology, connecting, uploading the scripts, getting an API
client from a master, reading join data, joining workers, waiting for
Ready nodes and labelling workers: each is a function of the operation
(:class:`~k8s_mgmt.engine.run.OperationRun`) and the facts it has,
returning a :class:`~k8s_mgmt.engine.phases.Phase` with its work as
data, what a dry run assumes it returns, and the action that does it.
"""

import dataclasses
import typing

from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import script_output
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import uploads
from k8s_mgmt.shared_phases import labels as labels_mod
from k8s_mgmt.topology import from_params
from k8s_mgmt.topology import heat

Phase = phases.Phase

LOG = logging.getLogger(__name__)

TITLE_TOPOLOGY = 'Read the topology from Heat'
TITLE_UPLOAD = 'Upload the scripts'

# What a dry run shows for the output of print-join.
PLANNED_JOIN = script_output.JoinData(
    token=secrets.Secret('<token from print-join>'),
    ca_cert_hash='sha256:<CA hash from print-join>',
    certificate_key=secrets.Secret('<certificate key from print-join>'))
PLANNED_TOKEN = dataclasses.replace(PLANNED_JOIN, certificate_key=None)


def names(nodes):
    return tuple(n.name for n in nodes)


def read_topology(ctx):
    """The instance's topology, read from Heat; checked for a master (and
    a VIP for an HA flavour)."""
    spec = from_params.spec_from_params(ctx.params)
    vim_info = ctx.vim_info
    if vim_info is None:
        try:
            vim_info = heat.vim_info_for_instance(ctx.tacker_context,
                                                  ctx.vnf_instance)
        except Exception as err:  # no Tacker, no DB, no VIM: say which stack
            raise exceptions.TopologyError(
                reason='cannot resolve the VIM holding stack %s: %s: %s'
                       % (ctx.stack_id, type(err).__name__, err))
    topology = heat.read_instance_topology(ctx.tacker_context,
                                           ctx.vnf_instance, spec,
                                           vim_info=vim_info)
    check_topology(ctx, topology)
    return topology


def check_topology(ctx, topology):
    if ctx.params.is_registry:
        if len(topology.registries) != 1:
            raise exceptions.TopologyError(
                reason='stack %s has %d registry VM(s); the registry VNF '
                       'needs exactly one' % (ctx.stack_id,
                                              len(topology.registries)))
        return
    if not topology.masters:
        raise exceptions.TopologyError(
            reason='stack %s has no master node' % ctx.stack_id)
    if ctx.params.is_ha and not topology.vip:
        raise exceptions.TopologyError(
            reason='stack %s has no VIP for the HA flavour %s (port %s)'
                   % (ctx.stack_id, ctx.params.flavour,
                      ctx.params.master_node.cluster_cp_name))


def topology_phase(op):
    def assumed():
        check_topology(op.ctx, op.facts.topology)
        return op.facts.topology
    return Phase(TITLE_TOPOLOGY, action=lambda: read_topology(op.ctx),
                 work=(phases.api_work('list the resources of stack %s and '
                                       'its nested stacks' % op.ctx.stack_id,
                                       kind='heat'),),
                 assume=op.assume(assumed))


def local_phase(op, title, fn, *args):
    """A phase that only decides from what is known (no remote work)."""
    return Phase(title, action=lambda: fn(*args),
                 assume=op.assume(lambda: fn(*args)))


def connect_phase(op, title, nodes):
    def work(node):
        group = op.params.group(node.role)
        return phases.Work(node.name, 'ssh', 'connect as %s@%s'
                           % (group.username, node.ssh_ip))
    return Phase(title, nodes=names(nodes), parallel=True,
                 work=tuple(work(n) for n in nodes),
                 action=lambda: op.connect(nodes))


def probe_phase(op, title, nodes):
    """Which nodes answer SSH within a short deadline (a dead VM must not
    cost the full connect deadline)."""
    unreachable = op.facts.unreachable if op.dry else ()
    return Phase(title, nodes=names(nodes), parallel=True,
                 work=tuple(phases.Work(n.name, 'ssh', 'connect (probe)')
                            for n in nodes),
                 action=lambda: op.probe(nodes),
                 assume={n.name for n in nodes if n.name not in unreachable})


def upload_phase(op, nodes, title=TITLE_UPLOAD):
    work = []
    for node in nodes:
        work.append(phases.command_work(node.name, uploads.mkdir_command()))
        for script in op.scripts.for_node(node):
            work.append(phases.Work(node.name, 'sftp', 'put %s (mode 0700)'
                                    % script.remote_path))

    def upload():
        op.on_nodes('upload scripts', nodes,
                    lambda node, session: uploads.upload_to(session, node,
                                                            op.scripts))
    return Phase(title, nodes=names(nodes), parallel=True, work=tuple(work),
                 action=upload)


def script_phase(op, title, node, call, assume=None):
    """One script run on one node; its result is the command's result."""
    return Phase(title, nodes=(node.name,),
                 work=(phases.script_work(call, uploads.REMOTE_DIR),),
                 action=lambda: op.run_script(node, call), assume=assume)


def _call_list(calls):
    return list(calls) if isinstance(calls, (list, tuple)) else [calls]


def scripts_phase(op, title, nodes, calls, step, after=None):
    """Script runs on every node at once; ``calls`` by node name, each a
    ScriptCall or a list of them (run in order on that node). ``after``
    runs once every node is done. The result: by node name, the list of
    its calls' results."""
    ordered = {n.name: _call_list(calls[n.name]) for n in nodes}

    def one(node, _session):
        return [op.run_script(node, call) for call in ordered[node.name]]

    def action():
        results = op.on_nodes(step, nodes, one)
        if after is not None:
            after()
        return results
    return Phase(title, nodes=names(nodes), parallel=True,
                 work=tuple(phases.script_work(c, uploads.REMOTE_DIR)
                            for n in nodes for c in ordered[n.name]),
                 action=action)


TITLE_HELM = 'Install Helm on %s'


def helm_phases(op, masters):
    """Helm on ``masters`` when the request asks for it (every master at
    instantiate, a healed one after its join); nothing otherwise."""
    calls = {m.name: scripts.helm_call(m, op.params) for m in masters}
    if not masters or None in calls.values():
        return
    yield scripts_phase(op, TITLE_HELM % ', '.join(names(masters)), masters,
                        calls, 'helm')


def nfs_clients(op, nodes):
    """{name: [the NFS client install]} with a storage server, else
    {name: []}: what a node runs after its join."""
    if op.params.storage_server is None:
        return {n.name: [] for n in nodes}
    return {n.name: [scripts.nfs_client_call(n, op.params)] for n in nodes}


@dataclasses.dataclass(frozen=True)
class Alongside:
    """What runs on other nodes while the first master initialises: the
    nodes, in the order they start, and each one's script calls by node
    name."""

    nodes: tuple = ()
    calls: typing.Mapping[str, list] = dataclasses.field(
        default_factory=dict)

    def adding(self, nodes, calls, before=False):
        """This plus ``calls`` (node name -> script calls): each node's new
        calls go before (``before``) or after what it runs already; those
        of ``nodes`` not here yet go last."""
        merged = dict(self.calls)
        for name, added in calls.items():
            had = list(merged.get(name, ()))
            merged[name] = list(added) + had if before else had + list(added)
        known = {n.name for n in self.nodes}
        return Alongside(tuple(self.nodes) + tuple(
            n for n in nodes if n.name not in known), merged)


def join_data_phase(op, master, for_masters=False):
    """print-join on ``master``: a fresh token, and when masters are to
    join (``for_masters``, HA) a fresh certificate key: the certificates
    are uploaded again. Workers need no key, so none is made for them."""
    key = for_masters and op.params.is_ha
    call = scripts.print_join_call(master, op.params, certificate_key=key)

    def read():
        result = op.run_script(master, call)
        return script_output.JoinData.from_output(master.name, call.mode,
                                                  result.stdout, need_key=key)
    return Phase(scripts.TITLE_JOIN_DATA, nodes=(master.name,),
                 work=(phases.script_work(call, uploads.REMOTE_DIR),),
                 action=read, assume=PLANNED_JOIN if key else PLANNED_TOKEN)


def join_master_phase(op, master, ends, join, nfs_client=True):
    """Join ``master`` (then, with a storage server and ``nfs_client``,
    its NFS client)."""
    join_call = scripts.join_call(master, op.params, ends, join,
                                  prepared=prepared(op, master),
                                  apt_repo=op.scripts.features.apt_repo)
    clients = nfs_clients(op, [master])[master.name] if nfs_client else []
    if not clients:
        return script_phase(op, scripts.title_join_master(master), master,
                            join_call)
    return scripts_phase(op, scripts.title_join_master(master), [master],
                         {master.name: [join_call] + clients},
                         'join-master')


def join_workers_phase(op, title, workers, ends, join, nfs_client=True):
    """Join every worker at once (each then installs the NFS client when
    there is a storage server and ``nfs_client``)."""
    clients = nfs_clients(op, workers if nfs_client else [])
    clients = {w.name: clients.get(w.name, []) for w in workers}
    calls = {w.name: [scripts.join_call(
        w, op.params, ends, join, prepared=prepared(op, w),
        apt_repo=op.scripts.features.apt_repo)] +
             clients[w.name] for w in workers}
    return scripts_phase(op, title, workers, calls, 'join-worker')


def prepare_phase(op, title, nodes, ends, connect=False, upload=True):
    """Each of ``nodes`` gets its scripts and runs the install script's
    prepare mode, each node on its own (``connect``: connects first;
    ``upload=False``: the scripts are there already). As a background
    phase while a master is busy, it takes that work off the joins (which
    skip what it did). Every node is prepared: a re-run's already-joined
    one only re-checks."""
    calls = {n.name: scripts.prepare_call(
        n, op.params, ends, apt_repo=op.scripts.features.apt_repo)
        for n in nodes}
    op.prepared.update(calls)
    work = connect_phase(op, title, nodes).work if connect else ()
    if upload:
        work += upload_phase(op, nodes).work
    work += tuple(phases.script_work(calls[n.name], uploads.REMOTE_DIR)
                  for n in nodes)

    def one(node, session):
        if upload:
            uploads.upload_to(session, node, op.scripts)
        return op.run_script(node, calls[node.name])

    def action():
        if connect:
            op.connect(nodes)
        return op.on_nodes('prepare', nodes, one)
    return Phase(title, nodes=names(nodes), parallel=True, work=work,
                 action=action)


def prepared(op, node):
    """Whether this operation prepares ``node`` before its init or join
    (op.prepared) and the install script can then skip the checks (-p)."""
    return node.name in op.prepared and op.scripts.features.prepared


def prepare_in_background(op, title, wait_title, nodes, ends,
                          connect=False, upload=True):
    """Phases: prepare_phase on ``nodes`` in the background, when the
    install script has the prepare mode. Returns the phase that waits for
    it (join_workers' ``prepared``), or None when it did not start."""
    if not (nodes and op.scripts.features.prepare):
        return None
    started = dataclasses.replace(
        prepare_phase(op, title, nodes, ends, connect=connect,
                      upload=upload),
        background=True)
    running = yield started
    return phases.wait_for(wait_title, started, running)


def join_workers(op, title, workers, master, ends, skip_reason,
                 prepared=None):
    """Phases: the scripts to ``workers``, fresh join data from
    ``master``, every worker joined at once; skipped when none.
    ``prepared``: the phase that waits for a prepare_phase running in the
    background (it gave the workers their scripts), which goes after
    print-join, just before the joins."""
    if not workers:
        yield phases.skipped(title, skip_reason)
        return
    if prepared is None:
        yield upload_phase(op, workers)
    join = yield join_data_phase(op, master)
    if prepared is not None:
        yield prepared
    yield join_workers_phase(op, title, workers, ends, join)


def label_phase(op, title, access, topology, workers, states):
    """Labels derived from the workers' placement (CIS-node, zone) that
    the nodes do not carry yet; a re-run patches nothing."""
    only = {w.name for w in workers}
    wanted = {name: labels for name, labels in
              labels_mod.worker_labels(topology, op.ctx.grant).items()
              if name in only}
    todo = labels_mod.missing_labels(wanted, states)
    work = tuple(phases.api_work('PATCH node %s labels %s' % (
        name, ', '.join('%s=%s' % kv for kv in sorted(labels.items()))))
        for name, labels in sorted(todo.items()))
    return Phase(title, nodes=tuple(sorted(todo)), work=work,
                 action=lambda: labels_mod.apply_missing(
                     access.api, wanted, states, op.prefix),
                 assume=todo)


def hold_phase(op, nodes, next_hook):
    """Keep this hook's open sessions to ``nodes`` (not healed) for
    ``next_hook``, if this hook succeeds (held.py): they would otherwise
    be closed now and opened again in a few minutes. The result: the
    names kept (a dry run assumes every one)."""
    def hold():
        kept = tuple(n.name for n in nodes if op.connected(n.name))
        op.hold_for_next_hook(kept)
        return kept
    return Phase('Keep the sessions to %s for %s'
                 % (', '.join(names(nodes)), next_hook),
                 nodes=names(nodes),
                 work=(phases.Work(None, 'local', 'hold the open SSH '
                                   'sessions up to [k8s_mgmt] '
                                   'held_session_limit seconds'),),
                 action=hold, assume=names(nodes))


def take_held_phase(op, nodes, previous_hook):
    """Reuse the sessions ``previous_hook`` kept to ``nodes`` (the same
    VMs, still connected); the others are connected as usual. The
    result: the names reused (a dry run assumes none)."""
    return Phase('Reuse the sessions %s kept' % previous_hook,
                 nodes=names(nodes),
                 work=(phases.Work(None, 'local', 'take the held SSH '
                                   'sessions to %s' % ', '.join(names(nodes))
                                   ),),
                 action=lambda: op.take_held(nodes), assume=())
