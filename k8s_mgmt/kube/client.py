"""The cluster's Kubernetes API, through the official ``kubernetes`` client.

Responses are read as JSON (``_preload_content=False``) and reduced to plain
:class:`NodeState` values: the driver never parses kubectl text, and a
stand-in API that omits optional fields does not trip the client's models.
Waiting is polling with jittered backoff against a deadline
(:class:`~k8s_mgmt.polling.Poll`).

Every request is bounded by ``[k8s_mgmt] kube_api_timeout`` (connect plus
read), cut to what is left of the caller's deadline, and is tried once:
urllib3's default retries would repeat a timed-out GET three more times.
Only a read whose connection was closed without an answer is asked again,
once (:data:`READ_ATTEMPTS`).
An API that accepts the connection and never answers ends in a
:class:`~k8s_mgmt.exceptions.KubernetesAPIError` naming the call.
"""

import dataclasses
import json
import time

from kubernetes import client as k8s_client
from oslo_log import log as logging
from urllib3 import exceptions as urllib3_exc

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import polling
from k8s_mgmt import secrets

LOG = logging.getLogger(__name__)

# The least a request cut short by a deadline is still given.
MIN_REQUEST_TIMEOUT = 0.1
_FIRST_DELAY = 0.5
_MAX_DELAY = 5.0


# The annotation an upgrade puts on a Node it cordons (its target):
# only such a Node is uncordoned by the upgrade, never one an operator
# cordoned.
UPGRADE_MARK = 'k8s-mgmt.io/upgrade'


@dataclasses.dataclass(frozen=True)
class NodeState:
    name: str
    ready: bool
    labels: dict
    roles: tuple = ()
    kubelet_version: str = None     # status.nodeInfo.kubeletVersion
    unschedulable: bool = False     # cordoned
    upgrade_mark: str = None        # UPGRADE_MARK's value, when set


APIError = exceptions.KubernetesAPIError


def status_of(err):
    """The HTTP status of an APIError the API answered, else None."""
    return err.kwargs.get('status') if isinstance(err, APIError) else None


def request_timeout(deadline=None):
    """Seconds the next request may take: ``kube_api_timeout``, or less
    when ``deadline`` (a ``time.monotonic()`` value) is nearer."""
    limit = conf.CONF.k8s_mgmt.kube_api_timeout
    if deadline is not None:
        limit = min(limit, max(deadline - time.monotonic(),
                               MIN_REQUEST_TIMEOUT))
    return limit


# Attempts of a read whose kept-alive connection the server closed without
# answering (HAProxy's hard-stop-after closes the VIP's old connections 3 s
# after a reload; an idle timeout closes them as they are reused): the
# GET is asked again once, on a new connection. Writes are never repeated.
READ_ATTEMPTS = 2
_READS = ('list_', 'read_')


def is_read(fn):
    """Whether ``fn`` of the generated client only reads."""
    return getattr(fn, '__name__', '').startswith(_READS)


def closed_unanswered(err):
    """True for a connection the server closed before any answer (not a
    timeout, not a refused connection)."""
    if isinstance(err, urllib3_exc.MaxRetryError):
        err = err.reason
    if isinstance(err, urllib3_exc.ProtocolError):
        return True
    return isinstance(err, (ConnectionResetError, ConnectionAbortedError,
                            BrokenPipeError)) or \
        type(err).__name__ == 'RemoteDisconnected'


def is_timeout(err):
    """True for a request that got no answer in time."""
    if isinstance(err, urllib3_exc.MaxRetryError):
        err = err.reason
    return isinstance(err, (urllib3_exc.TimeoutError, TimeoutError))


def failure_reason(err, limit):
    """The reason of a request that raised ``err`` (not an HTTP status)."""
    if is_timeout(err):
        return 'no answer within %.1f s' % limit
    return '%s: %s' % (type(err).__name__, err)


def request(fn, *args, deadline=None, **kwargs):
    """``fn(*args, **kwargs)`` of the generated client, JSON not parsed,
    bounded by :func:`request_timeout`. Returns ``(response, limit)``."""
    limit = request_timeout(deadline)
    # One number: urllib3 bounds connect plus read by it (a (connect,
    # read) pair would allow their sum).
    return fn(*args, _preload_content=False, _request_timeout=limit,
              **kwargs), limit


def node_state(item):
    """A NodeState from one Node object of the API's JSON."""
    meta = item.get('metadata') or {}
    labels = dict(meta.get('labels') or {})
    ready = any(c.get('type') == 'Ready' and c.get('status') == 'True'
                for c in (item.get('status') or {}).get('conditions') or ())
    roles = tuple(sorted(key.split('/', 1)[1] for key in labels
                         if key.startswith('node-role.kubernetes.io/')))
    info = (item.get('status') or {}).get('nodeInfo') or {}
    return NodeState(meta.get('name'), ready, labels, roles,
                     kubelet_version=info.get('kubeletVersion') or None,
                     unschedulable=bool((item.get('spec') or {}).get(
                         'unschedulable')),
                     upgrade_mark=(meta.get('annotations') or {}).get(
                         UPGRADE_MARK))


class ClusterAPI(object):
    """One API client for one operation; close it when done."""

    def __init__(self, endpoint, token, ca_cert):
        self.endpoint = endpoint
        self._token = secrets.Secret(token)
        config = k8s_client.Configuration()
        config.host = endpoint
        config.api_key = {'authorization': self._token.reveal()}
        config.api_key_prefix = {'authorization': 'Bearer'}
        config.ca_cert_data = ca_cert
        config.verify_ssl = True
        config.retries = False  # the callers' polling loops retry
        self._api = k8s_client.ApiClient(config)
        self._core = k8s_client.CoreV1Api(self._api)

    def close(self):
        self._api.close()

    def reset_connections(self):
        """Drop the pooled connections: after the VIP moved or HAProxy
        reloaded, a kept-alive connection may be cut, and a write on it
        fails (writes are never repeated). The next request connects
        anew."""
        pool = getattr(getattr(self._api, 'rest_client', None),
                       'pool_manager', None)
        if pool is not None:
            pool.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _json(self, what, status, raw):
        if not 200 <= status < 300:
            raise APIError(endpoint=self.endpoint, what=what,
                           reason='HTTP %d: %s' % (
                               status, raw[:300].decode('utf-8', 'replace')))
        try:
            return json.loads(raw)
        except ValueError:
            raise APIError(endpoint=self.endpoint, what=what,
                           reason='HTTP %d with a body that is no JSON: %s'
                           % (status, raw[:100].decode('utf-8', 'replace')))

    @property
    def core(self):
        """The generated CoreV1Api of this client (for :meth:`call`)."""
        return self._core

    def call(self, what, fn, *args, deadline=None, **kwargs):
        """``fn`` of the generated client, bounded and tried once; its
        JSON answer, or APIError naming ``what``."""
        return self._call(what, fn, *args, deadline=deadline, **kwargs)

    def _call(self, what, fn, *args, deadline=None, **kwargs):
        limit = request_timeout(deadline)
        attempts = READ_ATTEMPTS if is_read(fn) else 1
        for attempt in range(1, attempts + 1):
            try:
                response, limit = request(fn, *args, deadline=deadline,
                                          **kwargs)
                # The body comes after the headers: a server that dies or
                # stalls in between fails here, within the same bound.
                status, raw = response.status, response.data
                break
            except k8s_client.ApiException as err:
                raise APIError(endpoint=self.endpoint, what=what,
                               reason='HTTP %s %s' % (err.status,
                                                      err.reason),
                               status=err.status)
            except Exception as err:  # urllib3/ssl/socket: one message
                if attempt < attempts and closed_unanswered(err):
                    LOG.info('%s: %s: the connection closed without an '
                             'answer; asking again', self.endpoint, what)
                    continue
                raise APIError(endpoint=self.endpoint, what=what,
                               reason=failure_reason(err, limit))
        return self._json(what, status, raw)

    def nodes(self, deadline=None):
        """{name: NodeState} of every node the API knows."""
        data = self._call('list nodes', self._core.list_node,
                          deadline=deadline)
        states = [node_state(item) for item in data.get('items') or ()]
        return {s.name: s for s in states}

    def cluster_version(self, deadline=None):
        """The ``kubernetesVersion`` kubeadm-config names (the version
        ``kubeadm upgrade apply`` last brought the cluster to), or None
        when the cluster has no kubeadm-config."""
        try:
            data = self._call('read kube-system/kubeadm-config',
                              self._core.read_namespaced_config_map,
                              'kubeadm-config', 'kube-system',
                              deadline=deadline)
        except APIError as err:
            if status_of(err) == 404:
                return None
            raise
        text = (data.get('data') or {}).get('ClusterConfiguration') or ''
        for line in text.splitlines():
            key, _, value = line.partition(':')
            if key == 'kubernetesVersion':
                return value.strip().strip('"\'') or None
        return None

    def label_node(self, name, labels):
        """Set ``labels`` on node ``name`` (a JSON merge patch)."""
        body = {'metadata': {'labels': dict(labels)}}
        self._call('label node %s' % name, self._core.patch_node, name, body,
                   _content_type='application/merge-patch+json')

    def wait_answering(self, timeout=None):
        """Poll until the API lists nodes; return them (Ready or not)."""
        return self.wait_ready((), timeout=timeout)

    def wait_ready(self, names, timeout=None, prefix=''):
        """Poll until every node in ``names`` is Ready; return the states.

        Connection errors count as "not yet" until the deadline (the API
        or the VIP may still be settling).
        """
        timeout = timeout or conf.CONF.k8s_mgmt.node_ready_timeout
        wanted = set(names)
        poll = polling.Poll(timeout, first=_FIRST_DELAY, maximum=_MAX_DELAY)
        last_error, states, reported = None, {}, None
        for _ in poll:
            try:
                states = self.nodes(deadline=poll.deadline)
                last_error = None
            except APIError as err:
                last_error = err
            missing = sorted(n for n in wanted
                             if not (n in states and states[n].ready))
            if not missing and last_error is None:
                return states
            if missing != reported:
                LOG.info('%s waiting for %d node(s) to be Ready: %s',
                         prefix, len(missing), ', '.join(missing))
                reported = missing
        detail = '; last API error: %s' % last_error if last_error else ''
        raise APIError(
            endpoint=self.endpoint, what='wait for Ready nodes',
            reason='not Ready after %.0f s: %s%s' % (
                timeout, ', '.join(missing), detail))
