"""What Kubernetes controllers would add to stored objects, done by the API
server stand-in when it reads or writes them: node readiness from kubelet
heartbeats, the service-account token controller, the eviction check
against PodDisruptionBudgets, and the volume controllers (``volumes``)."""

import base64
import copy
import math
import sys

from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import objects
from k8s_mgmt_lab.kube import pki
from k8s_mgmt_lab.kube import store as store_mod
from k8s_mgmt_lab.kube import volumes

SA_TOKEN_TYPE = 'kubernetes.io/service-account-token'
BOOTSTRAP_TYPE = 'bootstrap.kubernetes.io/token'


def node_view(node, grace):
    """The node with its Ready condition judged from the last heartbeat:
    the node lifecycle controller's job, done at read time."""
    node = copy.deepcopy(node)
    status = node.setdefault('status', {})
    conditions = status.setdefault('conditions', [])
    ready = next((c for c in conditions if c.get('type') == 'Ready'), None)
    if ready is None:
        conditions.append({'type': 'Ready', 'status': 'Unknown',
                           'reason': 'NodeStatusNeverUpdated',
                           'message': 'Kubelet never posted node status.',
                           'lastHeartbeatTime': None,
                           'lastTransitionTime': kube.rfc3339()})
        return node
    beat = ready.get('lastHeartbeatTime')
    age = ((kube.now() - kube.parse_rfc3339(beat)).total_seconds()
           if beat else math.inf)
    if age > grace:
        ready.update(status='Unknown', reason='NodeStatusUnknown',
                     message='Kubelet stopped posting node status.')
    return node


def fill_service_account_token(secret, store, ca_pem):
    """Populate a service-account-token Secret like the token controller:
    a fresh bearer token the API server accepts, the CA and namespace."""
    if secret.get('type') != SA_TOKEN_TYPE:
        return secret
    meta = secret['metadata']
    account = (meta.get('annotations') or {}).get(
        'kubernetes.io/service-account.name')
    if not account or (secret.get('data') or {}).get('token'):
        return secret
    namespace = meta.get('namespace', 'default')
    token = pki.new_token(32)
    user = 'system:serviceaccount:%s:%s' % (namespace, account)
    store.add_token(token, user,
                    ['system:serviceaccounts',
                     'system:serviceaccounts:' + namespace])
    data = secret.setdefault('data', {})
    data['token'] = _b64(token)
    data['ca.crt'] = _b64(ca_pem)
    data['namespace'] = _b64(namespace)
    return secret


def _b64(value):
    raw = value if isinstance(value, bytes) else value.encode()
    return base64.b64encode(raw).decode()


def bootstrap_token_user(store, token):
    """The bootstrap identity for ``id.secret`` when a valid, unexpired
    bootstrap-token Secret holds it; else None."""
    if '.' not in token:
        return None
    token_id, token_secret = token.split('.', 1)
    secret, _ = store.get(store_mod.object_key(
        '', 'secrets', 'kube-system', 'bootstrap-token-' + token_id))
    if not secret or secret.get('type') != BOOTSTRAP_TYPE:
        return None
    data = {k: base64.b64decode(v).decode()
            for k, v in (secret.get('data') or {}).items()}
    if data.get('token-secret') != token_secret:
        return None
    expires = data.get('expiration')
    if expires and kube.parse_rfc3339(expires) < kube.now():
        return None
    return {'user': 'system:bootstrap:' + token_id,
            'groups': ['system:bootstrappers']}


# -- volumes ------------------------------------------------------------------

VOLUME_COLLECTIONS = (('pv', 'persistentvolumes'),
                      ('pvc', 'persistentvolumeclaims'), ('pod', 'pods'))
SYNC_ATTEMPTS = 10


def _volume_key(key):
    plural = dict(VOLUME_COLLECTIONS)[key[0]]
    namespace, name = (None, key[1]) if key[0] == 'pv' else key[1:]
    return store_mod.object_key('', plural, namespace, name)


def _read_volume_state(store):
    """({key: object} per kind, {etcd key: mod_revision}, prefixes)."""
    found, versions, prefixes = {}, {}, []
    for kind, plural in VOLUME_COLLECTIONS:
        prefix = store_mod.collection_prefix('', plural)
        items, revision = store.list(prefix)
        prefixes.append((prefix, revision))
        found[kind] = {}
        for etcd_key, value, mod in items:
            meta = value.get('metadata') or {}
            key = (kind, meta.get('name')) if kind == 'pv' else \
                (kind, meta.get('namespace'), meta.get('name'))
            found[kind][key] = value
            versions[_volume_key(key) if kind != 'pod' else etcd_key] = mod
    return found, versions, prefixes


def sync_volumes(store):
    """Bind, release, reclaim and finalize volumes and claims as the
    controllers would after a write, in one etcd transaction that applies
    only if none of what was read changed meanwhile (else read again)."""
    for _attempt in range(SYNC_ATTEMPTS):
        found, versions, prefixes = _read_volume_state(store)
        written, deleted = volumes.sync(
            found['pv'], found['pvc'], found['pod'].values(),
            objects.match_label_selector)
        if not written and not deleted:
            return
        puts = {_volume_key(k): found[k[0]][k] for k in written}
        gone = [_volume_key(k) for k in deleted]
        try:
            store.transaction(puts, gone, {k: versions[k]
                                           for k in list(puts) + gone},
                              prefixes)
            return
        except store_mod.Conflict:
            continue  # another API server wrote first: decide again
    # The write that called us stands; the next one syncs again.
    sys.stderr.write('volume sync: %d conflicting attempts, left for the '
                     'next write\n' % SYNC_ATTEMPTS)


# -- evictions --------------------------------------------------

def _budget_numbers(pdb, pods):
    spec = pdb.get('spec') or {}
    expected = len(pods)
    healthy = sum(1 for p in pods if _pod_healthy(p))

    def resolve(value):
        if isinstance(value, str) and value.endswith('%'):
            return int(math.ceil(expected * int(value[:-1]) / 100.0))
        return int(value)
    if spec.get('minAvailable') is not None:
        desired = resolve(spec['minAvailable'])
    elif spec.get('maxUnavailable') is not None:
        desired = max(0, expected - resolve(spec['maxUnavailable']))
    else:
        desired = expected
    return expected, healthy, desired, max(0, healthy - desired)


def _pod_healthy(pod):
    return (pod.get('status') or {}).get('phase') == 'Running' and \
        not pod['metadata'].get('deletionTimestamp')


def _pods_of(pdb, pods):
    selector = (pdb.get('spec') or {}).get('selector') or {}
    return [p for p in pods
            if objects.match_label_selector(p['metadata'].get('labels'),
                                            selector)]


def pdb_view(pdb, namespace_pods):
    """The budget with the status the disruption controller would write."""
    pdb = copy.deepcopy(pdb)
    expected, healthy, desired, allowed = _budget_numbers(
        pdb, _pods_of(pdb, namespace_pods))
    pdb['status'] = {'currentHealthy': healthy, 'desiredHealthy': desired,
                     'disruptionsAllowed': allowed, 'expectedPods': expected,
                     'observedGeneration': 1}
    return pdb


def check_eviction(pod, budgets, namespace_pods):
    """Raise 429 when evicting ``pod`` would violate one of ``budgets``."""
    if not _pod_healthy(pod):
        return  # evicting an unhealthy pod cannot lower availability
    for pdb in budgets:
        covered = _pods_of(pdb, namespace_pods)
        if not any(p['metadata']['name'] == pod['metadata']['name']
                   for p in covered):
            continue
        _, _, _, allowed = _budget_numbers(pdb, covered)
        if allowed < 1:
            raise objects.APIError(
                429, "Cannot evict pod as it would violate the pod's "
                'disruption budget.', reason='TooManyRequests',
                details={'causes': [{
                    'reason': 'DisruptionBudget',
                    'message': 'The disruption budget %s needs %d healthy '
                               'pods and has %d currently'
                               % (pdb['metadata']['name'],
                                  _budget_numbers(pdb, covered)[2],
                                  _budget_numbers(pdb, covered)[1])}]})
