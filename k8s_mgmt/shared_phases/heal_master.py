"""Heal master VNFCs of an HA cluster without losing etcd quorum or the VIP.

heal_start (refused before anything changes when it is the only master or
when etcd would lose quorum)::

    Probe the other masters           (the helper: a healthy master)
    Read etcd members and health      (etcdctl -w json on the helper)
    Probe the masters to heal
    Read the API credentials through <helper>
    Find the VIP on <targets>         (the live ones)
    Hand the VIP over from <target>   (stop keepalived on a live target;
                                       queued with --no-block, in the
                                       background, when the target does
                                       not hold the VIP)
    Read the cluster network's prefix on <helper>
    Take <target> out of HAProxy      (configure_lb.sh on the other masters:
                                       reduced backend list, reload only;
                                       in the background)
    Read the cluster's nodes
    Remove <target>                   (stop its kubelet when it answers,
                                       delete its Node)
    Wait until <target> is out of HAProxy
    Remove etcd member <target>       (through the helper; works when the
                                       old VM is unreachable)
    Record <helper> as the first master (if the record named a target)
    Forget the healed VMs' host keys
    Keep the sessions to <the other masters> for heal_end (heal.py)

heal_end (Heat replaced the VMs: new server ids, same IPs)::

    Reuse the sessions heal_start kept (heal.py)
    Probe the other masters
    Connect to <helper>, <targets>
    Upload the scripts and prepare the healed masters  (in the background;
                                       waited for before the first join)
    Upload the scripts                (to the masters that stay)
    Read join data (in the background) (print-join -A on <helper>: a fresh
                                       token and certificate key)
    Read etcd members and health
    Remove stale etcd member <m>      (left by an interrupted heal_start)
    Read the API credentials through <helper>
    Read the cluster's nodes
    Read the cluster network's prefix on <helper>
    Wait for the join data / Join master <n>  (a next master: print-join -A
                                       again; kubeadm join adds the etcd
                                       member)
    Configure the load balancer on <n> while it joins (in the background:
                                       full backend list, its priority)
    Wait until the healed nodes are Ready
    Put <n> behind HAProxy on the other masters (full backend list)
    Wait for the load balancer on <n>
    Record <helper> as the first master (if needed)
"""

import dataclasses

from oslo_log import log as logging

from k8s_mgmt import ssh
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import scripts
from k8s_mgmt.kube import etcd
from k8s_mgmt.shared_phases import cluster
from k8s_mgmt.shared_phases import cluster_access
from k8s_mgmt.shared_phases import heal_plan
from k8s_mgmt.shared_phases import heal_worker
from k8s_mgmt.shared_phases import node_work

LOG = logging.getLogger(__name__)

Phase = phases.Phase
TITLE_PREPARE = 'Upload the scripts and prepare the healed masters'
TITLE_WAIT_PREPARED = 'Wait until the healed masters are prepared'
TITLE_WAIT_LB_OUT = 'Wait until %s is out of HAProxy'
TITLE_EARLY_JOIN_DATA = 'Read join data (in the background)'
TITLE_WAIT_JOIN_DATA = 'Wait for the join data'
TITLE_OWN_LB = 'Configure the load balancer on %s while it joins'
TITLE_OTHERS_LB = 'Put %s behind HAProxy on the other masters'
TITLE_WAIT_OWN_LB = 'Wait for the load balancer on %s'
STOP_KEEPALIVED = ssh.Command('systemctl', 'stop', 'keepalived').sudo()
# A master without the VIP: systemd queues the stop and signals keepalived
# at once (it then stops taking part in VRRP); keepalived's own exit takes
# about a second more, which the heal need not wait for.
SIGNAL_KEEPALIVED = ssh.Command('systemctl', 'stop', '--no-block',
                                'keepalived').sudo()


def _names(nodes):
    return ', '.join(n.name for n in nodes)


def refuse_unless_healable(op, topology, masters):
    reason = heal_plan.master_refusal(op.params, topology, masters)
    if reason:
        raise heal_plan.HealRefused(reason=reason)


def pick_helper(op, topology, targets):
    """A reachable master that is not healed; HealRefused if none.
    Returns (helper, names of the masters that answered)."""
    others = heal_plan.staying_masters(topology, targets)
    reachable = yield node_work.probe_phase(op, 'Probe the other masters',
                                            others)
    helper = heal_plan.helper_master(topology, targets, reachable,
                                     op.state.cluster_record())
    if helper is None:
        raise heal_plan.HealRefused(
            reason='no other master answers SSH (%s); the cluster cannot be '
                   'changed safely' % _names(others))
    return helper, reachable


def credentials_phase(op, topology, helper, registered=True):
    first = cluster.first_master_of(op, topology)
    return cluster_access.api_phase(
        op, 'Read the API credentials through %s' % helper.name, topology,
        helper, first, registered=registered)


def api_through_a_master(op, topology, targets, registered=True):
    """The API through a master that is not being healed (``registered``:
    the registered VIM's credentials are not checked yet)."""
    helper, _reachable = yield from pick_helper(op, topology, targets)
    access = yield credentials_phase(op, topology, helper,
                                     registered=registered)
    return helper, access


def _planned_etcd(op, topology):
    """The dry run's etcd: the given members, else one healthy member per
    master the API reports Ready."""
    members = op.facts.etcd_members
    if members is None:
        members = tuple(
            etcd.Member(member_id=index + 1, name=m.name,
                        peer_urls=('https://%s:2380' % m.nic_ip,),
                        client_urls=('https://%s:2379' % m.nic_ip,))
            for index, m in enumerate(topology.masters)
            if m.name in op.facts.ready)
    health = {u: True for m in members for u in m.client_urls}
    return None, members, health


def etcd_phase(op, topology, helper):
    def read():
        ctl = etcd.EtcdCtl(op.session(helper.name), helper.name)
        members = ctl.members()
        return ctl, members, ctl.settled_health(members)
    return Phase('Read etcd members and health on %s' % helper.name,
                 nodes=(helper.name,),
                 work=(phases.Work(helper.name, 'ssh',
                                   'etcdctl member list -w json'),
                       phases.Work(helper.name, 'ssh',
                                   'etcdctl endpoint health -w json')),
                 action=read,
                 assume=op.assume(lambda: _planned_etcd(op, topology)))


def remove_member_phase(op, helper, ctl, member, title):
    return Phase(title, nodes=(helper.name,),
                 work=(phases.Work(helper.name, 'ssh',
                                   'etcdctl move-leader (when %s leads)'
                                   % member.hex_id),
                       phases.Work(helper.name, 'ssh',
                                   'etcdctl member remove %s'
                                   % member.hex_id),
                       phases.Work(helper.name, 'ssh',
                                   'etcdctl endpoint status until the '
                                   'members left have a leader')),
                 action=lambda: ctl.remove(member))


def stop_keepalived(op, master, command=STOP_KEEPALIVED):
    """A live target gives the VIP up now (VRRP priority 0 advert), not
    when Heat deletes it."""
    result = op.session(master.name).run(command,
                                         step='stop keepalived', check=False,
                                         timeout=60)
    if not result.ok:
        LOG.warning('%s %s: stopping keepalived failed (exit %s); the VIP '
                    'moves when the VM goes', op.prefix, master.name,
                    result.status)


def vip_phase(op, masters, vip):
    """The names of ``masters`` that have the VIP on an interface now (a
    master whose addresses cannot be read counts: the careful answer). The
    dry run assumes they all do."""
    def holds(master):
        found = cluster.addresses(op, master)
        return (found is None
                or cluster.prefix_of(found, vip) is not None)

    def read():
        return {m.name for m in masters if holds(m)}
    return Phase('Find the VIP on %s' % _names(masters),
                 nodes=tuple(m.name for m in masters),
                 work=tuple(phases.command_work(m.name, cluster.IP_ADDR)
                            for m in masters),
                 action=read,
                 assume=op.assume(lambda: {m.name for m in masters}))


def handover_phase(op, master, holding):
    """Stop keepalived on a live target. When it holds the VIP, before
    anything else changes, and until it has stopped: the API calls that
    follow go through the VIP. Else it must only not take the VIP while
    Heat replaces its VM: the stop is queued (--no-block; keepalived leaves
    VRRP on its signal and takes about a second more to exit), in the
    background."""
    if holding:
        return Phase('Hand the VIP over from %s' % master.name,
                     nodes=(master.name,),
                     work=(phases.command_work(master.name,
                                               STOP_KEEPALIVED),),
                     action=lambda: stop_keepalived(op, master))
    return Phase('Stop keepalived on %s (no VIP there)' % master.name,
                 nodes=(master.name,),
                 work=(phases.command_work(master.name, SIGNAL_KEEPALIVED),),
                 background=True,
                 action=lambda: stop_keepalived(op, master,
                                                SIGNAL_KEEPALIVED))


def _unused(op, work):
    """Wait for background join data nobody needs (every healed master
    turned out Ready): its failure fails nothing."""
    try:
        work.result()
    except Exception as err:  # noqa: BLE001 - logged, not needed
        LOG.info('%s print-join, not needed after all, failed: %s',
                 op.prefix, str(err).splitlines()[0] if str(err) else err)


def record_phase(op, topology, masters, helper):
    """The cluster record names the master print-join and a re-run rely
    on; when that master is healed, the helper takes its role."""
    new_first = heal_plan.first_master_update(op.state.cluster_record(),
                                              topology, masters, helper)
    if not new_first:
        return None
    return Phase('Record %s as the first master' % helper.name,
                 work=(phases.Work(None, 'local', 'cluster record: '
                                   'init_master_server_id=%s' % new_first),),
                 action=lambda: op.state.update_cluster_record(
                     init_master_server_id=new_first))


def remove_masters(op, topology, masters):
    """heal_start for masters; returns (helper, API access)."""
    refuse_unless_healable(op, topology, masters)
    helper, reachable = yield from pick_helper(op, topology, masters)
    ctl, members, health = yield etcd_phase(op, topology, helper)
    problem = heal_plan.etcd_refusal(members, health, masters)
    if problem:
        raise heal_plan.HealRefused(reason=problem)
    leaving = heal_plan.leaving_members(members, masters)
    live = yield node_work.probe_phase(op, 'Probe the masters to heal',
                                       masters)
    access = yield credentials_phase(op, topology, helper)
    alive = [m for m in masters if m.name in live]
    holders = (yield vip_phase(op, alive, topology.vip)) if alive else ()
    for master in alive:
        yield handover_phase(op, master, master.name in holders)
    prefix = yield cluster.prefix_phase(op, topology, helper)
    # The HAProxy reloads run while the Node goes (the target's API server
    # still works then); the member goes only after them: a backend whose
    # etcd member is gone fails the requests HAProxy sends it.
    lb_phase = dataclasses.replace(cluster.lb_phase(
        op, 'Take %s out of HAProxy' % _names(masters), topology,
        heal_plan.lb_without(topology, masters, reachable, prefix,
                             op.state.vrrp_password())), background=True)
    reloading = yield lb_phase
    states = yield cluster_access.nodes_phase(op, access, wait=False)
    for master in masters:
        if master.name in states:
            yield heal_worker.remove_phase(op, access, master.name,
                                           master.name not in live,
                                           op.params.force_drain)
        else:
            yield phases.skipped('Remove %s' % master.name, 'no such node')
    yield phases.wait_for(TITLE_WAIT_LB_OUT % _names(masters), lb_phase,
                          reloading)
    for member in leaving:
        yield remove_member_phase(
            op, helper, ctl, member,
            'Remove etcd member %s' % (member.name or member.hex_id))
    record = record_phase(op, topology, masters, helper)
    if record is not None:
        yield record
    yield heal_worker.forget_pins_phase(op, masters)
    return helper, access


def join_masters(op, topology, masters):
    """heal_end for masters; returns (helper, API access)."""
    refuse_unless_healable(op, topology, masters)
    helper, reachable = yield from pick_helper(op, topology, masters)
    yield node_work.connect_phase(
        op, 'Connect to %s' % _names([helper] + list(masters)),
        [helper] + list(masters))
    reachable = set(reachable) | {m.name for m in masters}
    # The replacements get ready to join (their scripts, containerd, kernel
    # settings, packages) while etcd is read and print-join runs on the
    # helper; the join then finds that done.
    ends = scripts.endpoints(topology, op.params,
                             cluster.first_master_of(op, topology))
    prepared = yield from node_work.prepare_in_background(
        op, TITLE_PREPARE, TITLE_WAIT_PREPARED, masters, ends)
    leaving = {m.name for m in masters} if prepared is not None else ()
    yield node_work.upload_phase(
        op, [m for m in topology.masters
             if m.name in reachable and m.name not in leaving])
    # The first join's data (a token, the certificates uploaded under a
    # fresh key) while etcd and the API are read: it depends on neither.
    early_join = yield dataclasses.replace(
        node_work.join_data_phase(op, helper, for_masters=True),
        title=TITLE_EARLY_JOIN_DATA, background=True)
    ctl, members, health = yield etcd_phase(op, topology, helper)
    stale = heal_plan.stale_members(members, topology.masters)
    if stale:
        problem = etcd.removal_problem(members, health, stale)
        if problem:
            raise heal_plan.HealRefused(reason=problem)
        for member in stale:
            yield remove_member_phase(
                op, helper, ctl, member,
                'Remove stale etcd member %s'
                % (member.name or member.hex_id))
    access = yield credentials_phase(op, topology, helper)
    states = yield cluster_access.nodes_phase(op, access)
    todo = [m for m in masters
            if not (m.name in states and states[m.name].ready)]
    prefix = yield cluster.prefix_phase(op, topology, helper)
    full = heal_plan.lb_full(topology, prefix, op.state.vrrp_password(),
                             reachable)
    own, others = heal_plan.split_lb(full, {m.name for m in todo})
    own_lb = own_phase = None
    for number, master in enumerate(todo):
        # A fresh token and certificate key for each join: the key lives
        # two hours, a join of several masters may take longer.
        if number == 0:
            join = yield Phase(TITLE_WAIT_JOIN_DATA, nodes=(helper.name,),
                               action=lambda: early_join.result(),
                               assume=node_work.PLANNED_JOIN)
        else:
            join = yield node_work.join_data_phase(op, helper,
                                                   for_masters=True)
        if prepared is not None:
            yield prepared
            prepared = None
        if own.calls and own_phase is None:
            # The healed masters' own HAProxy and keepalived while they
            # join (after their prepare: a package's older scripts do not
            # take turns at apt-get, see k8s_mgmt_lib.sh apt_turn).
            # Nothing reaches them: keepalived starts as a nopreempt
            # BACKUP, the VIP stays where it is.
            own_phase = dataclasses.replace(cluster.lb_phase(
                op, TITLE_OWN_LB % _names(todo), topology, own),
                background=True)
            own_lb = yield own_phase
        yield node_work.join_master_phase(op, master, access.ends, join)
    if prepared is not None:
        yield prepared
    if not todo:
        yield phases.skipped('Join masters', 'every healed master is Ready')
        yield Phase(TITLE_WAIT_JOIN_DATA, nodes=(helper.name,),
                    action=lambda: _unused(op, early_join))
    yield cluster_access.ready_phase(op, heal_worker.TITLE_READY, access,
                                     masters)
    # The masters that stay take the healed ones into HAProxy only now: a
    # freshly reloaded HAProxy counts a backend as up until its first
    # check, so a request through the VIP may go to a healed master before
    # its API server runs (a print-join during the reload failed that way
    # on the lab).
    if own_phase is None:
        yield cluster.lb_phase(op, scripts.TITLE_LB, topology, full)
    else:
        if others.calls:
            yield cluster.lb_phase(op, TITLE_OTHERS_LB % _names(todo),
                                   topology, others)
        yield phases.wait_for(TITLE_WAIT_OWN_LB % _names(todo), own_phase,
                              own_lb)
    record = record_phase(op, topology, masters, helper)
    if record is not None:
        yield record
    return helper, access
