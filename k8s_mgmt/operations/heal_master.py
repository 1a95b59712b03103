"""Heal master VNFCs of an HA cluster without losing etcd quorum or the VIP.

heal_start (refused before anything changes when it is the only master or
when etcd would lose quorum)::

    Read etcd members and health      (etcdctl -w json on a healthy master)
    Hand the VIP over                 (stop keepalived on a live target)
    Take <target> out of HAProxy      (configure_lb.sh on the other masters:
                                       reduced backend list, reload only)
    Remove <target>                   (delete its Node)
    Remove etcd member <target>       (through the healthy master; works
                                       when the old VM is unreachable)
    Update the cluster record         (if it named a healed master first)
    Forget the healed VMs' host keys

heal_end (Heat replaced the VMs: new server ids, same IPs)::

    Remove stale etcd members         (left by an interrupted heal_start)
    Upload the scripts
    Read join data / Join master <n>  (print-join -A: fresh certificate key;
                                       kubeadm join adds the etcd member)
    Wait until the healed nodes are Ready
    Configure the load balancer on every master (full backend list; the new
                                       master gets its priority)
"""

from oslo_log import log as logging

from k8s_mgmt import ssh
from k8s_mgmt.kube import drain
from k8s_mgmt.kube import etcd
from k8s_mgmt.operations import heal_plan
from k8s_mgmt.operations import scripts

LOG = logging.getLogger(__name__)


def refuse_unless_healable(run, masters):
    reason = heal_plan.master_refusal(run.params, run.topology, masters)
    if reason:
        raise heal_plan.HealRefused(reason=reason)


def pick_helper(run, masters):
    """A reachable master that is not healed; HealRefused if none."""
    others = [m for m in run.topology.masters
              if m.name not in {t.name for t in masters}]
    reachable = run.steps.run('Probe the other masters', run.probe, others)
    helper = heal_plan.helper_master(run.topology, masters, reachable,
                                     run.state.cluster_record())
    if helper is None:
        raise heal_plan.HealRefused(
            reason='no other master answers SSH (%s); the cluster cannot be '
                   'changed safely' % ', '.join(m.name for m in others))
    return helper, reachable


def read_etcd(run, helper):
    ctl = etcd.EtcdCtl(run.session(helper.name), helper.name)
    members = ctl.members()
    return ctl, members, ctl.health(members)


def remove_masters(run, masters):
    """heal_start for masters."""
    refuse_unless_healable(run, masters)
    helper, reachable = pick_helper(run, masters)
    ctl, members, health = run.steps.run(
        'Read etcd members and health on %s' % helper.name, read_etcd, run,
        helper)
    leaving = [m for t in masters
               for m in etcd.members_of_node(members, t.name, t.nic_ip)]
    if leaving:
        problem = etcd.removal_problem(members, health, leaving)
        if problem:
            raise heal_plan.HealRefused(reason=problem)
    live = run.steps.run('Probe the masters to heal', run.probe, masters)
    run.open_api(helper)
    for master in masters:
        if master.name in live:
            run.steps.run('Hand the VIP over from %s' % master.name,
                          stop_keepalived, run, master)
    run.steps.run('Take %s out of HAProxy' % _names(masters),
                  reconfigure_lb, run, helper,
                  lambda prefix, password: heal_plan.lb_without(
                      run.topology, masters, reachable, prefix, password))
    states = run.api.nodes()
    for master in masters:
        if master.name in states:
            run.steps.run('Remove %s' % master.name, drain.drain_and_delete,
                          run.api, master.name, force=run.params.force_drain,
                          node_unreachable=master.name not in live,
                          prefix=run.prefix)
        else:
            run.steps.skip('Remove %s' % master.name, 'no such node')
    for member in leaving:
        run.steps.run('Remove etcd member %s' % (member.name or member.hex_id),
                      ctl.remove, member)
    update_record(run, masters, helper)
    run.steps.run('Forget the healed VMs\' host keys', run.forget_pins,
                  masters)


def stop_keepalived(run, master):
    """A live target gives the VIP up now (VRRP priority 0 advert), not
    when Heat deletes it."""
    result = run.session(master.name).run(
        ssh.Command('systemctl', 'stop', 'keepalived').sudo(),
        step='stop keepalived', check=False, timeout=60)
    if not result.ok:
        LOG.warning('%s %s: stopping keepalived failed (exit %s); the VIP '
                    'moves when the VM goes', run.prefix, master.name,
                    result.status)


def reconfigure_lb(run, helper, plan_fn):
    prefix = run.vip_prefix(helper)
    change = plan_fn(prefix, run.state.vrrp_password())
    by_name = {m.name: m for m in run.topology.masters}
    nodes = [by_name[c.node] for c in change.calls]
    calls = {c.node: c for c in change.calls}
    LOG.info('%s HAProxy backends now %s on %s', run.prefix,
             ', '.join(change.backends), ', '.join(calls))
    run.on_nodes('configure-lb', nodes,
                 lambda node: run.run_script(node, calls[node.name]))
    return change


def update_record(run, masters, helper):
    record = run.state.cluster_record()
    new_first = heal_plan.first_master_update(record, run.topology, masters,
                                              helper)
    if new_first:
        run.state.update_cluster_record(init_master_server_id=new_first)
        LOG.info('%s first master of the cluster record is now %s',
                 run.prefix, helper.name)


def join_masters(run, masters):
    """heal_end for masters."""
    refuse_unless_healable(run, masters)
    helper, reachable = pick_helper(run, masters)
    run.connect([helper] + list(masters))
    reachable = reachable | {m.name for m in masters}
    ctl, members, health = run.steps.run(
        'Read etcd members and health on %s' % helper.name, read_etcd, run,
        helper)
    stale = heal_plan.stale_members(members, run.topology.masters)
    if stale:
        problem = etcd.removal_problem(members, health, stale)
        if problem:
            raise heal_plan.HealRefused(reason=problem)
        for member in stale:
            run.steps.run('Remove stale etcd member %s'
                          % (member.name or member.hex_id), ctl.remove,
                          member)
    run.open_api(helper)
    states = run.api.wait_answering()
    todo = [m for m in masters
            if not (m.name in states and states[m.name].ready)]
    run.steps.run('Upload the scripts', run.upload,
                  [m for m in run.topology.masters if m.name in reachable])
    for master in todo:
        # A fresh token and certificate key for each join: the key lives
        # two hours, a join of several masters may take longer.
        join = run.steps.run(scripts.TITLE_JOIN_DATA, run.join_data, helper)
        run.steps.run(scripts.title_join_master(master), run.run_script,
                      master, scripts.join_call(master, run.params, run.ends,
                                                join))
    if not todo:
        run.steps.skip('Join masters', 'every healed master is Ready')
    run.steps.run('Wait until the healed nodes are Ready', run.api.wait_ready,
                  [m.name for m in masters], prefix=run.prefix)
    run.steps.run(scripts.TITLE_LB, reconfigure_lb, run, helper,
                  lambda prefix, password: heal_plan.lb_full(
                      run.topology, prefix, password, reachable))
    update_record(run, masters, helper)
    return helper


def _names(nodes):
    return ', '.join(n.name for n in nodes)
