"""Take one node out of the cluster: cordon, drain, delete the Node.

Draining goes through the Eviction API, so PodDisruptionBudgets are
respected: an eviction the API refuses (HTTP 429, or 500 when budgets
overlap) is retried with backoff until ``timeout``; a pod still on the node
at the deadline fails the drain with a :class:`DrainError` that names it and
why. ``force=True`` deletes a pod whose eviction is refused instead of
waiting. Pods owned by a DaemonSet and mirror (static) pods are left alone,
as ``kubectl drain --ignore-daemonsets`` does: deleting them is pointless,
their controller or kubelet puts them back.

A NotReady node (or one the caller knows is unreachable) is deleted without
waiting on its pods: no kubelet will ever confirm they stopped, and deleting
the Node lets the controllers reschedule them.

Every step is decided from what the API reports, so a second call on a node
that is already gone is a no-op, and a call after a half-finished drain
carries on where it stopped.

``timeout`` bounds the whole drain, not only the waits between rounds:
every request (read, cordon, list, evict) is cut to what is left of it, and
the deadline is checked before each eviction. Only deleting the drained
Node gets a request timeout of its own, so a drain ends within ``timeout``
plus one ``kube_api_timeout``.
"""

import dataclasses
import json
import time

from kubernetes import client as k8s_client
from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import polling
from k8s_mgmt.kube import client as client_mod

LOG = logging.getLogger(__name__)

MIRROR_ANNOTATION = 'kubernetes.io/config.mirror'
# Statuses with which the API refuses an eviction that may succeed later:
# 429 a budget allows no disruption now, 500 several budgets match the pod.
REFUSED = (429, 500)
# Retry refused evictions often enough that a budget freed by a pod becoming
# Ready elsewhere is noticed within seconds.
_FIRST_DELAY = 0.2
_MAX_DELAY = 2.0


class DrainError(exceptions.KubernetesAPIError):
    """A drain that could not finish; ``pods`` names the blocking pods."""

    message = ('Kubernetes API %(endpoint)s: drain of node %(node)s did not '
               'finish within %(timeout).0f s; %(count)d pod(s) blocked it: '
               '%(details)s. Retry later, or set force_drain: true in the '
               'request\'s additionalParams to delete them')

    def __init__(self, endpoint, node, timeout, blocked):
        self.node = node
        self.pods = sorted(blocked)
        details = '; '.join('%s (%s)' % (pod, blocked[pod])
                            for pod in self.pods)
        super().__init__(endpoint=endpoint, node=node, timeout=timeout,
                         count=len(blocked), details=details)


class _OutOfTime(exceptions.KubernetesAPIError):
    """A request cut short by the drain's deadline got no answer."""


@dataclasses.dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    daemonset: bool
    mirror: bool
    terminating: bool

    @property
    def ref(self):
        return '%s/%s' % (self.namespace, self.name)

    @property
    def stays(self):
        """True for pods a drain leaves on the node (DaemonSet, mirror)."""
        return self.daemonset or self.mirror


def pod_of(item):
    """A :class:`Pod` from one Pod object of the API's JSON."""
    meta = item.get('metadata') or {}
    owners = meta.get('ownerReferences') or ()
    return Pod(namespace=meta.get('namespace') or 'default',
               name=meta.get('name'),
               daemonset=any(o.get('kind') == 'DaemonSet' and
                             o.get('controller', True) for o in owners),
               mirror=MIRROR_ANNOTATION in (meta.get('annotations') or {}),
               terminating=bool(meta.get('deletionTimestamp')))


@dataclasses.dataclass
class DrainReport:
    """What one drain_and_delete call did on one node."""

    node: str
    found: bool = True           # False: no such Node (already removed)
    unreachable: bool = False    # deleted without draining
    evicted: list = dataclasses.field(default_factory=list)
    deleted: list = dataclasses.field(default_factory=list)  # force
    skipped: list = dataclasses.field(default_factory=list)  # DS / mirror
    node_deleted: bool = False
    seconds: float = 0.0


def _refusal_reason(status, body):
    """A short reason from a refused eviction's Status object."""
    causes = ((body or {}).get('details') or {}).get('causes') or ()
    texts = [c.get('message') for c in causes if c.get('message')]
    text = '; '.join(texts) or (body or {}).get('message') or ''
    return ('eviction refused (HTTP %d): %s' % (status, text)).rstrip(': ')


class _Calls(object):
    """The few API calls a drain needs, answering (status, JSON body).

    Unlike :class:`~k8s_mgmt.kube.ClusterAPI` helpers, a non-2xx answer is
    returned, not raised: 404 and 429 are ordinary outcomes of a drain.
    """

    # Timing slack when telling "cut by the deadline" from "slow API".
    _SLACK = 0.05

    def __init__(self, api, deadline=None):
        self.api = api
        self.core = k8s_client.CoreV1Api(api._api)
        # time.monotonic() value every request is cut to; None: no cut.
        self.deadline = deadline

    def out_of_time(self):
        return (self.deadline is not None and
                time.monotonic() >= self.deadline - self._SLACK)

    def _do(self, what, fn, *args, **kwargs):
        limit = client_mod.request_timeout(self.deadline)
        try:
            response, limit = client_mod.request(
                fn, *args, deadline=self.deadline, **kwargs)
            status, raw = response.status, response.data
        except k8s_client.ApiException as err:
            status, raw = err.status, err.body
        except Exception as err:  # urllib3/ssl/socket
            if client_mod.is_timeout(err) and self.out_of_time():
                raise _OutOfTime(endpoint=self.api.endpoint, what=what,
                                 reason='no answer before the drain '
                                        'deadline')
            raise client_mod.APIError(endpoint=self.api.endpoint, what=what,
                                      reason=client_mod.failure_reason(
                                          err, limit))
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {'message': raw[:300].decode('utf-8', 'replace')
                    if isinstance(raw, bytes) else str(raw)[:300]}
        return status, body

    def check(self, what, status, body, ok=(200, 201, 202)):
        if status not in ok:
            raise client_mod.APIError(
                endpoint=self.api.endpoint, what=what,
                reason='HTTP %s: %s' % (status, (body or {}).get('message')))
        return body

    def cordon(self, name, mark=None):
        """The cordoned Node as the API answers it; None: no such Node.
        One request, not a read then a write: the answer carries what the
        drain needs to know (Ready or not), and a Node that is already
        unschedulable is left as it was (an unchanged object is not
        written). ``mark``: the value of the upgrade's annotation, set in
        the same request."""
        what = 'cordon node %s' % name
        patch = {'spec': {'unschedulable': True}}
        if mark is not None:
            patch['metadata'] = {'annotations': {
                client_mod.UPGRADE_MARK: mark}}
        status, body = self._do(
            what, self.core.patch_node, name, patch,
            _content_type='application/merge-patch+json')
        if status == 404:
            return None
        return self.check(what, status, body, ok=(200, 201))

    def pods_on(self, name):
        what = 'list pods on node %s' % name
        status, body = self._do(what, self.core.list_pod_for_all_namespaces,
                                field_selector='spec.nodeName=%s' % name)
        items = self.check(what, status, body).get('items') or ()
        # Tolerate an API that ignores the field selector.
        return [pod_of(i) for i in items
                if (i.get('spec') or {}).get('nodeName') == name]

    def evict(self, pod):
        body = {'apiVersion': 'policy/v1', 'kind': 'Eviction',
                'metadata': {'name': pod.name, 'namespace': pod.namespace}}
        return self._do('evict pod %s' % pod.ref,
                        self.core.create_namespaced_pod_eviction,
                        pod.name, pod.namespace, body)

    def delete_pod(self, pod):
        what = 'delete pod %s' % pod.ref
        status, body = self._do(what, self.core.delete_namespaced_pod,
                                pod.name, pod.namespace)
        return self.check(what, status, body, ok=(200, 202, 404))

    def delete_node(self, name):
        what = 'delete node %s' % name
        status, body = self._do(what, self.core.delete_node, name)
        self.check(what, status, body, ok=(200, 202, 404))
        return status != 404


def drain_and_delete(api, node_name, timeout=None, force=False,
                     node_unreachable=False, prefix='', delete=True,
                     before_delete=None, mark=None):
    """Cordon, drain and delete Node ``node_name``; a :class:`DrainReport`.

    ``delete=False`` leaves the drained, cordoned Node for whoever removes
    the node next (kubespray's remove-node.yml deletes it itself), or, with
    ``mark`` (an upgrade's target, annotated on the Node as it is
    cordoned), for :func:`uncordon` once the node is upgraded.
    ``before_delete(report)`` runs once the node is drained (or found not
    drainable), right before its Node is deleted: the caller stops the
    node's kubelet there, which would otherwise register the Node again.

    ``api`` is a :class:`~k8s_mgmt.kube.ClusterAPI`. ``timeout`` defaults to
    ``[k8s_mgmt] drain_timeout``. Raises :class:`DrainError` when pods still
    block at the deadline (the node stays cordoned, not deleted), and
    :class:`~k8s_mgmt.exceptions.KubernetesAPIError` when the API fails.
    """
    timeout = timeout or conf.CONF.k8s_mgmt.drain_timeout
    started = time.monotonic()
    poll = polling.Poll(timeout, first=_FIRST_DELAY, maximum=_MAX_DELAY)
    calls = _Calls(api, deadline=poll.deadline)
    report = DrainReport(node=node_name)
    node = calls.cordon(node_name, mark)
    if node is None:
        LOG.info('%s %s: no such node; nothing to drain', prefix, node_name)
        report.found = False
        return report
    ready = client_mod.node_state(node).ready
    report.unreachable = bool(node_unreachable or not ready)
    if report.unreachable:
        LOG.info('%s %s: %s; %s without draining', prefix, node_name,
                 'unreachable' if node_unreachable else 'not Ready',
                 'deleting it' if delete else 'leaving it')
    else:
        _drain(calls, poll, node_name, force, report, prefix)
    if not delete:
        report.seconds = time.monotonic() - started
        LOG.info('%s %s: drained in %.1f s (%d evicted, %d deleted)',
                 prefix, node_name, report.seconds, len(report.evicted),
                 len(report.deleted))
        return report
    if before_delete is not None:
        before_delete(report)
    # Drained (or not drainable): removing the Node may take one full
    # request even when the drain used up its deadline.
    calls.deadline = None
    report.node_deleted = calls.delete_node(node_name)
    report.seconds = time.monotonic() - started
    LOG.info('%s %s: removed in %.1f s (%d evicted, %d deleted, %d left to '
             'their DaemonSet or kubelet)', prefix, node_name,
             report.seconds, len(report.evicted), len(report.deleted),
             len(report.skipped))
    return report


def _drain(calls, poll, node_name, force, report, prefix):
    """Evict rounds paced by ``poll`` until no pod but those that stay is
    left; DrainError naming the rest at the deadline."""
    reasons = {}       # pod -> why it is still on the node, as last seen
    left = []          # pods to move, as last listed
    for _ in poll:
        try:
            pods = calls.pods_on(node_name)
        except _OutOfTime:
            if not reasons:
                raise  # no pod known yet: the listing itself is the error
            break
        report.skipped = sorted(p.ref for p in pods if p.stays)
        left = [p for p in pods if not p.stays]
        if not left:
            return
        reasons = {p.ref: reasons.get(p.ref, 'still on the node')
                   for p in left}
        _evict_round(calls, left, force, report, reasons)
        if calls.out_of_time():
            break
        if reasons:
            LOG.info('%s %s: waiting on %d pod(s): %s', prefix, node_name,
                     len(reasons), ', '.join(sorted(reasons)))
    raise DrainError(calls.api.endpoint, node_name, poll.timeout,
                     reasons or {p.ref: 'still on the node' for p in left})


def _evict_round(calls, pods, force, report, reasons):
    """Try each pod once, updating ``reasons``; stop at the deadline."""
    for pod in pods:
        if calls.out_of_time():
            return
        try:
            reason = _evict_one(calls, pod, force, report)
        except _OutOfTime:
            return
        if reason:
            reasons[pod.ref] = reason
        else:
            reasons.pop(pod.ref, None)


def _evict_one(calls, pod, force, report):
    """Evict (or, forced, delete) one pod; why it is still there, or None."""
    if pod.terminating:
        return 'terminating'
    status, body = calls.evict(pod)
    if status in (200, 201):
        report.evicted.append(pod.ref)
        return 'evicted, terminating'
    if status == 404:
        return None
    if status in REFUSED:
        reason = _refusal_reason(status, body)
        if not force:
            return reason
        LOG.warning('%s: %s; force_drain: deleting it', pod.ref, reason)
        calls.delete_pod(pod)
        report.deleted.append(pod.ref)
        return 'deleted, terminating'
    calls.check('evict pod %s' % pod.ref, status, body)
    return None


def uncordon(api, node_name, prefix=''):
    """Make Node ``node_name`` schedulable again and drop the upgrade's
    mark, only when the mark is there: a Node an operator cordoned stays
    cordoned. True when it was uncordoned."""
    calls = _Calls(api)
    what = 'read node %s' % node_name
    status, body = calls._do(what, calls.core.read_node, node_name)
    if status == 404:
        return False
    node = client_mod.node_state(calls.check(what, status, body))
    if node.upgrade_mark is None:
        if node.unschedulable:
            LOG.info('%s %s: cordoned, but not by an upgrade: left so',
                     prefix, node_name)
        return False
    what = 'uncordon node %s' % node_name
    patch = {'spec': {'unschedulable': None}, 'metadata': {
        'annotations': {client_mod.UPGRADE_MARK: None}}}
    status, body = calls._do(what, calls.core.patch_node, node_name, patch,
                             _content_type='application/merge-patch+json')
    calls.check(what, status, body, ok=(200, 201))
    LOG.info('%s %s: uncordoned', prefix, node_name)
    return True
