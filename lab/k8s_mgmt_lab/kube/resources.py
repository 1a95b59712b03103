"""CRUD of Kubernetes objects on the etcd store, with the views and side
effects the controllers would add (see ``controllers``)."""

import copy

from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import controllers
from k8s_mgmt_lab.kube import objects
from k8s_mgmt_lab.kube import store as store_mod
from k8s_mgmt_lab.kube import volumes

# Writes to these (core group) can change what volumes are bound or in use.
VOLUME_PLURALS = ('persistentvolumes', 'persistentvolumeclaims', 'pods',
                  'namespaces')
# Kinds whose status only the controllers (or a /status write) change.
STATUS_BY_CONTROLLER = ('persistentvolumes', 'persistentvolumeclaims')


class Resources(object):
    """Object operations for one API server stand-in."""

    def __init__(self, store, ca_pem, node_grace):
        self.store = store
        self.ca_pem = ca_pem
        self.node_grace = node_grace

    # -- helpers --------------------------------------------------------------

    def _key(self, group, plural, namespace, name):
        return store_mod.object_key(group, plural, namespace, name)

    def _view(self, group, plural, obj):
        if plural == 'nodes' and not group:
            return controllers.node_view(obj, self.node_grace)
        if plural == 'poddisruptionbudgets':
            namespace = obj['metadata'].get('namespace')
            return controllers.pdb_view(obj, self._raw_list(
                '', 'pods', namespace))
        return obj

    def _stamp(self, group, version, plural, obj, revision):
        obj = objects.with_version(obj, revision)
        obj.setdefault('apiVersion', objects.api_version(group, version))
        obj.setdefault('kind', objects.kind_of(plural))
        return self._view(group, plural, obj)

    def _raw_list(self, group, plural, namespace):
        items, _ = self.store.list(store_mod.collection_prefix(
            group, plural, namespace))
        return [value for _, value, _ in items]

    def _load(self, group, plural, namespace, name):
        obj, revision = self.store.get(self._key(group, plural, namespace,
                                                 name))
        if obj is None:
            raise objects.not_found(plural, name, group)
        return obj, revision

    def _after_write(self, group, plural):
        if not group and plural in VOLUME_PLURALS:
            controllers.sync_volumes(self.store)

    def _require_namespace(self, namespace):
        if namespace and self.store.get(self._key(
                '', 'namespaces', None, namespace))[0] is None:
            raise objects.not_found('namespaces', namespace)

    # -- operations ---------------------------------------------------------

    def list(self, group, version, plural, namespace, query):
        prefix = store_mod.collection_prefix(group, plural, namespace)
        items, revision = self.store.list(prefix)
        labels = query.get('labelSelector')
        fields = query.get('fieldSelector')
        out = []
        for _key, value, mod in items:
            obj = self._stamp(group, version, plural, value, mod)
            if labels and not objects.label_selector_matches(obj, labels):
                continue
            if fields and not objects.field_selector_matches(obj, fields):
                continue
            out.append(obj)
        return {'kind': objects.kind_of(plural) + 'List',
                'apiVersion': objects.api_version(group, version),
                'metadata': {'resourceVersion': str(revision)},
                'items': out}

    def get(self, group, version, plural, namespace, name):
        obj, revision = self._load(group, plural, namespace, name)
        return self._stamp(group, version, plural, obj, revision)

    def create(self, group, version, plural, namespace, obj):
        if not isinstance(obj, dict):
            raise objects.APIError(400, 'the request body is not an object')
        self._require_namespace(namespace)
        obj = objects.new_metadata(copy.deepcopy(obj), namespace)
        obj['apiVersion'] = objects.api_version(group, version)
        obj['kind'] = objects.kind_of(plural)
        obj = self._on_create(group, plural, obj)
        name = obj['metadata']['name']
        try:
            revision = self.store.create(
                self._key(group, plural, namespace, name), obj)
        except store_mod.Conflict:
            raise objects.already_exists(plural, name, group)
        self._after_write(group, plural)
        return self._stamp(group, version, plural, obj, revision)

    def _on_create(self, group, plural, obj):
        if plural == 'secrets' and not group:
            return controllers.fill_service_account_token(obj, self.store,
                                                          self.ca_pem)
        if plural == 'pods' and not group:
            status = obj.setdefault('status', {})
            bound = bool((obj.get('spec') or {}).get('nodeName'))
            status.setdefault('phase', 'Running' if bound else 'Pending')
            status.setdefault('conditions', [{
                'type': 'Ready', 'status': 'True' if bound else 'False',
                'lastTransitionTime': kube.rfc3339()}])
        if plural == 'namespaces' and not group:
            obj.setdefault('status', {'phase': 'Active'})
        if plural in STATUS_BY_CONTROLLER and not group:
            # The StorageObjectInUseProtection admission plugin's finalizer;
            # a new claim waits for the controller, a volume is free until
            # it binds.
            volume = plural == 'persistentvolumes'
            obj['status'] = {'phase': 'Available' if volume else 'Pending'}
            finalizers = obj['metadata'].setdefault('finalizers', [])
            protection = volumes.PV_PROTECTION if volume else \
                volumes.PVC_PROTECTION
            if protection not in finalizers:
                finalizers.append(protection)
        return obj

    def replace(self, group, version, plural, namespace, name, obj,
                sub=None):
        current, revision = self._load(group, plural, namespace, name)
        wanted = obj.get('metadata', {}).get('resourceVersion')
        if wanted and str(wanted) != str(revision):
            raise objects.changed(plural, name, group)
        return self._write(group, version, plural, namespace, name,
                           current, obj, revision, sub)

    def patch(self, group, version, plural, namespace, name, body,
              content_type, sub=None):
        for _attempt in range(5):  # retry only on a concurrent write
            current, revision = self._load(group, plural, namespace, name)
            patched = objects.apply_patch(current, body, content_type)
            try:
                return self._write(group, version, plural, namespace, name,
                                   current, patched, revision, sub)
            except objects.APIError as err:
                if err.code != 409:
                    raise
        raise objects.changed(plural, name, group)

    def _write(self, group, version, plural, namespace, name, current, obj,
               revision, sub=None):
        obj = copy.deepcopy(obj)
        if not group and plural in STATUS_BY_CONTROLLER:
            # The status subresource: a write there changes only status,
            # a write of the object never does.
            if sub == 'status':
                obj = dict(copy.deepcopy(current), status=obj.get('status'))
            else:
                obj['status'] = copy.deepcopy(current.get('status'))
        meta = obj.setdefault('metadata', {})
        for field in ('uid', 'creationTimestamp', 'name', 'namespace',
                      'deletionTimestamp'):
            if field in current.get('metadata', {}):
                meta[field] = current['metadata'][field]
        meta.pop('resourceVersion', None)
        obj['apiVersion'] = objects.api_version(group, version)
        obj['kind'] = objects.kind_of(plural)
        key = self._key(group, plural, namespace, name)
        try:
            if meta.get('deletionTimestamp') and not meta.get('finalizers'):
                # The last finalizer went: the deletion completes.
                new_revision = self.store.transaction({}, [key],
                                                      {key: revision})
            else:
                new_revision = self.store.update(key, obj, revision)
        except store_mod.Conflict:
            raise objects.changed(plural, name, group)
        self._after_write(group, plural)
        return self._stamp(group, version, plural, obj, new_revision)

    def delete(self, group, version, plural, namespace, name):
        obj, revision = self._load(group, plural, namespace, name)
        meta = obj.setdefault('metadata', {})
        if meta.get('finalizers'):
            # Kept, marked, until the controllers remove their finalizers.
            if not meta.get('deletionTimestamp'):
                meta['deletionTimestamp'] = kube.rfc3339()
                meta['deletionGracePeriodSeconds'] = 0
                try:
                    revision = self.store.update(self._key(
                        group, plural, namespace, name), obj, revision)
                except store_mod.Conflict:
                    raise objects.changed(plural, name, group)
            self._after_write(group, plural)
            now, now_revision = self.store.get(self._key(
                group, plural, namespace, name))
            if now is not None:  # still held by a finalizer
                obj, revision = now, now_revision
            return self._stamp(group, version, plural, obj, revision)
        self.store.delete(self._key(group, plural, namespace, name))
        if plural == 'namespaces' and not group:
            self._delete_namespace_contents(name)
        self._after_write(group, plural)
        obj = objects.with_version(obj, revision)
        obj['metadata']['deletionTimestamp'] = kube.rfc3339()
        return obj

    def _delete_namespace_contents(self, namespace):
        items, _ = self.store.list(store_mod.REGISTRY)
        for key, value, _ in items:
            if (value.get('metadata') or {}).get('namespace') == namespace:
                self.store.delete(key)

    def evict(self, namespace, name, eviction):
        pod, _ = self._load('', 'pods', namespace, name)
        budgets = self._raw_list('policy', 'poddisruptionbudgets', namespace)
        if budgets:
            controllers.check_eviction(pod, budgets,
                                       self._raw_list('', 'pods', namespace))
        self.store.delete(self._key('', 'pods', namespace, name))
        self._after_write('', 'pods')
        return objects.success(code=201)
