"""Phases about the cluster as a whole, used by more than one operation:
which master was initialised, the cluster network's prefix, the load
balancer on the masters, the VIM's registration."""

import json

from k8s_mgmt import ssh
from k8s_mgmt import vim as vim_mod
from k8s_mgmt import vim_owner
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import scripts
from k8s_mgmt.shared_phases import node_work

Phase = phases.Phase

TITLE_READY = 'Wait until every node is Ready'

IP_ADDR = ssh.Command('ip', '-j', '-4', 'addr', 'show')


def first_master(topology, cluster_record):
    """The master that was (or will be) initialised: the recorded one, else
    the oldest."""
    recorded = cluster_record.get('init_master_server_id')
    for master in topology.masters:
        if recorded and master.server_id == recorded:
            return master
    return topology.masters[0]


def first_master_of(op, topology):
    """first_master from the operation's cluster record."""
    return first_master(topology, op.state.cluster_record())


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


def addresses(op, node):
    """``ip -j -4 addr show`` on ``node``: its stdout, None when it failed."""
    result = op.session(node.name).run(IP_ADDR, step='read network',
                                       check=False, timeout=30)
    return result.stdout if result.ok else None


def prefix_phase(op, topology, master):
    """The prefix length of the cluster network on ``master``: the VIP
    gets the same (else the node CIDR's, else /32)."""
    def read():
        found = addresses(op, master)
        if found is not None:
            found = prefix_of(found, master.nic_ip)
        return scripts.vip_prefix_from(op.params, topology.vip, found)

    def assumed():
        return scripts.vip_prefix_from(op.params, topology.vip,
                                       op.facts.vip_prefix)
    return Phase('Read the cluster network\'s prefix on %s' % master.name,
                 nodes=(master.name,),
                 work=(phases.command_work(master.name, IP_ADDR),),
                 action=read, assume=op.assume(assumed))


def lb_phase(op, title, topology, change):
    """configure_lb.sh on the masters of ``change`` (heal_plan.LBChange)."""
    by_name = {m.name: m for m in topology.masters}
    nodes = [by_name[c.node] for c in change.calls]
    calls = {c.node: c for c in change.calls}
    return node_work.scripts_phase(op, title, nodes, calls, 'configure-lb')


def register_phase(op, access):
    registrar = vim_mod.registrar_for(op.ctx, op.state)
    name = vim_mod.instance_vim_name(op.ctx)

    def register():
        creds = access.credentials
        return vim_owner.register_vim(registrar, op.state, vim_mod.VimRecord(
            name=name, endpoint=access.ends.api_url,
            bearer_token=creds.token, ssl_ca_cert=creds.ca_cert,
            use_helm=bool(op.params.helm or
                          op.params.helm_installation_script_path)))
    return Phase('Register the VIM', work=(phases.api_work(
        'register Kubernetes VIM %s for %s in %s'
        % (name, access.ends.api_url, registrar.where),
        kind=registrar.kind),), action=register)
