"""Upgrade: the cluster one Kubernetes minor forward (any patch within
it), a node at a time, the API answering throughout.

The phases (HA; a single master skips the VIP, HAProxy and etcd ones)::

    Read the topology from Heat
    Connect to every node
    Upload the scripts
    Check every node for the upgrade to <target>
                                   (upgrade-check, all at once: versions,
                                    what the target's repository offers;
                                    in the background while the next
                                    four run)
    Probe the other masters; Read the API credentials through <master>
    Read the cluster's nodes and version
                                   (Nodes, kubeadm-config)
    Read etcd members and health on <master>
    Find the VIP on <masters>
    Wait until every node is checked
    Decide the upgrade to <target> (every refusal before any change:
                                    upgrade_plan.decide)
    Read the cluster network's prefix on <master>
    -- each master, the VIP's holder last --
    Hand the VIP over from <m>     (its holder only)
    Take <m> out of HAProxy        (on the other masters, in the
                                    background)
    Drain <m>                      (cordoned with the upgrade's mark)
    Wait until <m> is out of HAProxy
    Upgrade <m>                    (kubeadm upgrade apply on the first,
                                    upgrade node on the others)
    Record Kubernetes <target> as the cluster's version (after apply)
    Wait until <m> is Ready with kubelet <target>
    Check etcd on <other>: N members, all healthy
    Put <m> behind HAProxy again   (with the next master's change: every
                                    master but the next one)
    Start keepalived on <m>        (its holder only)
    Uncordon <m>
    Read the certificates on every master
                                   (in the background while the workers
                                    go: kubeadm upgrade renewed them)
    -- then the workers, max_unavailable at a time --
    Drain <workers>; Upgrade <workers> (all at once); Wait until ...;
    Uncordon each
    Wait until the certificates are read; Record the certificates' expiry
                                   (also when a worker stopped the upgrade)
    Record the upgrade as done

A re-run decides from what it reads: a node at the target is skipped, one
an earlier run left cordoned (its mark) is only put back, and no master
runs ``kubeadm upgrade apply`` again once kubeadm-config names the target.
A failure stops at the failing node with the others serving and says
where (:class:`~k8s_mgmt.shared_phases.upgrade_plan.UpgradeStopped`).
"""

import dataclasses

from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import kube_versions as versions
from k8s_mgmt import shipped
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import upgrade_scripts
from k8s_mgmt.engine import uploads
from k8s_mgmt.kube import client as kube_client
from k8s_mgmt.shared_phases import certs
from k8s_mgmt.shared_phases import cluster
from k8s_mgmt.shared_phases import heal_master
from k8s_mgmt.shared_phases import maintenance
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import upgrade_plan as up

LOG = logging.getLogger(__name__)

Phase = phases.Phase


def target_of(op):
    """The request's target; ValidationError when it names none."""
    target = versions.parse(op.ctx.upgrade_target or '')
    if target is None:
        raise exceptions.ValidationError([(
            'metadata.k8sMgmtUpgrade', 'not a Kubernetes version such as '
            '1.36 or 1.36.1: %r' % (op.ctx.upgrade_target,))])
    return target


def _refuse_old_script(op):
    if not op.scripts.features.upgrade:
        raise up.UpgradeRefused(reason=(
            'the VNF package\'s install_k8s_cluster.sh cannot upgrade (its '
            'k8s-mgmt-features line lacks "upgrade"): use a package built '
            'by this k8s-mgmt'))


def _planned_checks(op, nodes, target):
    """A dry run: every node at the request's version, the target
    offered."""
    current = versions.parse(op.params.kubernetes_version)
    current = current if current.patch is not None else current.with_patch(0)
    offered = (target if target.patch is not None else target.with_patch(0),)
    return {n.name: upgrade_scripts.UpgradeCheck(
        node=n.name, kubeadm=current, kubelet=current, kubectl=current,
        control_plane=current if n.role == 'master' else None,
        offered=offered, apt_error=None) for n in nodes}


def check_phase(op, nodes, target):
    calls = {n.name: upgrade_scripts.upgrade_check_call(n, op.params, target)
             for n in nodes}

    def one(node, _session):
        result = op.run_script(node, calls[node.name])
        return upgrade_scripts.UpgradeCheck.from_output(node.name,
                                                        result.stdout)
    return Phase('Check every node for the upgrade to %s' % target,
                 nodes=node_work.names(nodes), parallel=True,
                 work=tuple(phases.script_work(c, uploads.REMOTE_DIR)
                            for c in calls.values()),
                 action=lambda: op.on_nodes('upgrade-check', nodes, one),
                 assume=op.assume(lambda: _planned_checks(op, nodes,
                                                          target)))


def cluster_phase(op, access):
    """(Nodes, kubeadm-config's version)."""
    def read():
        return access.api.nodes(), access.api.cluster_version()

    def assumed():
        nodes = op.facts.topology.masters + op.facts.topology.workers
        states = {n.name: kube_client.NodeState(
            n.name, n.name in op.facts.ready, {}) for n in nodes}
        return states, None
    work = (phases.api_work('GET %s/api/v1/nodes' % access.ends.api_url),
            phases.api_work('GET %s/api/v1/namespaces/kube-system/'
                            'configmaps/kubeadm-config'
                            % access.ends.api_url))
    return Phase('Read the cluster\'s nodes and version', work=work,
                 action=read, assume=op.assume(assumed))


def node_checks(topology, reports, states):
    """NodeChecks from the scripts' reports and the API's Nodes."""
    found = []
    for node in topology.masters + topology.workers:
        report = reports[node.name]
        state = states.get(node.name)
        found.append(up.NodeCheck(
            node.name, node.role, kubelet=report.kubelet,
            control_plane=report.control_plane, offered=report.offered,
            apt_error=report.apt_error, in_cluster=state is not None,
            ready=bool(state and state.ready),
            marked=bool(state and state.upgrade_mark)))
    return found


def build(op):
    target = target_of(op)
    _refuse_old_script(op)
    topology = yield node_work.topology_phase(op)
    nodes = topology.masters + topology.workers
    yield node_work.connect_phase(op, 'Connect to every node', nodes)
    yield node_work.upload_phase(op, nodes)
    # The nodes' checks (an apt-get update each) run while the API, etcd
    # and the VIP are read.
    check = dataclasses.replace(check_phase(op, nodes, target),
                                background=True)
    checking = yield check
    helper, access = yield from heal_master.api_through_a_master(
        op, topology, ())
    states, cluster_version = yield cluster_phase(op, access)
    ha = len(topology.masters) > 1 and topology.vip
    members = health = ()
    holder = None
    if ha:
        _ctl, members, health = yield heal_master.etcd_phase(op, topology,
                                                             helper)
        holders = yield heal_master.vip_phase(op, topology.masters,
                                              topology.vip)
        holder = next((m.name for m in topology.masters
                       if m.name in (holders or ())), None)
    reports = yield phases.wait_for('Wait until every node is checked',
                                    check, checking)
    plan = yield node_work.local_phase(
        op, 'Decide the upgrade to %s' % target, up.decide, target,
        node_checks(topology, reports, states),
        versions.parse(cluster_version or ''), members, health or {},
        holder, op.ctx.max_unavailable or
        conf.CONF.k8s_mgmt.upgrade_max_unavailable,
        shipped.minors_of_script(op.scripts.get(uploads.INSTALL).data
                                 .decode('utf-8', 'replace')))
    if plan.nothing_to_do:
        LOG.info('%s the cluster runs %s on every node; nothing to upgrade',
                 op.prefix, plan.target)
        yield _record_phase(op, plan)
        return {'upgraded': [], 'version': str(plan.target)}
    if not ha and len(topology.masters) == 1:
        LOG.warning('%s the single master\'s API server restarts during '
                    'kubeadm upgrade apply: the API does not answer for a '
                    'while; the workers\' pods keep running', op.prefix)
    prefix = (yield cluster.prefix_phase(op, topology, helper)) if ha \
        else None
    by_name = {n.name: n for n in nodes}
    reachable = set(node_work.names(topology.masters))
    upgraded = []
    # What runs in the background after a master: its etcd check (waited
    # for before the next master's upgrade) and, for the last, its return
    # into HAProxy (waited for at the end).
    waits = Waits()
    for index, step in enumerate(plan.masters):
        master = by_name[step.name]
        # The next master's HAProxy change (every master but it) puts
        # this one back at the same time: one reload, not two.
        following = plan.masters[index + 1:index + 2]
        merged = bool(following) and following[0].state == up.TODO
        yield from _stopping(op, plan, step.name, _master_phases(
            op, topology, access, plan, step, master, ha, prefix, reachable,
            holder, waits, back_with_next=merged))
        upgraded.append(step.name)
    # kubeadm upgrade renewed the masters' certificates: read while the
    # workers go, recorded after them (or after the worker that stopped
    # the upgrade: a re-run does not read them again).
    renewed = [by_name[s.name] for s in plan.masters if s.state == up.TODO]
    reading = None
    if renewed and op.scripts.features.certs:
        read = dataclasses.replace(certs.read_phase(op, topology.masters),
                                   background=True)
        reading = phases.wait_for('Wait until the certificates are read',
                                  read, (yield read))
    try:
        for batch in plan.batches:
            yield from _stopping(op, plan, batch[0].name, _batch_phases(
                op, access, plan, [s for s in batch], by_name))
            upgraded += [s.name for s in batch]
    except up.UpgradeStopped:
        if reading is not None:
            yield from _certificates_recorded(op, renewed, reading)
        raise
    if waits.etcd is not None:
        yield from _stopping(op, plan, plan.masters[-1].name,
                             waits.etcd_wait())
    for wait in waits.at_end():
        yield wait
    if reading is not None:
        yield from _certificates_recorded(op, renewed, reading)
    yield _record_phase(op, plan)
    return {'upgraded': upgraded, 'version': str(plan.target)}


def _certificates_recorded(op, renewed, reading):
    """``reading`` (the wait for the certificates read in the background),
    then the record of them."""
    found = yield reading
    yield certs.record_phase(op, found or {})
    _say_renewed(op, renewed, found or {})


def _say_renewed(op, masters, found):
    """The log line saying kubeadm upgrade renewed the certificates."""
    leaves = [c.expires for name in node_work.names(masters)
              for c in found.get(name, ()) if not c.is_authority]
    LOG.info('%s kubeadm upgrade renewed the certificates it manages on %s'
             '%s', op.prefix, ', '.join(node_work.names(masters)),
             ' (the earliest now expires on %s)' % min(leaves).strftime(
                 '%Y-%m-%d') if leaves else '')


def _stopping(op, plan, name, steps):
    """``steps`` (phases), a failure among them raised as UpgradeStopped
    naming ``name`` and the phase."""
    title = None
    try:
        phase = next(steps)
        while True:
            title = phase.title
            try:
                result = yield phase
            except Exception as err:
                phase = steps.throw(err)
                continue
            phase = steps.send(result)
    except StopIteration:
        return
    except up.UpgradeRefused:
        raise
    except Exception as err:
        done, left = up.done_and_left(plan, name)
        raise up.UpgradeStopped(
            target=plan.target, node=name, step=title or 'its first step',
            reason=exceptions.one_line(err), done=done, left=left) from err


def _upgrade_phase(op, node, target, apply):
    call = upgrade_scripts.upgrade_call(node, op.params, target, apply)
    title = ('Upgrade the control plane on %s (kubeadm upgrade apply %s)'
             % (node.name, target.tag) if apply else
             'Upgrade %s (kubeadm upgrade node)' % node.name)

    def upgrade():
        result = op.run_script(node, call)
        return upgrade_scripts.UpgradeReport.from_output(node.name,
                                                         result.stdout)
    return Phase(title, nodes=(node.name,),
                 work=(phases.script_work(call, uploads.REMOTE_DIR),),
                 action=upgrade)


class Waits(object):
    """Background work of the masters' upgrade still to be waited for:
    the last etcd check (before the next upgrade), and phases to wait for
    at the end: (wait title, phase, handle) each."""

    def __init__(self):
        self.etcd = None
        self.end = []

    def etcd_wait(self):
        """The wait for the last etcd check (phases), if any."""
        if self.etcd is not None:
            title, phase, handle = self.etcd
            self.etcd = None
            yield phases.wait_for(title, phase, handle)

    def at_end(self):
        found, self.end = self.end, []
        return [phases.wait_for(title, phase, handle)
                for title, phase, handle in found]


def _master_phases(op, topology, access, plan, step, master, ha, prefix,
                   reachable, holder, waits, back_with_next=False):
    target = plan.target
    others = [m for m in topology.masters if m.name != master.name]
    if step.state == up.DONE:
        yield phases.skipped('Upgrade %s' % master.name,
                             'it runs %s already' % target)
        return
    if step.state == up.UNCORDON:
        if ha:
            yield maintenance.master_in_phase(op, topology, master,
                                              reachable, prefix)
        yield maintenance.uncordon_phase(op, access, master.name)
        return
    holds = ha and master.name == holder
    if holds:
        yield heal_master.handover_phase(op, master, True)
    drain = maintenance.drain_phase(op, access, master.name, str(target))
    if ha:
        # HAProxy reloads on the other masters while the drain runs; the
        # upgrade waits until they no longer send requests here.
        yield from maintenance.leave_haproxy(op, topology, master, reachable,
                                             prefix, meanwhile=[drain])
    else:
        yield drain
    # etcd must be whole again after the previous master before this one
    # restarts its member.
    yield from waits.etcd_wait()
    yield _upgrade_phase(op, master, target, step.apply)
    if step.apply:
        yield _version_phase(op, target)
    yield maintenance.wait_version_phase(op, access, [master.name], target)
    if ha:
        check = dataclasses.replace(maintenance.etcd_check_phase(
            op, others[0], topology.masters), background=True)
        waits.etcd = ('Wait for the etcd check on %s' % others[0].name,
                      check, (yield check))
        if back_with_next:
            yield phases.skipped(
                'Put %s behind HAProxy again' % master.name,
                'with the next master\'s HAProxy change')
        else:
            # The last master: back while the rest goes on.
            back = dataclasses.replace(maintenance.master_in_phase(
                op, topology, master, reachable, prefix), background=True)
            title = 'Wait until %s is behind HAProxy again' % master.name
            waits.end.append((title, back, (yield back)))
    if holds:
        yield maintenance.keepalived_start_phase(op, master)
    yield maintenance.uncordon_phase(op, access, master.name)


def _batch_phases(op, access, plan, steps, by_name):
    target = plan.target
    todo = [s for s in steps if s.state == up.TODO]
    for step in steps:
        if step.state == up.DONE:
            yield phases.skipped('Upgrade %s' % step.name,
                                 'it runs %s already' % target)
    for step in todo:
        yield maintenance.drain_phase(op, access, step.name, str(target))
    if todo:
        nodes = [by_name[s.name] for s in todo]
        calls = {n.name: upgrade_scripts.upgrade_call(n, op.params, target,
                                                      False) for n in nodes}
        yield node_work.scripts_phase(
            op, 'Upgrade %s (kubeadm upgrade node)'
            % ', '.join(node_work.names(nodes)), nodes, calls,
            'upgrade-node')
        yield maintenance.wait_version_phase(op, access,
                                             node_work.names(nodes), target)
    for step in steps:
        if step.state != up.DONE:
            yield maintenance.uncordon_phase(op, access, step.name)


def _version_phase(op, target,
                   title='Record Kubernetes %s as the cluster\'s version'):
    """The cluster record's version: the one later nodes install."""
    return Phase(title % target,
                 work=(phases.Work(None, 'local', 'cluster record: '
                                   'kubernetes_version=%s' % target),),
                 action=lambda: op.state.update_cluster_record(
                     kubernetes_version=str(target)))


def _record_phase(op, plan):
    return _version_phase(op, plan.target,
                          'Record the upgrade to %s as done')


def build_rollback(op):
    """Before Heat rolls a failed change of package back (v2): refused
    when the upgrade changed any node, since Kubernetes cannot be
    downgraded; nothing to do otherwise."""
    topology = yield node_work.topology_phase(op)
    _helper, access = yield from heal_master.api_through_a_master(
        op, topology, ())
    states, cluster_version = yield cluster_phase(op, access)
    recorded = op.params.kubernetes_version
    problem = yield node_work.local_phase(
        op, 'Check that the upgrade changed no node', up.rollback_problem,
        {name: state.kubelet_version for name, state in states.items()},
        cluster_version, recorded)
    if problem:
        raise up.RollbackRefused(reason=problem)
    LOG.info('%s every node still runs %s: the rollback may go on',
             op.prefix, recorded)
    return {'version': recorded}
