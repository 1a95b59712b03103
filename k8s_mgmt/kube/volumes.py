"""The instance's PersistentVolumes through the Kubernetes API.

The driver finds its PVs by the instance label (never by name alone), and
decides from what the API reports:

* :func:`usage` says which PVs are in use: Bound to a claim, or their
  claim mounted by a pod that has not ended; each with the claim
  (``namespace/name``) and the pods, so a refusal can name them all;
* :func:`register` creates each PV, or leaves one that already holds the
  same spec, or deletes and creates again one that points elsewhere (an
  NFS source cannot be changed in place) when nothing uses it;
* :func:`delete` deletes and waits until the API no longer lists them
  (a protection finalizer may hold a PV for a moment);
* :func:`wait_available` polls until every PV is Available (or Bound: a
  waiting claim may take it at once).
"""

import dataclasses

from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import polling
from k8s_mgmt import tacker_settings
from k8s_mgmt.kube import client as client_mod
from k8s_mgmt.params import pv_manifests

LOG = logging.getLogger(__name__)

LABEL = pv_manifests.INSTANCE_LABEL
_FIRST_DELAY = 0.3
_MAX_DELAY = 3.0
# Pods in these phases hold no mount any more.
_ENDED = ('Succeeded', 'Failed')


@dataclasses.dataclass(frozen=True)
class PvUse:
    """One PV of the instance and who uses it."""

    name: str
    phase: str
    claim: str = None     # 'namespace/name' of the claim it is bound to
    pods: tuple = ()      # 'namespace/name' of pods mounting that claim

    @property
    def in_use(self):
        return self.phase == 'Bound' or bool(self.pods)

    def describe(self):
        text = 'PersistentVolume %s (%s' % (self.name, self.phase)
        if self.claim:
            text += ', claim %s' % self.claim
        if self.pods:
            text += ', mounted by pod(s) %s' % ', '.join(self.pods)
        elif self.claim:
            text += ', no pod mounts it'
        return text + ')'


class VolumesInUse(exceptions.MgmtDriverError):
    message = ('%(what)s refused: %(count)d PersistentVolume(s) of this '
               'instance are in use: %(details)s. Stop the pods that mount '
               'them and delete their claims, then try again. Deleting a '
               'claim leaves its files on the NFS export; a heal of the '
               'storage server keeps them only when it keeps the volume '
               '(additionalParams %(key)s: false)')

    def __init__(self, **kwargs):
        kwargs.setdefault('key', tacker_settings.heal_block_storage().key)
        super().__init__(**kwargs)


def _meta(obj):
    return obj.get('metadata') or {}


def list_pvs(api, instance_id, deadline=None):
    """The instance's PVs (JSON objects), sorted by name."""
    data = api.call('list PersistentVolumes of %s' % instance_id,
                    api.core.list_persistent_volume,
                    label_selector='%s=%s' % (LABEL, instance_id),
                    deadline=deadline)
    items = [i for i in data.get('items') or ()
             if (_meta(i).get('labels') or {}).get(LABEL) == instance_id]
    return sorted(items, key=lambda i: _meta(i).get('name') or '')


def _claim_of(pv):
    ref = (pv.get('spec') or {}).get('claimRef') or {}
    if ref.get('name') and ref.get('namespace'):
        return ref['namespace'], ref['name']
    return None


def _claims_in_pods(pods):
    """{claim name: [pod names]} of the pods that have not ended."""
    found = {}
    for pod in pods:
        if (pod.get('status') or {}).get('phase') in _ENDED:
            continue
        for volume in (pod.get('spec') or {}).get('volumes') or ():
            claim = (volume or {}).get('persistentVolumeClaim') or {}
            if claim.get('claimName'):
                found.setdefault(claim['claimName'], []).append(
                    _meta(pod).get('name'))
    return found


def usage(api, pvs, deadline=None):
    """PvUse of each PV in ``pvs``: its phase, claim and the pods (read
    from the API: one pod list per namespace that holds a claim)."""
    pods_by_ns = {}
    uses = []
    for pv in pvs:
        phase = (pv.get('status') or {}).get('phase') or 'Unknown'
        claim = _claim_of(pv)
        pods = ()
        if claim is not None:
            namespace, name = claim
            if namespace not in pods_by_ns:
                data = api.call('list pods in namespace %s' % namespace,
                                api.core.list_namespaced_pod, namespace,
                                deadline=deadline)
                pods_by_ns[namespace] = _claims_in_pods(
                    data.get('items') or ())
            pods = tuple('%s/%s' % (namespace, pod) for pod in
                         sorted(pods_by_ns[namespace].get(name, ())))
        uses.append(PvUse(_meta(pv).get('name'), phase,
                          '%s/%s' % claim if claim else None, pods))
    return uses


def refuse_if_used(uses, what):
    """VolumesInUse naming every PV in use with its claim and pods."""
    busy = [u for u in uses if u.in_use]
    if busy:
        raise VolumesInUse(what=what, count=len(busy),
                           details='; '.join(u.describe() for u in busy))


def _same_source(existing, body):
    spec, wanted = existing.get('spec') or {}, body['spec']
    return (spec.get('nfs') == wanted['nfs'] and
            (_meta(existing).get('labels') or {}).get(LABEL) ==
            body['metadata']['labels'][LABEL])


def _get(api, name, deadline):
    try:
        return api.call('read PersistentVolume %s' % name,
                        api.core.read_persistent_volume, name,
                        deadline=deadline)
    except client_mod.APIError as err:
        if client_mod.status_of(err) == 404:
            return None
        raise


def _delete_one(api, name, deadline):
    try:
        api.call('delete PersistentVolume %s' % name,
                 api.core.delete_persistent_volume, name, deadline=deadline)
    except client_mod.APIError as err:
        if client_mod.status_of(err) != 404:
            raise


def delete(api, names, timeout=None, prefix=''):
    """Delete the PVs ``names``; return once the API lists none of them."""
    timeout = timeout or conf.CONF.k8s_mgmt.node_ready_timeout
    poll = polling.Poll(timeout, first=_FIRST_DELAY, maximum=_MAX_DELAY)
    for name in names:
        _delete_one(api, name, poll.deadline)
    left = list(names)
    for _ in poll:
        left = [n for n in left if _get(api, n, poll.deadline) is not None]
        if not left:
            return
        LOG.info('%s waiting for %d PersistentVolume(s) to go: %s', prefix,
                 len(left), ', '.join(left))
    raise client_mod.APIError(
        endpoint=api.endpoint, what='delete PersistentVolumes',
        reason='still listed after %.0f s: %s (a finalizer holds them: is '
               'a claim still bound?)' % (timeout, ', '.join(left)))


def register(api, bodies, prefix=''):
    """Create each PV of ``bodies``; return {name: 'created' | 'kept' |
    'replaced'}. A PV of that name in use by a claim is not touched and
    is an error unless it already holds the same NFS source."""
    done = {}
    for body in bodies:
        name = body['metadata']['name']
        existing = _get(api, name, None)
        if existing is not None and _same_source(existing, body):
            done[name] = 'kept'
            continue
        if existing is not None:
            use = usage(api, [existing])[0]
            if use.in_use:
                raise VolumesInUse(what='registering %s' % name, count=1,
                                   details=use.describe())
            delete(api, [name], prefix=prefix)
        api.call('create PersistentVolume %s' % name,
                 api.core.create_persistent_volume, body)
        done[name] = 'replaced' if existing is not None else 'created'
        LOG.info('%s PersistentVolume %s %s: nfs %s:%s', prefix, name,
                 done[name], body['spec']['nfs']['server'],
                 body['spec']['nfs']['path'])
    return done


def wait_available(api, names, timeout=None, prefix=''):
    """Poll until every PV of ``names`` is Available (or Bound); return
    {name: phase}."""
    timeout = timeout or conf.CONF.k8s_mgmt.node_ready_timeout
    poll = polling.Poll(timeout, first=_FIRST_DELAY, maximum=_MAX_DELAY)
    phases, reported = {}, None
    for _ in poll:
        for name in names:
            pv = _get(api, name, poll.deadline)
            phases[name] = ((pv.get('status') or {}).get('phase')
                            if pv is not None else 'missing')
        waiting = sorted(n for n, p in phases.items()
                         if p not in ('Available', 'Bound'))
        if not waiting:
            return dict(phases)
        if waiting != reported:
            LOG.info('%s waiting for PersistentVolume(s) to be Available: '
                     '%s', prefix, ', '.join('%s (%s)' % (n, phases[n])
                                             for n in waiting))
            reported = waiting
    raise client_mod.APIError(
        endpoint=api.endpoint, what='wait for PersistentVolumes',
        reason='not Available after %.0f s: %s' % (timeout, ', '.join(
            '%s (%s)' % (n, phases[n]) for n in waiting)))
