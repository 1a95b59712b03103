"""Upgrade decisions as data: refusals, the order of the nodes, and where
a stopped upgrade resumes.

No I/O here. The upgrade reads every node (the install script's
``upgrade-check``), the cluster's nodes, its version (kubeadm-config) and
etcd into plain values; :func:`decide` turns them into an
:class:`UpgradePlan` or refuses, before anything changes. A re-run decides
again from what it reads, never from what an earlier run meant to do: a
node already at the target is skipped, one an earlier run cordoned (its
mark) is only uncordoned, and ``kubeadm upgrade apply`` runs on no master
once kubeadm-config names the target.
"""

import dataclasses
from typing import Optional

from k8s_mgmt import exceptions
from k8s_mgmt.kube import etcd
from k8s_mgmt import kube_versions as versions

DONE = 'done'            # at the target, nothing to do
UNCORDON = 'uncordon'    # at the target, cordoned by an earlier run
TODO = 'todo'            # drain, upgrade, wait, uncordon


class UpgradeRefused(exceptions.MgmtDriverError):
    message = 'Upgrade refused, nothing was changed: %(reason)s'


class EtcdNotWhole(exceptions.MgmtDriverError):
    message = 'etcd is not whole again: %(reason)s'


class UpgradeStopped(exceptions.MgmtDriverError):
    message = ('Upgrade to %(target)s stopped at %(node)s (%(step)s): '
               '%(reason)s. Done: %(done)s; left: %(left)s. Run the upgrade '
               'again to resume at %(node)s')

    def handling_data(self):
        """Where the upgrade stopped, for the v2 operation's error."""
        words = self.kwargs
        return {'k8sMgmtUpgrade': {
            'target': str(words.get('target')),
            'stoppedAt': words.get('node'), 'step': words.get('step'),
            'done': words.get('done'), 'left': words.get('left')}}


@dataclasses.dataclass(frozen=True)
class NodeCheck:
    """One node as the upgrade reads it: its ``upgrade-check`` report and
    the API's Node."""

    name: str
    role: str                                   # master or worker
    kubelet: Optional[versions.Version] = None
    # Masters: the oldest version of their control-plane static pods.
    control_plane: Optional[versions.Version] = None
    offered: tuple = ()                 # the target minor's packages
    apt_error: Optional[str] = None     # why none could be read
    in_cluster: bool = True             # a Node of that name exists
    ready: bool = False
    marked: bool = False                # cordoned by an upgrade


@dataclasses.dataclass(frozen=True)
class NodeStep:
    name: str
    role: str
    state: str          # DONE, UNCORDON or TODO
    apply: bool = False  # kubeadm upgrade apply here (else upgrade node)


@dataclasses.dataclass(frozen=True)
class UpgradePlan:
    target: versions.Version            # with its patch
    current: versions.Version           # the control plane's, before
    masters: tuple                      # NodeSteps, the VIP holder last
    batches: tuple                      # tuples of worker NodeSteps
    apply_on: Optional[str]             # None: kubeadm-config says target

    @property
    def steps(self):
        return self.masters + tuple(s for b in self.batches for s in b)

    @property
    def nothing_to_do(self):
        return all(s.state == DONE for s in self.steps)


def node_state(check, target):
    """DONE, UNCORDON or TODO for ``check`` (a NodeCheck) and ``target``."""
    at_target = check.kubelet is not None and check.kubelet.key == \
        target.key and (check.role != 'master' or (
            check.control_plane is not None and
            check.control_plane.key == target.key))
    if not at_target:
        return TODO
    return UNCORDON if check.marked else DONE


def batches(items, size):
    """``items`` in consecutive tuples of at most ``size`` (at least 1)."""
    size = max(1, size)
    starts = range(0, len(items), size)
    return tuple(tuple(items[i:i + size]) for i in starts)


def etcd_problem(members, health, master_names):
    """Why etcd is not one started, healthy member per master; None when
    it is. ``members``/``health``: :mod:`k8s_mgmt.kube.etcd`'s."""
    healthy = {m.member_id for m in etcd.healthy_members(members, health)}
    named = {m.name for m in members if m.name}
    missing = [n for n in master_names if n not in named]
    unhealthy = [m.name or '(unstarted %s)' % m.hex_id for m in members
                 if m.member_id not in healthy or not m.name]
    if len(members) == len(master_names) and not missing and not unhealthy:
        return None
    text = ('etcd needs one healthy member per master first: %d member(s) '
            'for %d masters' % (len(members), len(master_names)))
    if missing:
        text += ' (%s has none)' % ', '.join(missing)
    if unhealthy:
        text += '; unhealthy: %s' % ', '.join(unhealthy)
    return text


def resolve_target(target, first_master):
    """``target`` with its patch: a minor alone becomes the newest patch
    the first master's repository offers. UpgradeRefused when it offers
    none."""
    if target.patch is not None:
        return target
    offered = versions.newest(
        str(v) for v in first_master.offered if v.minor == target.minor)
    if offered is None:
        raise UpgradeRefused(reason=_not_offered(first_master, target))
    return offered


def _not_offered(check, target):
    if check.apt_error:
        return '%s cannot read the Kubernetes %s packages: %s' % (
            check.name, target.minor_text, check.apt_error)
    offered = ', '.join(str(v) for v in check.offered) or 'none'
    return ('%s cannot get kubeadm %s from its Kubernetes repository (it '
            'offers %s): check kubernetes_apt_repository and the node\'s '
            'proxy' % (check.name, target, offered))


def decide(target, checks, cluster_version, members, health, holder=None,
           max_unavailable=1, supported_minors=None, expired=None):
    """The UpgradePlan, or UpgradeRefused naming the first reason.

    ``checks``: NodeChecks, masters first in topology order;
    ``cluster_version``: kubeadm-config's (a Version, None when unread);
    ``members``/``health``: etcd's; ``holder``: the master holding the
    VIP (last); ``supported_minors``: the package script's; ``expired``:
    {master: (certificate, date)} already expired.
    """
    masters = [c for c in checks if c.role == 'master']
    workers = [c for c in checks if c.role != 'master']
    if supported_minors is not None and target.minor not in \
            supported_minors:
        raise UpgradeRefused(reason=(
            'Kubernetes %s is not supported by the VNF package\'s '
            'install_k8s_cluster.sh (supported: 1.%d to 1.%d)'
            % (target.minor_text, min(supported_minors),
               max(supported_minors))))
    _refuse_not_ready(checks)
    problem = etcd_problem(members, health, [m.name for m in masters]) \
        if len(masters) > 1 else None
    if problem:
        raise UpgradeRefused(reason=problem)
    target = resolve_target(target, masters[0])
    planes = [c.control_plane for c in masters if c.control_plane]
    if cluster_version is not None:
        planes.append(cluster_version)
    if not planes:
        raise UpgradeRefused(reason='no master reports its control plane\'s '
                             'version')
    lowest = min(planes, key=lambda v: v.key)
    highest = max(planes, key=lambda v: v.key)
    problem = versions.control_plane_problem(lowest, highest, target)
    for check in checks:
        if problem:
            break
        if check.kubelet is not None:
            problem = versions.kubelet_problem(check.name, check.kubelet,
                                               target)
    if problem:
        raise UpgradeRefused(reason=problem)
    states = {c.name: node_state(c, target) for c in checks}
    for check in checks:
        if states[check.name] == TODO and not any(
                v.key == target.key for v in check.offered):
            raise UpgradeRefused(reason=_not_offered(check, target))
    if expired:
        name = sorted(expired)[0]
        certificate, date = expired[name]
        raise UpgradeRefused(reason=(
            '%s\'s certificate %s expired on %s: renew the certificates '
            'first (metadata k8sMgmtCertificates: renew)'
            % (name, certificate, date)))
    ordered = [m for m in masters if m.name != holder] + [
        m for m in masters if m.name == holder]
    applied = cluster_version is not None and \
        cluster_version.key == target.key
    apply_on = None if applied else next(
        (m.name for m in ordered if states[m.name] == TODO), None)
    master_steps = tuple(NodeStep(m.name, 'master', states[m.name],
                                  apply=m.name == apply_on)
                         for m in ordered)
    worker_steps = [NodeStep(w.name, 'worker', states[w.name])
                    for w in workers]
    return UpgradePlan(target=target, current=lowest, masters=master_steps,
                       batches=batches(worker_steps, max_unavailable),
                       apply_on=apply_on)


def _refuse_not_ready(checks):
    problems = ['%s is no node of the cluster' % c.name for c in checks
                if not c.in_cluster]
    problems += ['%s is NotReady' % c.name for c in checks
                 if c.in_cluster and not c.ready]
    if problems:
        raise UpgradeRefused(reason='every node must be Ready first: %s'
                             % ', '.join(problems))


def done_and_left(plan, stopped_at):
    """(names done, names left) when the upgrade stopped at ``stopped_at``
    (for UpgradeStopped)."""
    names = [s.name for s in plan.steps]
    index = names.index(stopped_at) if stopped_at in names else 0
    done = [s.name for s in plan.steps[:index]] + [
        s.name for s in plan.steps[index:] if s.state == DONE]
    left = [n for n in names[index:] if n not in done]
    return ', '.join(done) or 'none', ', '.join(left) or 'none'


class RollbackRefused(exceptions.MgmtDriverError):
    message = 'Rollback of the upgrade refused: %(reason)s'


def rollback_problem(kubelets, cluster_version, recorded):
    """Why a failed upgrade may not be rolled back (a Kubernetes version
    cannot be taken back), or None when nothing of it changed the cluster.

    ``kubelets`` is {node: kubelet version text}; ``cluster_version`` the
    version kubeadm-config names; ``recorded`` the version the cluster ran
    before the upgrade (exact, or a minor for any patch of it)."""
    before = versions.parse(recorded or '')
    changed = []
    for name, text in sorted(dict(kubelets, **{
            'the control plane': cluster_version}).items()):
        seen = versions.parse(text or '')
        if seen is None or before is None:
            continue
        if not before.same_release(seen):
            changed.append('%s runs %s' % (name, seen))
    if not changed:
        return None
    return ('Kubernetes cannot be downgraded, and %s (the cluster ran %s '
            'before): retry the operation, which resumes the upgrade where '
            'it stopped, or fail it, which keeps what was upgraded'
            % (', '.join(changed), recorded))
