"""CRUD of Kubernetes objects on the etcd store, with the views and side
effects the controllers would add (see ``controllers``)."""

import copy

from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import controllers
from k8s_mgmt_lab.kube import crd_objects
from k8s_mgmt_lab.kube import crds
from k8s_mgmt_lab.kube import objects
from k8s_mgmt_lab.kube import store as store_mod
from k8s_mgmt_lab.kube import volumes

# Writes to these (core group) can change what volumes are bound or in use.
VOLUME_PLURALS = ('persistentvolumes', 'persistentvolumeclaims', 'pods',
                  'namespaces')
# Kinds whose status only the controllers (or a /status write) change.
STATUS_BY_CONTROLLER = ('persistentvolumes', 'persistentvolumeclaims')
# What an object's annotations may hold in all (keys and values), as the
# real API server checks it.
ANNOTATIONS_LIMIT = 256 * 1024


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

    def _stamp(self, info, obj, revision):
        obj = objects.with_version(obj, revision)
        if info.crd is not None:
            # Conversion "None": another served version differs only in
            # its apiVersion.
            obj['apiVersion'] = objects.api_version(info.group, info.version)
        obj.setdefault('apiVersion', objects.api_version(info.group,
                                                         info.version))
        obj.setdefault('kind', info.kind)
        return self._view(info.group, info.plural, obj)

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

    def resolve(self, group, version, plural):
        """The Resource served at ``group``/``version``/``plural``: built
        in, or defined by a CustomResourceDefinition; else the 404 of a
        real API server."""
        found = objects.builtin(group, version, plural)
        if found is not None:
            return found
        if group:
            crd, _ = self.store.get(self._key(
                crds.GROUP, crds.PLURAL, None,
                crds.definition_name(plural, group)))
            found = crd and crds.resource(crd, version)
            if found:
                return found
        raise objects.no_resource()

    def definitions(self):
        """Every CustomResourceDefinition (for discovery)."""
        return self._raw_list(crds.GROUP, crds.PLURAL, None)

    def _admit(self, info, obj, current=None):
        """``obj`` as stored: a definition checked and given its status,
        a custom object pruned and checked against its schema; its
        annotations within the limit."""
        if info.crd is not None:
            obj = crd_objects.admit(info, obj)
        elif info.plural == crds.PLURAL and info.group == crds.GROUP:
            obj = crds.prepare(obj, current)
        annotations = (obj.get('metadata') or {}).get('annotations') or {}
        size = sum(len(k) + len(v if isinstance(v, str) else str(v))
                   for k, v in annotations.items())
        if size > ANNOTATIONS_LIMIT:
            raise objects.APIError(
                422, '%s "%s" is invalid: metadata.annotations: Too long: '
                'must have at most %d bytes' % (
                    _group_kind(info), obj['metadata'].get('name'),
                    ANNOTATIONS_LIMIT), reason='Invalid')
        return obj

    def _require_namespace(self, namespace):
        if namespace and self.store.get(self._key(
                '', 'namespaces', None, namespace))[0] is None:
            raise objects.not_found('namespaces', namespace)

    # -- operations ---------------------------------------------------------

    def list(self, group, version, plural, namespace, query):
        info = self.resolve(group, version, plural)
        prefix = store_mod.collection_prefix(group, plural, namespace)
        items, revision = self.store.list(prefix)
        labels = query.get('labelSelector')
        fields = query.get('fieldSelector')
        out = []
        for _key, value, mod in items:
            obj = self._stamp(info, value, mod)
            if labels and not objects.label_selector_matches(obj, labels):
                continue
            if fields and not objects.field_selector_matches(obj, fields):
                continue
            out.append(obj)
        list_kind = info.crd['spec']['names']['listKind'] if info.crd \
            else info.kind + 'List'
        return {'kind': list_kind,
                'apiVersion': objects.api_version(group, version),
                'metadata': {'resourceVersion': str(revision)},
                'items': out}

    def get(self, group, version, plural, namespace, name):
        info = self.resolve(group, version, plural)
        obj, revision = self._load(group, plural, namespace, name)
        return self._stamp(info, obj, revision)

    def create(self, group, version, plural, namespace, obj):
        info = self.resolve(group, version, plural)
        if not isinstance(obj, dict):
            raise objects.APIError(400, 'the request body is not an object')
        _check_type(info, obj)
        self._require_namespace(namespace)
        obj = objects.new_metadata(copy.deepcopy(obj), namespace)
        obj['apiVersion'] = objects.api_version(group, version)
        obj['kind'] = info.kind
        if info.crd is not None and crds.has_status(info):
            obj.pop('status', None)    # the status subresource's alone
        obj = self._admit(info, obj)
        obj = self._on_create(group, plural, obj)
        name = obj['metadata']['name']
        try:
            revision = self.store.create(
                self._key(group, plural, namespace, name), obj)
        except store_mod.Conflict:
            raise objects.already_exists(plural, name, group)
        self._after_write(group, plural)
        return self._stamp(info, obj, revision)

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
        info = self.resolve(group, version, plural)
        if not isinstance(obj, dict):
            raise objects.APIError(400, 'the request body is not an object')
        _check_type(info, obj)
        current, revision = self._load(group, plural, namespace, name)
        wanted = obj.get('metadata', {}).get('resourceVersion')
        if wanted and str(wanted) != str(revision):
            raise objects.changed(plural, name, group)
        return self._write(group, version, plural, namespace, name,
                           current, obj, revision, sub)

    def patch(self, group, version, plural, namespace, name, body,
              content_type, sub=None):
        info = self.resolve(group, version, plural)
        for _attempt in range(5):  # retry only on a concurrent write
            current, revision = self._load(group, plural, namespace, name)
            # Patched as the version asked for.
            current = dict(current, kind=info.kind,
                           apiVersion=objects.api_version(group, version))
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
        info = self.resolve(group, version, plural)
        obj = copy.deepcopy(obj)
        custom_status = info.crd is not None and crds.has_status(info)
        if info.crd is not None and sub is not None and not custom_status:
            raise objects.no_resource()
        if custom_status or not group and plural in STATUS_BY_CONTROLLER:
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
        obj['kind'] = info.kind
        if obj.get('status') is None and custom_status:
            obj.pop('status', None)
        obj = self._admit(info, obj, current)
        if _same(obj, current):
            # As a real API server: a write that changes nothing is not
            # written (the resourceVersion stays).
            return self._stamp(info, current, revision)
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
        return self._stamp(info, obj, new_revision)

    def delete(self, group, version, plural, namespace, name):
        info = self.resolve(group, version, plural)
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
            return self._stamp(info, obj, revision)
        self.store.delete(self._key(group, plural, namespace, name))
        if plural == 'namespaces' and not group:
            self._delete_namespace_contents(name)
        if plural == crds.PLURAL and group == crds.GROUP:
            # Its objects go with it (the real API server's cleanup
            # finalizer, done at once).
            spec = obj['spec']
            items, _ = self.store.list(store_mod.collection_prefix(
                spec['group'], spec['names']['plural']))
            for key, _, _ in items:
                self.store.delete(key)
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


def _same(obj, current):
    """Whether ``obj`` stores as ``current`` is stored (a custom object's
    apiVersion aside: any served version stores alike)."""
    return dict(obj, apiVersion=None) == dict(current, apiVersion=None)


def _group_kind(info):
    return '%s.%s' % (info.kind, info.group) if info.group else info.kind


def _check_type(info, obj):
    """400 for a body that names another kind or apiVersion than the
    resource it is sent to (a built-in's body may leave either out)."""
    expected = objects.api_version(info.group, info.version)
    if info.crd is None:
        # A built-in's decoder takes what the body leaves out from the
        # path.
        obj = dict({'kind': info.kind, 'apiVersion': expected}, **{
            k: v for k, v in obj.items() if k in ('kind', 'apiVersion')})
    if obj.get('kind') != info.kind or obj.get('apiVersion') != expected:
        raise objects.APIError(
            400, 'the object is a %s of %s, not a %s of %s, as %s are' % (
                obj.get('kind') or '<no kind>',
                obj.get('apiVersion') or '<no apiVersion>', info.kind,
                expected, info.plural))
