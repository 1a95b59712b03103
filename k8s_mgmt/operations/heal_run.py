"""What one heal hook call works with: topology, SSH sessions, the API.

Shared by the worker and master heals. Nodes that may be dead (the VM to
heal, another master) are probed with a short connect deadline, so a dead
VM costs seconds, not the full connect deadline; nodes the heal needs are
connected with the normal one.
"""

from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import kube
from k8s_mgmt import parallel
from k8s_mgmt import secrets
from k8s_mgmt.operations import heal_plan
from k8s_mgmt.operations import instantiate
from k8s_mgmt.operations import nodes as nodes_mod
from k8s_mgmt.operations import run as run_mod
from k8s_mgmt.operations import scripts
from k8s_mgmt.operations import uploads

LOG = logging.getLogger(__name__)

# Seconds to decide that a VM does not answer SSH (it crashed or is gone).
PROBE_DEADLINE = 12.0


class HealRun(run_mod.OperationRun):
    """One heal hook call. Use as a context manager: it closes everything."""

    def __init__(self, ctx):
        label = '%s %s' % (ctx.hook, ctx.vnf_instance_id)
        super().__init__(ctx, label)
        # Short-deadline sessions to tell a dead VM from a slow one.
        self.probes = nodes_mod.Sessions(label, self.store,
                                         connect_deadline=PROBE_DEADLINE,
                                         first_contact=self.first_contact)
        self.topology = None
        self.ends = None

    def close(self):
        self.probes.close_all()
        super().close()

    # -- reading ------------------------------------------------------------

    def read_topology(self):
        self.topology = self.steps.run('Read the topology from Heat',
                                       instantiate.read_topology, self.ctx)
        return self.topology

    def targets(self):
        """The nodes of the request's VNFC ids (HealRefused if unknown)."""
        ids = heal_plan.requested_vnfc_ids(self.ctx.request)
        return heal_plan.resolve_targets(self.topology, ids)

    # -- SSH ----------------------------------------------------------------

    def session(self, name):
        try:
            return self.sessions[name]
        except KeyError:
            return self.probes[name]

    def connect(self, nodes):
        """Sessions to nodes the heal cannot do without (NodesFailed)."""
        todo = [n for n in nodes if not self._connected(n.name)]
        if todo:
            self.steps.run('Connect to %s' % _names(todo),
                           self.sessions.connect_all, todo, self.params)

    def probe(self, nodes):
        """Names of the nodes that answer SSH within PROBE_DEADLINE."""
        todo = [n for n in nodes if not self._connected(n.name)]
        answered = {n.name for n in nodes if self._connected(n.name)}
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

    def _connected(self, name):
        for pool in (self.sessions, self.probes):
            try:
                pool[name]
                return True
            except KeyError:
                continue
        return False

    def on_nodes(self, step, nodes, fn):
        """``fn(node)`` on every node at once, over either session pool."""
        return parallel.run_on_nodes(self.prefix.strip('[]'), step, nodes,
                                     fn)

    def run_script(self, node, call):
        return instantiate.run_script(self.session(node.name), call)

    def upload(self, nodes):
        """Each node's scripts (the LB script too on HA masters)."""
        script_set = uploads.ScriptSet(self.ctx.package_dir, self.params)
        self.on_nodes('upload scripts', nodes,
                      lambda node: uploads.upload_to(
                          self.session(node.name), node, script_set))

    # -- the cluster's API --------------------------------------------------

    def open_api(self, master):
        """A ClusterAPI with the VIM token, read through ``master``."""
        record = self.state.cluster_record()
        first = instantiate.first_master(self.topology, record)
        self.ends = scripts.endpoints(self.topology, self.params, first)
        call = scripts.token_secret_call(master, self.params)
        result = self.run_script(master, call)
        creds = scripts.VimCredentials.from_output(master.name, call.mode,
                                                   result.stdout)
        self.api = kube.ClusterAPI(self.ends.api_url, creds.token,
                                   creds.ca_cert)
        return self.api

    def join_data(self, master):
        """print-join on ``master``: a fresh token (and, HA, a fresh
        certificate key: the certificates are uploaded again)."""
        call = scripts.print_join_call(master, self.params)
        result = self.run_script(master, call)
        return scripts.JoinData.from_output(master.name, call.mode,
                                            result.stdout,
                                            need_key=self.params.is_ha)

    def vip_prefix(self, master):
        return instantiate.vip_prefix(self.session(master.name), self.params,
                                      self.topology, master)

    def forget_pins(self, nodes):
        """Healed VMs are deleted by Heat: their pins must not linger."""
        self.store.forget_many([n.server_id for n in nodes])


def _names(nodes):
    return ', '.join(n.name for n in nodes)
