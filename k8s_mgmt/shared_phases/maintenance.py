"""Taking one node out of service and back, as day-two work does (an
upgrade; certificate renewal): the phases, built from the heal's.

A master of an HA cluster leaves HAProxy on the other masters before it
is drained (the VIP's holder forwards nothing to it meanwhile); when it
holds the VIP, it hands the VIP over first and takes part in VRRP again
after (a ``nopreempt`` BACKUP: it does not take the VIP back). It is
checked Ready at its new version, etcd at full membership, before it
serves again. Every node is cordoned with the upgrade's mark and
uncordoned only with it.
"""

import dataclasses

from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import polling
from k8s_mgmt import ssh
from k8s_mgmt.engine import phases
from k8s_mgmt.kube import client as kube_client
from k8s_mgmt.kube import drain
from k8s_mgmt.kube import etcd
from k8s_mgmt.shared_phases import cluster
from k8s_mgmt.shared_phases import heal_plan
from k8s_mgmt.shared_phases import upgrade_plan

LOG = logging.getLogger(__name__)

Phase = phases.Phase

START_KEEPALIVED = ssh.Command('systemctl', 'start', 'keepalived').sudo()


def master_out_phase(op, topology, master, reachable, prefix):
    """HAProxy on the other (reachable) masters without ``master``."""
    return cluster.lb_phase(
        op, 'Take %s out of HAProxy' % master.name, topology,
        heal_plan.lb_without(topology, [master], reachable, prefix,
                             op.state.vrrp_password()))


def leave_haproxy(op, topology, master, reachable, prefix, meanwhile=()):
    """``master`` out of the other masters' HAProxy, in the background
    while ``meanwhile`` (phases) run, then waited for: whatever follows
    finds no request sent to it."""
    out = dataclasses.replace(master_out_phase(
        op, topology, master, reachable, prefix), background=True)
    reloading = yield out
    for phase in meanwhile:
        yield phase
    yield phases.wait_for('Wait until %s is out of HAProxy' % master.name,
                          out, reloading)


def master_in_phase(op, topology, master, reachable, prefix):
    """HAProxy on the other (reachable) masters with every master."""
    full = heal_plan.lb_full(topology, prefix, op.state.vrrp_password(),
                             reachable=reachable)
    _mine, others = heal_plan.split_lb(full, {master.name})
    return cluster.lb_phase(op, 'Put %s behind HAProxy again' % master.name,
                            topology, others)


def keepalived_start_phase(op, master):
    def start():
        op.session(master.name).run(START_KEEPALIVED,
                                    step='start keepalived', timeout=60)
    return Phase('Start keepalived on %s' % master.name,
                 nodes=(master.name,),
                 work=(phases.command_work(master.name, START_KEEPALIVED),),
                 action=start)


def drain_phase(op, access, name, mark):
    """Cordon (with the mark) and drain through the Eviction API; the Node
    stays."""
    return Phase('Drain %s' % name, nodes=(name,), work=(phases.api_work(
        'PATCH node %s: unschedulable, annotation %s=%s; evict its pods '
        '(PodDisruptionBudgets respected%s)' % (
            name, kube_client.UPGRADE_MARK, mark,
            '; force_drain: refused ones deleted'
            if op.params.force_drain else '')),),
        action=lambda: drain_node(op, access, name, mark))


def uncordon_phase(op, access, name):
    return Phase('Uncordon %s' % name, nodes=(name,), work=(phases.api_work(
        'PATCH node %s: schedulable, the annotation %s dropped (only when '
        'it has it)' % (name, kube_client.UPGRADE_MARK)),),
        action=lambda: uncordon_node(op, access, name), assume=True)


# Each starts on a new connection: the VIP may have moved, or HAProxy
# reloaded, since the last request, and a write on a connection they cut
# is not repeated.

def drain_node(op, access, name, mark):
    access.api.reset_connections()
    return drain.drain_and_delete(access.api, name,
                                  force=op.params.force_drain, delete=False,
                                  mark=mark, prefix=op.prefix)


def uncordon_node(op, access, name):
    access.api.reset_connections()
    return drain.uncordon(access.api, name, prefix=op.prefix)


def wait_version(op, access, names, version, timeout=None):
    """Poll until every node of ``names`` is Ready with kubelet
    ``version`` (a kube_versions.Version); their states."""
    timeout = timeout or conf.CONF.k8s_mgmt.node_ready_timeout
    wanted = set(names)
    poll = polling.Poll(timeout, first=0.5, maximum=5.0)
    states, last_error = {}, None
    for _ in poll:
        try:
            states = access.api.nodes(deadline=poll.deadline)
            last_error = None
        except kube_client.APIError as err:
            last_error = err
            continue
        behind = sorted(n for n in wanted if not (
            n in states and states[n].ready and
            states[n].kubelet_version == version.tag))
        if not behind:
            return {n: states[n] for n in wanted}
    detail = '; last API error: %s' % last_error if last_error else ''
    shown = ', '.join('%s (%s)' % (n, _shown(states.get(n)))
                      for n in sorted(wanted))
    raise kube_client.APIError(
        endpoint=access.api.endpoint, what='wait for kubelet %s' % version,
        reason='not Ready at %s after %.0f s: %s%s' % (
            version, timeout, shown, detail))


def _shown(state):
    if state is None:
        return 'no Node'
    return '%s, kubelet %s' % ('Ready' if state.ready else 'NotReady',
                               state.kubelet_version or 'unknown')


def wait_version_phase(op, access, names, version):
    return Phase('Wait until %s %s Ready with kubelet %s' % (
        ', '.join(names), 'is' if len(names) == 1 else 'are', version),
        nodes=tuple(names), work=(phases.api_work(
            'GET %s/api/v1/nodes until %s Ready, kubeletVersion %s'
            % (access.ends.api_url, ', '.join(names), version.tag)),),
        action=lambda: wait_version(op, access, names, version))


def etcd_check(op, helper, masters):
    """etcd read on ``helper``: one started, healthy member per master;
    else the reason (a string)."""
    ctl = etcd.EtcdCtl(op.session(helper.name), helper.name)
    members = ctl.members()
    health = ctl.settled_health(members)
    problem = upgrade_plan.etcd_problem(members, health,
                                        [m.name for m in masters])
    if problem:
        raise upgrade_plan.EtcdNotWhole(reason=problem)
    return '%d members, all healthy' % len(members)


def etcd_check_phase(op, helper, masters):
    return Phase('Check etcd on %s: %d members, all healthy' % (
        helper.name, len(masters)), nodes=(helper.name,),
        work=(phases.Work(helper.name, 'ssh', 'etcdctl member list -w json'),
              phases.Work(helper.name, 'ssh',
                          'etcdctl endpoint health -w json')),
        action=lambda: etcd_check(op, helper, masters),
        assume='%d members, all healthy' % len(masters))
