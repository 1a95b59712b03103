"""Custom objects as the API server stand-in admits them: pruned to their
CustomResourceDefinition's schema, null values of non-nullable fields
dropped, defaults filled in, then checked (types, required fields, enums,
lengths, bounds, item and property counts, patterns and list types). A
schema construct the stand-in cannot evaluate is refused loudly
(:class:`.crds.NotModelled`), never stored unchecked."""

import copy
import json
import re

from k8s_mgmt_lab.kube import crds
from k8s_mgmt_lab.kube import objects

# Keywords the stand-in evaluates on an object.
EVALUATED = frozenset((
    'type', 'properties', 'additionalProperties', 'items', 'required',
    'enum', 'nullable', 'default', 'x-kubernetes-preserve-unknown-fields',
    'x-kubernetes-int-or-string', 'x-kubernetes-list-type',
    'x-kubernetes-list-map-keys', 'maxLength', 'minLength', 'maximum',
    'minimum', 'exclusiveMaximum', 'exclusiveMinimum', 'maxItems',
    'minItems', 'maxProperties', 'minProperties', 'pattern'))


def _type_name(value):
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'boolean'
    if isinstance(value, int):
        return 'integer'
    if isinstance(value, float):
        return 'number'
    if isinstance(value, str):
        return 'string'
    if isinstance(value, list):
        return 'array'
    return 'object'


def _is(value, typed):
    if typed == 'number':
        return _type_name(value) in ('integer', 'number')
    return _type_name(value) == typed


class _Checker(object):
    """One object against one schema: pruned and defaulted in place,
    problems gathered as causes."""

    def __init__(self, what):
        self.what = what          # for NotModelled: which definition
        self.causes = []

    def _bad(self, path, text):
        self.causes.append((path, text))

    def _unmodelled(self, schema, path):
        for key in schema:
            if key not in EVALUATED and key not in crds.DESCRIBING:
                raise crds.NotModelled('"%s" of the schema of %s (at %s)'
                                       % (key, self.what, path or '<root>'))

    def prune(self, value, schema, path):
        """``value`` pruned to ``schema`` and defaulted (null values of
        non-nullable fields dropped); returns the value."""
        if not isinstance(schema, dict):
            return value
        if isinstance(value, dict) and \
                not schema.get('x-kubernetes-int-or-string'):
            props = schema.get('properties') or {}
            extra = schema.get('additionalProperties')
            keep = schema.get('x-kubernetes-preserve-unknown-fields') or \
                extra is True or (extra is None and not props and
                                  schema.get('type') != 'object')
            out = {}
            for key, item in value.items():
                sub = props.get(key, extra if isinstance(extra, dict)
                                else None)
                if sub is None and not keep:
                    continue              # pruned, silently, as upstream
                if item is None and not (sub or {}).get('nullable'):
                    continue
                out[key] = self.prune(item, sub, _join(path, key))
            for key, sub in props.items():
                if key not in out and isinstance(sub, dict) and \
                        'default' in sub:
                    out[key] = self.prune(copy.deepcopy(sub['default']), sub,
                                          _join(path, key))
            return out
        if isinstance(value, list) and isinstance(schema.get('items'), dict):
            return [self.prune(item, schema['items'], '%s[%d]' % (path, i))
                    for i, item in enumerate(value)]
        return value

    def check(self, value, schema, path):
        if not isinstance(schema, dict):
            return
        self._unmodelled(schema, path)
        typed = schema.get('type')
        if schema.get('x-kubernetes-int-or-string'):
            if _type_name(value) not in ('integer', 'string'):
                self._bad(path, 'Invalid value: "%s": %s in body must be of '
                          'type integer,string: "%s"'
                          % (_type_name(value), path, _type_name(value)))
                return
        elif value is None:
            if not schema.get('nullable'):
                self._bad(path, 'Invalid value: "null": %s in body must be '
                          'of type %s: "null"' % (path, typed))
            return
        elif typed and not _is(value, typed):
            self._bad(path, 'Invalid value: "%s": %s in body must be of type '
                      '%s: "%s"' % (_type_name(value), path, typed,
                                    _type_name(value)))
            return
        if 'enum' in schema and value not in schema['enum']:
            self._bad(path, 'Unsupported value: %s: supported values: %s'
                      % (json.dumps(value), ', '.join(
                          json.dumps(v) for v in schema['enum'])))
        if isinstance(value, str):
            self._string(value, schema, path)
        elif _type_name(value) in ('integer', 'number'):
            self._number(value, schema, path)
        elif isinstance(value, list):
            self._array(value, schema, path)
        elif isinstance(value, dict):
            self._object(value, schema, path)

    def _string(self, value, schema, path):
        if 'maxLength' in schema and len(value) > schema['maxLength']:
            self._bad(path, 'Too long: may not be more than %d bytes'
                      % schema['maxLength'])
        if 'minLength' in schema and len(value) < schema['minLength']:
            self._bad(path, 'Invalid value: "%s": %s in body should be at '
                      'least %d chars long' % (value, path,
                                               schema['minLength']))
        if 'pattern' in schema:
            try:
                pattern = re.compile(schema['pattern'])
            except re.error:
                raise crds.NotModelled(
                    'the pattern %r of the schema of %s (at %s)'
                    % (schema['pattern'], self.what, path))
            if not pattern.search(value):
                self._bad(path, 'Invalid value: "%s": %s in body should '
                          'match \'%s\'' % (value, path, schema['pattern']))

    def _number(self, value, schema, path):
        if 'maximum' in schema and (
                value > schema['maximum'] or
                schema.get('exclusiveMaximum') and
                value == schema['maximum']):
            self._bad(path, 'Invalid value: %s: %s in body should be less '
                      'than or equal to %s' % (value, path,
                                               schema['maximum']))
        if 'minimum' in schema and (
                value < schema['minimum'] or
                schema.get('exclusiveMinimum') and
                value == schema['minimum']):
            self._bad(path, 'Invalid value: %s: %s in body should be '
                      'greater than or equal to %s'
                      % (value, path, schema['minimum']))

    def _array(self, value, schema, path):
        if 'maxItems' in schema and len(value) > schema['maxItems']:
            self._bad(path, 'Too many: %d: must have at most %d items'
                      % (len(value), schema['maxItems']))
        if 'minItems' in schema and len(value) < schema['minItems']:
            self._bad(path, 'Invalid value: %d: %s in body should have at '
                      'least %d items' % (len(value), path,
                                          schema['minItems']))
        list_type = schema.get('x-kubernetes-list-type', 'atomic')
        if list_type in ('set', 'map'):
            keys = schema.get('x-kubernetes-list-map-keys') or ()
            seen = []
            for index, item in enumerate(value):
                key = ([item.get(k) if isinstance(item, dict) else None
                        for k in keys] if list_type == 'map' else item)
                if key in seen:
                    self._bad('%s[%d]' % (path, index), 'Duplicate value: %s'
                              % json.dumps(key))
                seen.append(key)
        for index, item in enumerate(value):
            self.check(item, schema.get('items'), '%s[%d]' % (path, index))

    def _object(self, value, schema, path):
        for key in schema.get('required') or ():
            if key not in value:
                self._bad(_join(path, key), 'Required value')
        if 'maxProperties' in schema and \
                len(value) > schema['maxProperties']:
            self._bad(path, 'Too many: %d: must have at most %d items'
                      % (len(value), schema['maxProperties']))
        if 'minProperties' in schema and \
                len(value) < schema['minProperties']:
            self._bad(path, 'Invalid value: %d: %s in body should have at '
                      'least %d properties' % (len(value), path,
                                               schema['minProperties']))
        props = schema.get('properties') or {}
        extra = schema.get('additionalProperties')
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            self.check(item, sub, _join(path, key))


def _join(path, key):
    return '%s.%s' % (path, key) if path else key


def _check_name(meta, causes):
    name = meta.get('name') or ''
    if len(name) > 253 or not crds.DNS_SUBDOMAIN.fullmatch(name):
        causes.append(('metadata.name', 'Invalid value: "%s": a lowercase '
                       'RFC 1123 subdomain must consist of lower case '
                       'alphanumeric characters, \'-\' or \'.\', and must '
                       'start and end with an alphanumeric character'
                       % name))


def admit(info, obj):
    """A custom object as the API server stores it: ``apiVersion`` and
    ``kind`` those of ``info`` (400 otherwise), its fields pruned to the
    version's schema and defaulted, then checked (422 naming every
    problem)."""
    expected = objects.api_version(info.group, info.version)
    if obj.get('kind') != info.kind or obj.get('apiVersion') != expected:
        raise objects.APIError(
            400, 'the object is a %s of %s, not a %s of %s' % (
                obj.get('kind') or '<no kind>',
                obj.get('apiVersion') or '<no apiVersion>', info.kind,
                expected))
    entry = crds.version_of(info.crd, info.version)
    schema = entry['schema']['openAPIV3Schema']
    what = 'CustomResourceDefinition %s' % info.crd['metadata']['name']
    checker = _Checker(what)
    meta = obj.get('metadata') or {}
    body = {key: value for key, value in obj.items()
            if key not in ('apiVersion', 'kind', 'metadata')}
    # The server's own fields: checked by it, not by the schema.
    own = ('apiVersion', 'kind', 'metadata')
    root = dict(schema, properties={
        k: v for k, v in (schema.get('properties') or {}).items()
        if k not in own})
    if 'required' in schema:
        root['required'] = [k for k in schema['required'] if k not in own]
    body = checker.prune(body, root, '')
    checker.check(body, {k: v for k, v in root.items()
                         if k != 'type'}, '')
    _check_name(meta, checker.causes)
    if checker.causes:
        raise crds.invalid('%s.%s' % (info.kind, info.group),
                           meta.get('name'), checker.causes)
    return dict({'apiVersion': expected, 'kind': info.kind, 'metadata': meta},
                **body)
