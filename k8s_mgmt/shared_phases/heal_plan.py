"""Heal decisions as data: which nodes, refusals, backends, etcd members.

No I/O here. The heal operations read the Heat topology, the cluster's
nodes and the etcd member list into plain values, and these functions
decide what to do with them, so a re-run after a failure decides again from
what it reads instead of from what an earlier run meant to do.
"""

import dataclasses

from k8s_mgmt import exceptions
from k8s_mgmt.engine import scripts
from k8s_mgmt.kube import etcd
from k8s_mgmt.tacker_objects import field

ONLY_MASTER = ('healing a master needs another master to take over (HA '
               'flavour, at least 2 masters): the only master of a cluster '
               'holds its etcd and certificates, and a new VM would start '
               'an empty cluster; heal the whole VNF instead (no '
               'vnfc_instance_id)')


class HealRefused(exceptions.MgmtDriverError):
    message = 'Heal refused, nothing was changed: %(reason)s'


def requested_vnfc_ids(request):
    """The VNFC ids of a HealVnfRequest, in order, without repeats."""
    seen = []
    for vnfc_id in field(request, 'vnfc_instance_id') or ():
        if vnfc_id and vnfc_id not in seen:
            seen.append(vnfc_id)
    return seen


def resolve_targets(topology, vnfc_ids, storage=False, lb=False,
                    roles=('master', 'worker')):
    """The nodes of ``vnfc_ids``; HealRefused naming every unknown id.
    ``storage``: the storage server VNFC may be healed too (the request
    has storage_server); ``lb``: the external load balancer's (the
    kubespray mode); ``roles``: the others that may be healed."""
    healable = (tuple(roles) + (('storage',) if storage else ()) +
                (('lb',) if lb else ()))
    words = (', '.join(healable[:-1]) + ' and ' + healable[-1]
             if len(healable) > 1 else healable[0])
    found, unknown = [], []
    for vnfc_id in vnfc_ids:
        node = topology.by_vnfc_id(vnfc_id)
        if node is None:
            unknown.append(vnfc_id)
        elif node.role not in healable:
            raise HealRefused(reason='VNFC %s is the %s node %s; only %s '
                                     'VNFCs can be healed one by one' % (
                                         vnfc_id, node.role, node.name,
                                         words))
        else:
            found.append(node)
    if unknown:
        pool = [n for n in topology.all_nodes() if n.role in healable]
        known = sorted(n.vnfc_id for n in pool if n.vnfc_id)
        raise HealRefused(
            reason='unknown VNFC id(s) %s in stack %s; the %s VNFCs are: '
                   '%s' % (', '.join(unknown), topology.stack_id, words,
                           ', '.join(known) or 'none'))
    return tuple(found)


def master_refusal(params, topology, targets):
    """Why the master targets cannot be healed one by one, or None."""
    masters = [t for t in targets if t.role == 'master']
    if not masters:
        return None
    names = ', '.join(m.name for m in masters)
    if not params.is_ha or len(topology.masters) < 2:
        return ('%s is the only master of this %s cluster. %s'
                % (names, params.flavour, ONLY_MASTER))
    if len(masters) >= len(topology.masters):
        return ('every master (%s) was asked for at once; at least one must '
                'stay to keep the cluster and its etcd. %s'
                % (names, ONLY_MASTER))
    return None


def leaving_members(members, targets):
    """The etcd members of the nodes being healed."""
    return tuple(m for t in targets
                 for m in etcd.members_of_node(members, t.name, t.nic_ip))


def etcd_refusal(members, health, targets):
    """Why removing the targets' etcd members is unsafe; None when it is
    safe or they have none."""
    leaving = leaving_members(members, targets)
    return etcd.removal_problem(members, health, leaving) if leaving else None


def stale_members(members, masters):
    """etcd members that belong to no master of the topology.

    A replaced master keeps its IP but gets a new name (names come from
    server ids), so its old member is stale by name. An unstarted member
    (no name yet) is stale unless a current master owns its peer address:
    that is a join in progress.
    """
    names = {m.name for m in masters}
    ips = {m.nic_ip for m in masters}
    stale = []
    for member in members:
        if member.name:
            if member.name not in names:
                stale.append(member)
        elif not (member.peer_hosts() & ips):
            stale.append(member)
    return tuple(stale)


@dataclasses.dataclass(frozen=True)
class LBChange:
    """configure_lb.sh runs: the masters they run on and their backends."""

    backends: tuple          # master names in the HAProxy backend list
    calls: tuple             # ScriptCall per master to configure


def priority_of(all_masters, node):
    """A master's VRRP priority: by its place in the topology, so that
    removing or replacing one master does not change anybody else's."""
    names = [m.name for m in all_masters]
    return scripts.vrrp_priority(names.index(node.name))


def lb_change(all_masters, backends, run_on, vip, vip_prefix, vrrp_password,
              bootstrap=None):
    """configure_lb.sh on each of ``run_on`` with ``backends`` behind it;
    on the master named ``bootstrap`` (about to run kubeadm init) keepalived
    tracks HAProxy only, so it takes the VIP while its API server is being
    built (configure_lb.sh -B)."""
    backend_arg = ','.join('%s=%s' % (m.name, m.nic_ip) for m in backends)
    calls = []
    for master in run_on:
        argv = ('-v', '%s/%d' % (vip, vip_prefix), '-b', backend_arg,
                '-P', str(priority_of(all_masters, master)),
                '-l', master.nic_ip, '-p', str(scripts.HAPROXY_PORT),
                '-a', str(scripts.APISERVER_PORT))
        if master.name == bootstrap:
            argv += ('-B',)
        calls.append(scripts.ScriptCall(master.name, scripts.CONFIGURE_LB,
                                        argv,
                                        (('auth_pass', vrrp_password),)))
    return LBChange(tuple(m.name for m in backends), tuple(calls))


def staying_masters(topology, targets):
    """The masters of ``topology`` that a heal of ``targets`` keeps."""
    leaving = {t.name for t in targets}
    return [m for m in topology.masters if m.name not in leaving]


def lb_without(topology, targets, reachable, vip_prefix, vrrp_password):
    """heal_start: the masters that stay, reachable ones, drop the targets."""
    staying = staying_masters(topology, targets)
    run_on = [m for m in staying if m.name in reachable]
    return lb_change(topology.masters, staying, run_on, topology.vip,
                     vip_prefix, vrrp_password)


def lb_full(topology, vip_prefix, vrrp_password, reachable=None,
            bootstrap=None):
    """heal_end: every master behind HAProxy, on every (reachable) master.
    Instantiate: ``bootstrap`` names the master about to be initialised."""
    run_on = [m for m in topology.masters
              if reachable is None or m.name in reachable]
    return lb_change(topology.masters, topology.masters, run_on,
                     topology.vip, vip_prefix, vrrp_password,
                     bootstrap=bootstrap)


def split_lb(change, names):
    """``change`` as two: the calls on the masters in ``names``, the
    calls on the others (same backends)."""
    def of(keep):
        return LBChange(backends=change.backends,
                        calls=tuple(c for c in change.calls
                                    if (c.node in names) == keep))
    return of(True), of(False)


def helper_master(topology, targets, reachable, record=None):
    """A master that is not being healed and answers SSH: the recorded
    first master when it qualifies, else the oldest one."""
    candidates = [m for m in staying_masters(topology, targets)
                  if m.name in reachable]
    if not candidates:
        return None
    recorded = (record or {}).get('init_master_server_id')
    for master in candidates:
        if master.server_id == recorded:
            return master
    return candidates[0]


def first_master_update(record, topology, targets, helper):
    """The cluster record's new first master, or None to keep it.

    The record names the master print-join and a re-run rely on; when that
    master is healed (or is gone from Heat), a healthy one takes its role.
    """
    recorded = (record or {}).get('init_master_server_id')
    if recorded is None or helper is None:
        return None
    healed = {t.server_id for t in targets}
    in_topology = {m.server_id for m in topology.masters}
    if recorded in healed or recorded not in in_topology:
        return helper.server_id if helper.server_id != recorded else None
    return None
