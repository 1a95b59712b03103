"""CustomResourceDefinitions in the API server stand-in: what a real API
server checks of a definition, and the resource it then serves; its
objects are checked against the definition's schema by
:mod:`.crd_objects`.

What is modelled, as apiextensions-apiserver does it:

* a definition's names (``metadata.name`` is ``<plural>.<group>``), scope,
  versions (exactly one the storage version), a schema for every version
  and structural (every field typed), the approval annotation of a
  ``*.k8s.io`` group; its ``status`` (names accepted, established, stored
  versions) set at once, as the controllers set it within a second;
* its objects at ``/apis/<group>/<version>/[namespaces/<ns>/]<plural>``
  for every served version (conversion ``None``: only ``apiVersion``
  differs), in discovery, deleted with their definition;
* an object's fields pruned to the schema, null values of non-nullable
  fields dropped, defaults filled in, then checked: types, required
  fields, enums, lengths, bounds, item and property counts, patterns and
  list types; the ``status`` subresource.

What is not, refused loudly (HTTP 500 naming the construct) rather than
stored unchecked: conversion webhooks, and the schema constructs a
checked object reaches that the stand-in cannot evaluate (``anyOf``,
``allOf``, ``oneOf``, ``not``, ``format``, CEL rules in
``x-kubernetes-validations``, embedded resources, a pattern Python's
``re`` cannot compile). Nothing runs a definition's controllers: the
objects are stored, as every object of the stand-in is.
"""

import copy
import re

from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import objects

GROUP = 'apiextensions.k8s.io'
PLURAL = 'customresourcedefinitions'
APPROVAL = 'api-approved.kubernetes.io'
STATUS_SUBRESOURCE = 'status'

_DNS_LABEL = re.compile(r'[a-z0-9]([-a-z0-9]*[a-z0-9])?')
DNS_SUBDOMAIN = re.compile(
    r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
_VERSION = re.compile(r'v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?')

TYPES = ('object', 'array', 'string', 'integer', 'number', 'boolean')
# Schema keywords that only describe (or only steer server-side apply's
# merge), checked by nothing.
DESCRIBING = frozenset(('description', 'title', 'example', 'externalDocs',
                        'x-kubernetes-map-type'))


class NotModelled(objects.APIError):
    """Something a real API server does that the stand-in does not: the
    request is refused, saying what, rather than answered wrongly."""

    def __init__(self, what):
        super().__init__(500, 'the lab\'s API server stand-in does not '
                         'model %s: refused, not stored unchecked' % what,
                         reason='InternalError')


def definition_name(plural, group):
    return '%s.%s' % (plural, group)


# -- versions -----------------------------------------------------------------

def version_priority(name):
    """A sort key putting Kubernetes versions first as discovery orders
    them: GA over beta over alpha, higher numbers first; other names
    after, alphabetically."""
    found = _VERSION.fullmatch(name)
    if not found:
        return (1, 0, 0, 0, name)
    major, level, minor = found.groups()
    rank = {None: 0, 'beta': 1, 'alpha': 2}[level]
    return (0, rank, -int(major), -int(minor or 0), name)


def served_versions(crd):
    """The names of the versions ``crd`` serves, preferred first."""
    return sorted((v['name'] for v in crd['spec']['versions']
                   if v.get('served')), key=version_priority)


def version_of(crd, name):
    for entry in crd['spec']['versions']:
        if entry.get('name') == name:
            return entry
    return None


def resource(crd, version):
    """The Resource ``crd`` defines at ``version``, or None when it serves
    no such version."""
    entry = version_of(crd, version)
    if entry is None or not entry.get('served'):
        return None
    spec = crd['spec']
    return objects.Resource(spec['group'], version, spec['names']['plural'],
                            spec['names']['kind'],
                            spec['scope'] == 'Namespaced', crd)


def has_status(info):
    """Whether the custom resource ``info`` has the status subresource."""
    entry = version_of(info.crd, info.version) or {}
    return STATUS_SUBRESOURCE in (entry.get('subresources') or {})


def discovery(crd, version):
    """The APIResource entries (the resource and its subresources) ``crd``
    adds to ``/apis/<group>/<version>``; [] when it serves no such
    version."""
    info = resource(crd, version)
    if info is None:
        return []
    names = crd['spec']['names']
    entry = {'name': info.plural, 'singularName': names['singular'],
             'namespaced': info.namespaced, 'kind': info.kind,
             'verbs': ['delete', 'deletecollection', 'get', 'list', 'patch',
                       'create', 'update', 'watch'],
             'storageVersionHash': ''}
    for key in ('shortNames', 'categories'):
        if names.get(key):
            entry[key] = list(names[key])
    out = [entry]
    if has_status(info):
        out.append({'name': info.plural + '/status', 'singularName': '',
                    'namespaced': info.namespaced, 'kind': info.kind,
                    'verbs': ['get', 'patch', 'update']})
    return out


# -- the definition -----------------------------------------------------------

def invalid(kind, name, causes):
    """422 as a real API server words it."""
    texts = ['%s: %s' % cause for cause in causes]
    message = '%s "%s" is invalid: %s' % (
        kind, name, texts[0] if len(texts) == 1 else
        '[%s]' % ', '.join(texts))
    return objects.APIError(422, message, reason='Invalid', details={
        'name': name, 'kind': kind.split('.', 1)[0],
        'group': kind.split('.', 1)[1] if '.' in kind else '',
        'causes': [{'field': field, 'message': text}
                   for field, text in causes]})


def _protected(group):
    return group in ('k8s.io', 'kubernetes.io') or \
        group.endswith(('.k8s.io', '.kubernetes.io'))


def _structural(schema, path, causes):
    """The places where ``schema`` is not structural, as causes (a real
    API server refuses such a definition in apiextensions.k8s.io/v1)."""
    if not isinstance(schema, dict):
        causes.append((path, 'Invalid value: must be an object'))
        return
    typed = schema.get('type')
    if typed is None:
        if not (schema.get('x-kubernetes-int-or-string') or
                schema.get('x-kubernetes-preserve-unknown-fields')):
            causes.append((path + '.type', 'Required value: must not be '
                           'empty for specified object fields'))
    elif typed not in TYPES:
        causes.append((path + '.type', 'Unsupported value: "%s"' % typed))
    for name, sub in (schema.get('properties') or {}).items():
        _structural(sub, '%s.properties[%s]' % (path, name), causes)
    for key in ('items', 'additionalProperties'):
        if isinstance(schema.get(key), dict):
            _structural(schema[key], '%s.%s' % (path, key), causes)
    if schema.get('properties') and isinstance(
            schema.get('additionalProperties'), dict):
        causes.append((path + '.additionalProperties', 'Forbidden: '
                       'additionalProperties and properties are mutual '
                       'exclusive'))


def prepare(crd, current=None):
    """``crd`` checked as a real API server checks a
    CustomResourceDefinition (422 naming every problem), with the defaults
    it fills in and the status its controllers give it (``current``: the
    stored definition, on an update)."""
    crd = copy.deepcopy(crd)
    meta = crd.get('metadata') or {}
    name = meta.get('name', '')
    spec = crd.get('spec')
    causes = []
    if not isinstance(spec, dict):
        raise invalid('CustomResourceDefinition.' + GROUP, name,
                      [('spec', 'Required value')])
    group = spec.get('group') or ''
    names = spec.get('names') if isinstance(spec.get('names'), dict) \
        else {}
    plural, kind = names.get('plural') or '', names.get('kind') or ''
    if not group:
        causes.append(('spec.group', 'Required value'))
    elif '.' not in group or not DNS_SUBDOMAIN.fullmatch(group):
        causes.append(('spec.group', 'Invalid value: "%s": should be a '
                       'domain with at least one dot' % group))
    if not plural:
        causes.append(('spec.names.plural', 'Required value'))
    elif not _DNS_LABEL.fullmatch(plural):
        causes.append(('spec.names.plural', 'Invalid value: "%s": a '
                       'lowercase RFC 1123 label' % plural))
    if not kind:
        causes.append(('spec.names.kind', 'Required value'))
    if group and plural and name != definition_name(plural, group):
        causes.append(('metadata.name', 'Invalid value: "%s": must be '
                       'spec.names.plural+"."+spec.group' % name))
    if spec.get('scope') not in ('Namespaced', 'Cluster'):
        causes.append(('spec.scope', 'Unsupported value: "%s": supported '
                       'values: "Cluster", "Namespaced"'
                       % spec.get('scope')))
    if spec.get('preserveUnknownFields'):
        causes.append(('spec.preserveUnknownFields', 'Invalid value: true: '
                       'must be false'))
    versions = spec.get('versions')
    if not isinstance(versions, list) or not versions:
        causes.append(('spec.versions', 'Invalid value: must have exactly '
                       'one version marked as storage version'))
        versions = []
    seen = set()
    for index, entry in enumerate(versions):
        where = 'spec.versions[%d]' % index
        if not isinstance(entry, dict) or not entry.get('name'):
            causes.append((where + '.name', 'Required value'))
            continue
        if entry['name'] in seen:
            causes.append((where + '.name', 'Duplicate value: "%s"'
                           % entry['name']))
        seen.add(entry['name'])
        schema = (entry.get('schema') or {}).get('openAPIV3Schema')
        if schema is None:
            causes.append((where + '.schema.openAPIV3Schema',
                           'Required value: schemas are required'))
            continue
        if isinstance(schema, dict) and schema.get('type') != 'object':
            causes.append((where + '.schema.openAPIV3Schema.type',
                           'Unsupported value: "%s": supported values: '
                           '"object"' % schema.get('type')))
        _structural(schema, where + '.schema.openAPIV3Schema', causes)
    storage = [v['name'] for v in versions
               if isinstance(v, dict) and v.get('storage')]
    if versions and len(storage) != 1:
        causes.append(('spec.versions', 'Invalid value: must have exactly '
                       'one version marked as storage version'))
    if group and _protected(group):
        approval = (meta.get('annotations') or {}).get(APPROVAL, '')
        if not (approval.startswith(('http://', 'https://',
                                     'unapproved'))):
            causes.append(('metadata.annotations[%s]' % APPROVAL,
                           'Required value: protected groups must have '
                           'approval annotation "%s", see '
                           'https://github.com/kubernetes/enhancements/'
                           'pull/1111' % APPROVAL))
    if current is not None and spec.get('scope') != \
            current['spec'].get('scope'):
        causes.append(('spec.scope', 'Invalid value: "%s": field is '
                       'immutable' % spec.get('scope')))
    if causes:
        raise invalid('CustomResourceDefinition.' + GROUP, name, causes)
    conversion = spec.setdefault('conversion', {'strategy': 'None'})
    if conversion.get('strategy', 'None') != 'None':
        raise NotModelled('the %s conversion of CustomResourceDefinition %s'
                          % (conversion.get('strategy'), name))
    names.setdefault('singular', kind.lower())
    names.setdefault('listKind', kind + 'List')
    stored = list(((current or {}).get('status') or {}).get(
        'storedVersions') or [])
    if storage[0] not in stored:
        stored.append(storage[0])
    # Conditions that hold already keep their transition time.
    conditions = ((current or {}).get('status') or {}).get('conditions')
    if not conditions:
        now = kube.rfc3339()
        conditions = [
            {'type': 'NamesAccepted', 'status': 'True',
             'reason': 'NoConflicts', 'message': 'no conflicts found',
             'lastTransitionTime': now},
            {'type': 'Established', 'status': 'True',
             'reason': 'InitialNamesAccepted',
             'message': 'the initial names have been accepted',
             'lastTransitionTime': now}]
    crd['status'] = {'acceptedNames': copy.deepcopy(names),
                     'conditions': copy.deepcopy(conditions),
                     'storedVersions': stored}
    return crd
