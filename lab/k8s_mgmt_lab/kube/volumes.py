"""What Kubernetes' PersistentVolume controller and its pv-protection and
pvc-protection controllers do to volumes and claims, as pure functions of
the objects. The API server stand-in runs :func:`sync` after every write
that can change a binding (see ``controllers.sync_volumes``).

Objects are plain dicts keyed ``('pv', name)`` and ``('pvc', namespace,
name)``; :func:`sync` changes them in place and answers which keys it wrote
and which it deleted.
"""

import decimal

PV_PROTECTION = 'kubernetes.io/pv-protection'
PVC_PROTECTION = 'kubernetes.io/pvc-protection'
BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller'
BIND_COMPLETED = 'pv.kubernetes.io/bind-completed'
CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class'
NO_DELETER = ('error getting deleter volume plugin for volume "%s": no '
              'deletable volume plugin matched')
# Sources whose in-tree plugin cannot delete the storage behind a volume.
NOT_DELETABLE = ('nfs', 'local', 'iscsi', 'fc')
SUFFIXES = {'': 1, 'm': decimal.Decimal('0.001'), 'k': 10 ** 3,
            'M': 10 ** 6, 'G': 10 ** 9, 'T': 10 ** 12, 'P': 10 ** 15,
            'E': 10 ** 18, 'Ki': 2 ** 10, 'Mi': 2 ** 20, 'Gi': 2 ** 30,
            'Ti': 2 ** 40, 'Pi': 2 ** 50, 'Ei': 2 ** 60}


def quantity(text):
    """A Kubernetes quantity ('10Gi', '500M', '1e9', 1024) as a Decimal."""
    text = str(text if text is not None else 0).strip()
    for suffix in sorted(SUFFIXES, key=len, reverse=True):
        if suffix and text.endswith(suffix):
            return decimal.Decimal(text[:-len(suffix)]) * SUFFIXES[suffix]
    return decimal.Decimal(text)


def _meta(obj):
    return obj.setdefault('metadata', {})


def _spec(obj):
    return obj.setdefault('spec', {})


def _phase(obj):
    return (obj.get('status') or {}).get('phase')


def _annotations(obj):
    return _meta(obj).get('annotations') or {}


def storage_class(obj):
    """The class of a volume or claim; the beta annotation wins."""
    return _annotations(obj).get(CLASS_ANNOTATION) or \
        _spec(obj).get('storageClassName') or ''


def _request(claim):
    resources = _spec(claim).get('resources') or {}
    return quantity((resources.get('requests') or {}).get('storage', 0))


def _capacity(pv):
    return quantity((_spec(pv).get('capacity') or {}).get('storage', 0))


def unsuitable(pv, claim):
    """Why ``pv`` cannot serve ``claim`` (None when it can): what the
    controller checks for a claim that names its volume."""
    if _meta(pv).get('deletionTimestamp'):
        return 'the volume is marked for deletion'
    if _capacity(pv) < _request(claim):
        return 'requested PV is too small'
    if storage_class(pv) != storage_class(claim):
        return 'storageClassName does not match'
    if (_spec(pv).get('volumeMode') or 'Filesystem') != \
            (_spec(claim).get('volumeMode') or 'Filesystem'):
        return 'incompatible volumeMode'
    if not set(_spec(claim).get('accessModes') or ()) <= \
            set(_spec(pv).get('accessModes') or ()):
        return 'incompatible accessMode'
    return None


def reserved_for(pv, claim):
    """Does the volume's claimRef name this claim (by uid once bound)?"""
    ref = _spec(pv).get('claimRef')
    if not ref or ref.get('name') != _meta(claim).get('name') or \
            ref.get('namespace') != _meta(claim).get('namespace'):
        return False
    return not ref.get('uid') or ref['uid'] == _meta(claim).get('uid')


def best_match(pvs, claim, selector_matches):
    """The volume the controller picks for a claim without volumeName: one
    reserved for it by its claimRef, else the smallest Available, unclaimed
    volume of the claim's class, access modes, size and selector."""
    best = None
    selector = _spec(claim).get('selector')
    for pv in sorted(pvs, key=lambda v: _meta(v).get('name', '')):
        if unsuitable(pv, claim):
            continue
        if reserved_for(pv, claim):
            return pv
        if _phase(pv) != 'Available' or _spec(pv).get('claimRef'):
            continue
        if selector and not selector_matches(
                _meta(pv).get('labels'), selector):
            continue
        if best is None or _capacity(pv) < _capacity(best):
            best = pv
    return best


def bind(pv, claim):
    """Both sides of a binding, as the controller writes them."""
    pv_spec, claim_meta = _spec(pv), _meta(claim)
    if not _same_ref(pv_spec.get('claimRef'), claim):
        if not pv_spec.get('claimRef'):
            _meta(pv).setdefault('annotations', {})[
                BOUND_BY_CONTROLLER] = 'yes'
        pv_spec['claimRef'] = {
            'kind': 'PersistentVolumeClaim', 'apiVersion': 'v1',
            'namespace': claim_meta.get('namespace'),
            'name': claim_meta.get('name'), 'uid': claim_meta.get('uid')}
    pv['status'] = {'phase': 'Bound'}
    annotations = claim_meta.setdefault('annotations', {})
    if not _spec(claim).get('volumeName'):
        annotations[BOUND_BY_CONTROLLER] = 'yes'
        _spec(claim)['volumeName'] = _meta(pv)['name']
    annotations[BIND_COMPLETED] = 'yes'
    claim['status'] = {'phase': 'Bound',
                       'accessModes': list(pv_spec.get('accessModes') or ()),
                       'capacity': dict(pv_spec.get('capacity') or {})}


def _same_ref(ref, claim):
    return bool(ref) and ref.get('uid') == _meta(claim).get('uid') and \
        reserved_for({'spec': {'claimRef': ref}}, claim)


def claims_in_use(pods):
    """{(namespace, claim name)} that a pod not yet finished mounts."""
    used = set()
    for pod in pods:
        if _phase(pod) in ('Succeeded', 'Failed'):
            continue
        for volume in (pod.get('spec') or {}).get('volumes') or ():
            source = volume.get('persistentVolumeClaim') or {}
            if source.get('claimName'):
                used.add((_meta(pod).get('namespace'), source['claimName']))
    return used


class Sync(object):
    """One pass set of the controllers over volumes, claims and pods."""

    def __init__(self, volumes, claims, pods, selector_matches):
        self.volumes, self.claims = volumes, claims
        self.in_use = claims_in_use(pods)
        self.selector_matches = selector_matches
        self.written, self.deleted = set(), set()
        self.changes = 0

    def _claim(self, ref):
        return self.claims.get(('pvc', ref.get('namespace'), ref.get('name')))

    def _mark(self, key):
        self.written.add(key)
        self.changes += 1

    def _drop(self, store, key):
        del store[key]
        self.written.discard(key)
        self.deleted.add(key)
        self.changes += 1

    def run(self, limit=10):
        """Passes until one changes nothing; returns (written, deleted)."""
        for _ in range(limit):
            before = self.changes
            for key in sorted(self.claims):
                if key in self.claims:
                    self.sync_claim(key)
            for key in sorted(self.volumes):
                if key in self.volumes:
                    self.sync_volume(key)
            if self.changes == before:
                break
        return self.written, self.deleted

    def sync_claim(self, key):
        claim = self.claims[key]
        meta = _meta(claim)
        if meta.get('deletionTimestamp') and \
                (key[1], key[2]) not in self.in_use:
            self._unprotect(self.claims, key, PVC_PROTECTION)
            return
        name = _spec(claim).get('volumeName')
        pv = self.volumes.get(('pv', name)) if name else None
        if _phase(claim) == 'Bound':
            if pv is None or (_spec(pv).get('claimRef') and
                              not reserved_for(pv, claim)):
                self._set_phase(self.claims, key, 'Lost')
            elif not _spec(pv).get('claimRef') or _phase(pv) != 'Bound':
                self._bind(pv, claim)
            return
        if _phase(claim) == 'Lost' or meta.get('deletionTimestamp'):
            return
        if name:
            if pv is not None and (reserved_for(pv, claim) or (
                    not _spec(pv).get('claimRef') and
                    _phase(pv) == 'Available' and
                    not unsuitable(pv, claim))):
                self._bind(pv, claim)
            return
        pv = best_match(self.volumes.values(), claim, self.selector_matches)
        if pv is not None:
            self._bind(pv, claim)

    def _bind(self, pv, claim):
        bind(pv, claim)
        self._mark(('pv', _meta(pv)['name']))
        self._mark(('pvc', _meta(claim).get('namespace'),
                    _meta(claim)['name']))

    def sync_volume(self, key):
        pv = self.volumes[key]
        ref = _spec(pv).get('claimRef')
        claim = self._claim(ref) if ref else None
        if ref is None:
            self._set_phase(self.volumes, key, 'Available')
        elif not ref.get('uid'):
            if claim is None or _phase(pv) != 'Bound':
                self._set_phase(self.volumes, key, 'Available')
        elif claim is None or _meta(claim).get('uid') != ref['uid']:
            self._release(key)
        elif _spec(claim).get('volumeName') not in (None, '', key[1]):
            self._unbind(key)  # its claim went to another volume
        if key in self.volumes and _meta(pv).get('deletionTimestamp') and \
                _phase(pv) != 'Bound':
            self._unprotect(self.volumes, key, PV_PROTECTION)

    def _release(self, key):
        pv = self.volumes[key]
        if _phase(pv) not in ('Released', 'Failed'):
            self._set_phase(self.volumes, key, 'Released')
        policy = _spec(pv).get('persistentVolumeReclaimPolicy') or 'Retain'
        if policy != 'Delete' or _phase(pv) == 'Failed':
            return
        if any(source in _spec(pv) for source in NOT_DELETABLE):
            pv['status'] = {'phase': 'Failed',
                            'message': NO_DELETER % key[1]}
            self._mark(key)
        else:
            self._drop(self.volumes, key)

    def _unbind(self, key):
        pv = self.volumes[key]
        if _annotations(pv).get(BOUND_BY_CONTROLLER):
            del _spec(pv)['claimRef']
            del _meta(pv)['annotations'][BOUND_BY_CONTROLLER]
        else:
            _spec(pv)['claimRef'].pop('uid', None)
        pv['status'] = {'phase': 'Available'}
        self._mark(key)

    def _set_phase(self, store, key, phase):
        obj = store[key]
        if _phase(obj) != phase:
            obj['status'] = dict(obj.get('status') or {}, phase=phase)
            obj['status'].pop('message', None)
            self._mark(key)

    def _unprotect(self, store, key, finalizer):
        meta = _meta(store[key])
        finalizers = meta.get('finalizers') or []
        if finalizer in finalizers:
            meta['finalizers'] = [f for f in finalizers if f != finalizer]
            self._mark(key)
        if not meta.get('finalizers'):
            self._drop(store, key)


def sync(volumes, claims, pods, selector_matches):
    """Run the controllers; (written keys, deleted keys)."""
    return Sync(volumes, claims, pods, selector_matches).run()
