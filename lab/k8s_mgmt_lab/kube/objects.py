"""Kubernetes object shapes: the resource table, Status errors, patches and
label/field selectors, as the API server stand-in serves them."""

import collections
import copy
import json
import uuid

from k8s_mgmt_lab import kube

# plural -> (group, version, kind, namespaced): the built-in resources the
# stand-in serves, each at its one group and version (as discovery lists
# them). Custom resources are served once a CustomResourceDefinition
# defines them (``crds``); any other path is 404, as on a real API server.
RESOURCES = {
    'namespaces': ('', 'v1', 'Namespace', False),
    'nodes': ('', 'v1', 'Node', False),
    'pods': ('', 'v1', 'Pod', True),
    'secrets': ('', 'v1', 'Secret', True),
    'configmaps': ('', 'v1', 'ConfigMap', True),
    'serviceaccounts': ('', 'v1', 'ServiceAccount', True),
    'services': ('', 'v1', 'Service', True),
    'persistentvolumes': ('', 'v1', 'PersistentVolume', False),
    'persistentvolumeclaims': ('', 'v1', 'PersistentVolumeClaim', True),
    'events': ('', 'v1', 'Event', True),
    'poddisruptionbudgets': ('policy', 'v1', 'PodDisruptionBudget', True),
    'clusterrolebindings': ('rbac.authorization.k8s.io', 'v1',
                            'ClusterRoleBinding', False),
    'clusterroles': ('rbac.authorization.k8s.io', 'v1', 'ClusterRole', False),
    'rolebindings': ('rbac.authorization.k8s.io', 'v1', 'RoleBinding', True),
    'roles': ('rbac.authorization.k8s.io', 'v1', 'Role', True),
    'deployments': ('apps', 'v1', 'Deployment', True),
    'daemonsets': ('apps', 'v1', 'DaemonSet', True),
    'replicasets': ('apps', 'v1', 'ReplicaSet', True),
    'statefulsets': ('apps', 'v1', 'StatefulSet', True),
    'storageclasses': ('storage.k8s.io', 'v1', 'StorageClass', False),
    'leases': ('coordination.k8s.io', 'v1', 'Lease', True),
    'customresourcedefinitions': ('apiextensions.k8s.io', 'v1',
                                  'CustomResourceDefinition', False),
}
KIND_PLURAL = {v[2]: k for k, v in RESOURCES.items()}

# A resource the API server serves: built in, or defined by ``crd`` (the
# CustomResourceDefinition, None for a built-in) at ``version``.
Resource = collections.namedtuple(
    'Resource', 'group version plural kind namespaced crd')


def builtin(group, version, plural):
    """The built-in Resource at ``group``/``version``/``plural``, or None
    (another group or version of a built-in plural is none either)."""
    entry = RESOURCES.get(plural)
    if entry is None or entry[:2] != (group, version):
        return None
    return Resource(group, version, plural, entry[2], entry[3], None)


def builtin_kind(group_version, kind):
    """The built-in Resource of ``kind`` in ``group_version`` (an
    apiVersion), or None."""
    plural = KIND_PLURAL.get(kind)
    if plural is None:
        return None
    group, _, version = group_version.rpartition('/')
    return builtin(group, version, plural)


def kind_of(plural):
    """The kind of a built-in plural."""
    return RESOURCES[plural][2]


def no_resource():
    """What a real API server answers for a path it serves no resource
    at."""
    return APIError(404, 'the server could not find the requested '
                    'resource', details={})


def api_version(group, version):
    return '%s/%s' % (group, version) if group else version


class APIError(Exception):
    """An error the API server answers with a Kubernetes Status object."""

    REASONS = {400: 'BadRequest', 401: 'Unauthorized', 403: 'Forbidden',
               404: 'NotFound', 405: 'MethodNotAllowed', 409: 'Conflict',
               415: 'UnsupportedMediaType', 422: 'Invalid',
               429: 'TooManyRequests', 500: 'InternalError',
               503: 'ServiceUnavailable'}

    def __init__(self, code, message, reason=None, details=None):
        super().__init__(message)
        self.code, self.message = code, message
        self.reason = reason or self.REASONS.get(code, 'Unknown')
        self.details = details

    def status(self):
        body = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
                'status': 'Failure', 'message': self.message,
                'reason': self.reason, 'code': self.code}
        if self.details:
            body['details'] = self.details
        return body


def not_found(plural, name, group=''):
    return APIError(404, '%s "%s" not found' % (_gr(plural, group), name),
                    details={'name': name, 'group': group, 'kind': plural})


def already_exists(plural, name, group=''):
    return APIError(409, '%s "%s" already exists' % (_gr(plural, group),
                                                     name),
                    reason='AlreadyExists',
                    details={'name': name, 'group': group, 'kind': plural})


def changed(plural, name, group=''):
    return APIError(409, 'Operation cannot be fulfilled on %s "%s": the '
                    'object has been modified; please apply your changes to '
                    'the latest version and try again'
                    % (_gr(plural, group), name),
                    details={'name': name, 'group': group, 'kind': plural})


def _gr(plural, group):
    return '%s.%s' % (plural, group) if group else plural


def success(details=None, code=200):
    body = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {},
            'status': 'Success', 'code': code}
    if details:
        body['details'] = details
    return body


def new_metadata(obj, namespace, rv=None):
    """Fill in what the server owns in a new object's metadata."""
    meta = obj.setdefault('metadata', {})
    if not meta.get('name') and meta.get('generateName'):
        meta['name'] = meta['generateName'] + uuid.uuid4().hex[:5]
    if not meta.get('name'):
        raise APIError(422, 'metadata.name: Required value: name or '
                       'generateName is required')
    if namespace:
        meta['namespace'] = namespace
    meta['uid'] = str(uuid.uuid4())
    meta['creationTimestamp'] = kube.rfc3339()
    meta.pop('resourceVersion', None)
    return obj


def with_version(obj, mod_revision):
    obj = copy.deepcopy(obj)
    obj.setdefault('metadata', {})['resourceVersion'] = str(mod_revision)
    return obj


# -- patches ------------------------------------------------------------------

def merge_patch(target, patch):
    """RFC 7386 merge patch (used for strategic-merge patches too: what the
    driver patches - labels, spec.unschedulable - merges the same way)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith('$'):
            continue  # strategic-merge directives
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target, operations):
    """RFC 6902 add/replace/remove/test on objects and lists."""
    doc = copy.deepcopy(target)
    for op in operations:
        parts = [p.replace('~1', '/').replace('~0', '~')
                 for p in op['path'].split('/')[1:]]
        parent = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) \
                else parent.setdefault(part, {})
        last = parts[-1] if parts else None
        kind = op['op']
        if kind == 'test':
            current = parent[int(last)] if isinstance(parent, list) \
                else parent.get(last)
            if current != op.get('value'):
                raise APIError(422, 'json patch test failed at %s'
                               % op['path'])
        elif kind == 'remove':
            del parent[int(last) if isinstance(parent, list) else last]
        elif kind in ('add', 'replace'):
            if isinstance(parent, list):
                index = len(parent) if last == '-' else int(last)
                if kind == 'add':
                    parent.insert(index, op['value'])
                else:
                    parent[index] = op['value']
            else:
                parent[last] = op['value']
        else:
            raise APIError(422, 'unsupported json patch op %r' % kind)
    return doc


def apply_patch(obj, body, content_type):
    patch = json.loads(body or b'null')
    if 'json-patch' in content_type:
        return json_patch(obj, patch)
    if 'merge-patch' in content_type:  # merge and strategic-merge
        return merge_patch(obj, patch)
    raise APIError(415, 'unsupported patch content type %s' % content_type)


# -- selectors ----------------------------------------------------------------

def _field_value(obj, path):
    value = obj
    for part in path.split('.'):
        value = value.get(part) if isinstance(value, dict) else None
    return '' if value is None else str(value)


def _requirements(selector):
    """Parse ``a=b,c!=d,e,!f,g in (x,y)`` into (key, op, values)."""
    out, depth, token = [], 0, ''
    for char in (selector or '') + ',':
        if char == ',' and depth == 0:
            if token.strip():
                out.append(_requirement(token.strip()))
            token = ''
            continue
        depth += {'(': 1, ')': -1}.get(char, 0)
        token += char
    return out


def _requirement(text):
    for word, op in ((' notin ', 'notin'), (' in ', 'in')):
        if word in text:
            key, values = text.split(word, 1)
            return key.strip(), op, {v.strip() for v in
                                     values.strip(' ()').split(',')}
    for sym, op in (('!=', '!='), ('==', '='), ('=', '=')):
        if sym in text:
            key, value = text.split(sym, 1)
            return key.strip(), op, {value.strip()}
    if text.startswith('!'):
        return text[1:], '!exists', set()
    return text, 'exists', set()


def _matches(values, requirements):
    for key, op, wanted in requirements:
        present = key in values
        value = values.get(key)
        if op == 'exists' and not present:
            return False
        if op == '!exists' and present:
            return False
        if op in ('=', 'in') and (not present or value not in wanted):
            return False
        if op in ('!=', 'notin') and present and value in wanted:
            return False
    return True


def label_selector_matches(obj, selector):
    labels = obj.get('metadata', {}).get('labels') or {}
    return _matches(labels, _requirements(selector))


def field_selector_matches(obj, selector):
    requirements = _requirements(selector)
    values = {key: _field_value(obj, key) for key, _, _ in requirements}
    return _matches(values, requirements)


def match_label_selector(labels, selector):
    """A LabelSelector object (matchLabels/matchExpressions) vs labels."""
    labels = labels or {}
    for key, value in (selector.get('matchLabels') or {}).items():
        if labels.get(key) != value:
            return False
    ops = {'In': 'in', 'NotIn': 'notin', 'Exists': 'exists',
           'DoesNotExist': '!exists'}
    requirements = [(e['key'], ops[e['operator']], set(e.get('values') or ()))
                    for e in selector.get('matchExpressions') or ()]
    return _matches(labels, requirements)
