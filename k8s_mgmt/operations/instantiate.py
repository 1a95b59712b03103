"""instantiate_end: turn the VMs Heat created into a Kubernetes cluster.

The operation, step by step (each titled, logged and timed)::

    Read the topology from Heat
    Connect to every node           (all at once: bad credentials fail fast)
    Upload the scripts
    Configure the load balancer     (HA: HAProxy + keepalived, all masters)
    Initialise the first master     (kubeadm init)
    Create the VIM token            (token-secret: the API credentials)
    Read the cluster's nodes        (who is Ready already: no join again)
    Read join data                  (print-join, only if someone must join)
    Join master <name>              (one at a time: etcd membership)
    Join workers                    (all at once, bounded)
    Wait until every node is Ready  (Kubernetes API, backoff to a deadline)
    Label workers                   (CIS-node, zone)
    Register the VIM

Read -> decide -> act: what the API reports decides what still has to be
done, so a re-run on the same VMs completes a half-built cluster and changes
nothing on a finished one. The scripts themselves skip what is done.
"""

import json

from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import kube
from k8s_mgmt import ssh
from k8s_mgmt import vim as vim_mod
from k8s_mgmt.operations import labels as labels_mod
from k8s_mgmt.operations import run as run_mod
from k8s_mgmt.operations import scripts
from k8s_mgmt.operations import uploads
from k8s_mgmt.topology import from_params
from k8s_mgmt.topology import heat

LOG = logging.getLogger(__name__)


def build_cluster(ctx):
    """instantiate_end: kubeadm init/join, HA load balancer, VIM."""
    run = _Run(ctx)
    try:
        return run.execute()
    finally:
        run.close()


def read_topology(ctx):
    """The instance's topology; Heat session from ``vim_info`` or Tacker."""
    spec = from_params.spec_from_params(ctx.params)
    vim_info = ctx.extra.get('vim_info')
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
    if not topology.masters:
        raise exceptions.TopologyError(
            reason='stack %s has no master node' % ctx.stack_id)
    if ctx.params.is_ha and not topology.vip:
        raise exceptions.TopologyError(
            reason='stack %s has no VIP for the HA flavour %s (port %s)'
                   % (ctx.stack_id, ctx.params.flavour,
                      ctx.params.master_node.cluster_cp_name))
    return topology


def first_master(topology, cluster_record):
    """The master that was (or will be) initialised: the recorded one, else
    the oldest."""
    recorded = cluster_record.get('init_master_server_id')
    for master in topology.masters:
        if recorded and master.server_id == recorded:
            return master
    return topology.masters[0]


def run_script(session, call, remote_dir=scripts.REMOTE_DIR):
    """Run one ScriptCall over its node's session; secrets go on stdin."""
    return session.run(call.command(remote_dir), step=call.mode,
                       stdin=call.stdin())


def parse_json_output(node, step, result):
    """A script's JSON object on stdout; the error never shows the (secret)
    output."""
    return scripts.json_object(node, step, result.stdout)


def vip_prefix(session, params, topology, master):
    """Prefix length of the master's cluster network, read as JSON."""
    result = session.run(ssh.Command('ip', '-j', '-4', 'addr', 'show'),
                         step='read network', check=False, timeout=30)
    prefix = None
    if result.ok:
        prefix = prefix_of(result.stdout, master.nic_ip)
    return scripts.vip_prefix_from(params, topology.vip, prefix)


def prefix_of(ip_json, address):
    """The prefix length of ``address`` in ``ip -j addr`` output; None when
    the output is not what iproute2 prints (the caller falls back)."""
    try:
        links = json.loads(ip_json)
    except ValueError:
        return None
    for link in links if isinstance(links, list) else ():
        infos = link.get('addr_info') if isinstance(link, dict) else None
        for addr in infos if isinstance(infos, list) else ():
            if isinstance(addr, dict) and addr.get('local') == address:
                prefix = addr.get('prefixlen')
                return prefix if isinstance(prefix, int) else None
    return None


class _Run(run_mod.OperationRun):
    """One instantiate_end call: its state, sessions and API client."""

    def __init__(self, ctx):
        super().__init__(ctx, 'instantiate %s' % ctx.vnf_instance_id)

    def execute(self):
        step = self.steps.run
        topology = step('Read the topology from Heat', read_topology,
                        self.ctx)
        self.topology = topology
        nodes = topology.masters + topology.workers
        step('Connect to every node', self.sessions.connect_all, nodes,
             self.params)
        step('Upload the scripts', self.upload_scripts, nodes)
        first = first_master(topology, self.state.cluster_record())
        self.ends = scripts.endpoints(topology, self.params, first)
        if self.params.is_ha:
            step(scripts.TITLE_LB, self.configure_lb, first)
        step(scripts.title_init(first), self.run_on,
             first, scripts.init_call(first, self.params, self.ends))
        self.state.update_cluster_record(
            init_master_server_id=first.server_id, endpoint=self.ends.api_url)
        record = step(scripts.TITLE_TOKEN, self.vim_token, first)
        # Joins need no Ready master, only a working API: do not wait longer.
        states = step('Read the cluster\'s nodes', self.api.wait_answering)
        self.join_missing(first, states)
        states = step('Wait until every node is Ready', self.api.wait_ready,
                      [n.name for n in nodes], prefix=self.prefix)
        step('Label workers', self.label_workers, states)
        registered = step('Register the VIM', vim_mod.registrar_for(
            self.ctx.tacker_context, self.ctx.vnf_instance,
            self.state).register, record)
        LOG.info('%s cluster ready: %d master(s), %d worker(s), API %s',
                 self.prefix, len(topology.masters), len(topology.workers),
                 self.ends.api_url)
        return {'endpoint': self.ends.api_url, 'vim': registered,
                'nodes': sorted(states)}

    # -- steps --------------------------------------------------------------

    def run_on(self, node, call):
        return run_script(self.sessions[node.name], call)

    def upload_scripts(self, nodes):
        script_set = uploads.ScriptSet(self.ctx.package_dir, self.params)
        for script in script_set.shipped_instead(nodes):
            LOG.info('%s using the shipped %s (%s): the VNF package has '
                     'none at %s', self.prefix, script.name, script.origin,
                     uploads.package_path(self.params, script.name))
        self.sessions.on_nodes(
            'upload scripts', nodes,
            lambda node, session: uploads.upload_to(session, node,
                                                    script_set))

    def configure_lb(self, first):
        prefix = vip_prefix(self.sessions[first.name], self.params,
                            self.topology, first)
        calls = {c.node: c for c in scripts.lb_calls(
            self.topology, prefix, self.state.vrrp_password())}
        self.sessions.on_nodes(
            'configure-lb', self.topology.masters,
            lambda node, session: run_script(session, calls[node.name]))

    def vim_token(self, first):
        call = scripts.token_secret_call(first, self.params)
        result = self.run_on(first, call)
        creds = scripts.VimCredentials.from_output(first.name, call.mode,
                                                   result.stdout)
        self.api = kube.ClusterAPI(self.ends.api_url, creds.token,
                                   creds.ca_cert)
        return vim_mod.VimRecord(
            name=(self.params.vim_name or
                  vim_mod.default_vim_name(self.ctx.vnf_instance_id)),
            endpoint=self.ends.api_url, bearer_token=creds.token,
            ssl_ca_cert=creds.ca_cert)

    def join_missing(self, first, states):
        ready = {name for name, s in states.items() if s.ready}
        masters = [m for m in self.topology.masters
                   if m is not first and m.name not in ready]
        workers = [w for w in self.topology.workers if w.name not in ready]
        if not (masters or workers):
            self.steps.skip('Join nodes', 'every node is already Ready')
            return
        join = self.steps.run(scripts.TITLE_JOIN_DATA, self.join_data,
                              first)
        for master in masters:
            self.steps.run(scripts.title_join_master(master), self.run_on,
                           master, scripts.join_call(master, self.params,
                                                     self.ends, join))
        if workers:
            self.steps.run(scripts.TITLE_JOIN_WORKERS, self.join_workers,
                           workers, join)
        else:
            self.steps.skip(scripts.TITLE_JOIN_WORKERS,
                            'every worker is already Ready')

    def join_data(self, first):
        call = scripts.print_join_call(first, self.params)
        result = self.run_on(first, call)
        return scripts.JoinData.from_output(first.name, call.mode,
                                            result.stdout,
                                            need_key=self.params.is_ha)

    def join_workers(self, workers, join):
        calls = {w.name: scripts.join_call(w, self.params, self.ends, join)
                 for w in workers}
        self.sessions.on_nodes(
            'join-worker', workers,
            lambda node, session: run_script(session, calls[node.name]))

    def label_workers(self, states):
        wanted = labels_mod.worker_labels(self.topology, self.ctx.grant)
        return labels_mod.apply_missing(self.api, wanted, states,
                                        self.prefix)
