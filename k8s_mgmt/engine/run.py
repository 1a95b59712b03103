"""What one hook call holds while it works, and closes when it ends.

:class:`OperationRun` is the typed state of one operation: its context, the
instance's state directory, one SSH session per node (and short-deadline
probe sessions for nodes that may be dead), the scripts it uploads and the
Kubernetes API clients it opened. Everything an operation learns as it goes
(the topology, the API, join data) is a phase's result, held by the
operation's own code, not set on this object later.

A dry run (:class:`Facts` given) connects nowhere and writes nothing: the
state directory is only read, and the facts stand in for what the phases
would read.
"""

import dataclasses
import typing

from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt import ssh
from k8s_mgmt import state as state_mod
from k8s_mgmt.engine import held
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import sessions as sessions_mod
from k8s_mgmt.engine import uploads
from k8s_mgmt.ssh import console_keys
from k8s_mgmt.topology import heat

LOG = logging.getLogger(__name__)


def vim_session(ctx):
    """(keystoneauth session, region) of the VIM holding the instance."""
    try:
        vim_info = ctx.vim_info
        if vim_info is None:
            vim_info = heat.vim_info_for_instance(ctx.tacker_context,
                                                  ctx.vnf_instance)
        return heat.session_for_vim(vim_info)
    except Exception as err:  # no Tacker, no VIM: no console to read
        raise console_keys.ConsoleUnavailable(
            'no VIM session to reach the compute API (%s: %s)'
            % (type(err).__name__, err))


@dataclasses.dataclass(frozen=True)
class Facts:
    """What a dry run assumes in place of what the phases would read.

    ``ready``: node names the Kubernetes API reports Ready;
    ``unreachable``: nodes that would not answer SSH; ``etcd_members``:
    the etcd member list (default: one healthy member per master);
    ``vip_prefix``: the cluster network's prefix length on the masters.
    """

    topology: typing.Any
    ready: frozenset = frozenset()
    unreachable: frozenset = frozenset()
    etcd_members: typing.Optional[tuple] = None
    vip_prefix: typing.Optional[int] = None


class ReadOnlyState(state_mod.InstanceState):
    """The instance's state as a dry run sees it: read, never written."""

    PLACEHOLDER = secrets.Secret('<made at the first run>')

    def write(self, name, text):
        return self.file(name)

    def vrrp_password(self):
        stored = (self.read(state_mod.VRRP_PASSWORD) or '').strip()
        return secrets.Secret(stored) if stored else self.PLACEHOLDER


def effective_params(params, record):
    """``params`` with the Kubernetes version the cluster runs: the one
    an upgrade recorded wins over the instantiate request's, so that a
    node added or healed later gets the upgraded version."""
    recorded = (record or {}).get('kubernetes_version')
    if not recorded or recorded == params.kubernetes_version:
        return params
    return dataclasses.replace(params, kubernetes_version=recorded)


class OperationRun(object):
    """One hook call's sessions, state and API clients. A context manager:
    leaving it closes every session and client."""

    def __init__(self, ctx, label, facts=None):
        self.ctx = ctx
        self.params = ctx.params
        self.label = label
        self.prefix = '[%s]' % label
        self.facts = facts
        state_cls = ReadOnlyState if self.dry else state_mod.InstanceState
        self.state = state_cls(ctx.vnf_instance_id)
        self.params = effective_params(ctx.params,
                                       self.state.cluster_record())
        self.store = ssh.HostKeyStore(self.state.host_key_file())
        # First contact with a VM is checked against its console output,
        # read over the same VIM (Keystone session) as Heat.
        self.first_contact = console_keys.FirstContactVerifier(
            lambda: vim_session(ctx))
        self.sessions = sessions_mod.Sessions(
            label, self.store, first_contact=self.first_contact)
        # Short-deadline sessions to tell a dead VM from a slow one.
        self.probes = sessions_mod.Sessions(
            label, self.store,
            connect_deadline=conf.CONF.k8s_mgmt.probe_deadline,
            first_contact=self.first_contact)
        self.scripts = uploads.ScriptSet(ctx.package_dir, self.params)
        self._clients = []
        self._hold = ()     # node names whose sessions outlive the hook
        # Node names whose prepare this run does before their init or join
        # (set as the phases are built): those skip its checks (-p).
        self.prepared = set()

    @property
    def dry(self):
        return self.facts is not None

    def assume(self, value):
        """``value`` (a callable is called) in a dry run, else None."""
        if not self.dry:
            return None
        return value() if callable(value) else value

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc_info):
        try:
            if exc_type is None and self._hold:
                self._hand_over()
        finally:
            self.close()

    def close(self):
        self.probes.close_all()
        self.sessions.close_all()
        for client in self._clients:
            client.close()

    def keep(self, client):
        """Close ``client`` with the operation."""
        self._clients.append(client)
        return client

    # -- SSH ----------------------------------------------------------------

    def session(self, name):
        """The open session to ``name``, from either pool."""
        try:
            return self.sessions[name]
        except KeyError:
            return self.probes[name]

    def connected(self, name):
        return self.sessions.has(name) or self.probes.has(name)

    def connect(self, nodes):
        """Sessions to nodes the operation cannot do without (NodesFailed
        names the ones that fail); nodes already connected are kept."""
        todo = [n for n in nodes if not self.connected(n.name)]
        return self.sessions.connect_all(todo, self.params)

    def probe(self, nodes):
        """Names of the nodes that answer SSH within ``[k8s_mgmt]
        probe_deadline``."""
        todo = [n for n in nodes if not self.connected(n.name)]
        answered = {n.name for n in nodes if self.connected(n.name)}
        if not todo:
            return answered
        try:
            self.probes.connect_all(todo, self.params)
            answered.update(n.name for n in todo)
        except exceptions.NodesFailed as err:
            failed = {name for name, _ in err.failures}
            answered.update(n.name for n in todo if n.name not in failed)
            for name, error in err.failures:
                LOG.warning('%s %s does not answer SSH: %s', self.prefix,
                            name, secrets.redact(str(error)))
        return answered

    def on_nodes(self, step, nodes, fn):
        """``fn(node, session)`` on every node at once, over either pool."""
        return self.sessions.on_nodes(
            step, nodes, fn, session_of=lambda node: self.session(node.name))

    def run_script(self, node, call, on_line=None):
        """One ScriptCall over its node's session; secrets go on stdin.
        ``on_line``: called with each stdout line as it arrives."""
        return scripts.run_call(self.session(node.name), call,
                                on_line=on_line)

    # -- sessions kept from one hook to the next (held.py) ------------------

    @property
    def hold_key(self):
        return (self.ctx.vnf_instance_id, self.ctx.operation)

    def hold_for_next_hook(self, names):
        """Keep the sessions to ``names`` open for the next hook of this
        operation, if this hook succeeds (held.py)."""
        self._hold = tuple(names)

    def _hand_over(self):
        sessions = self.probes.detach(self._hold)
        sessions.update(self.sessions.detach(self._hold))
        held.HOLD.hold(self.hold_key, sessions, held.limit())

    def take_held(self, nodes):
        """Reuse the sessions the previous hook kept to ``nodes`` (still
        the same VMs, still connected); returns the names taken."""
        targets = {n.name: sessions_mod.target_for(n, self.params)
                   for n in nodes}
        taken = held.HOLD.take(self.hold_key, targets)
        self.sessions.adopt(taken)
        return tuple(sorted(taken))

    def forget_pins(self, nodes):
        """Healed VMs are deleted by Heat: their pins must not linger."""
        self.store.forget_many([n.server_id for n in nodes])
