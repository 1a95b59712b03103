"""The PersistentVolume manifests a request names, read from the package.

Each ``pv_registration_params[].pv_manifest_file_path`` must be one YAML
document in the VNF package: a ``v1`` ``PersistentVolume`` with a name and
an ``nfs`` source whose ``path`` is one of the storage server's exports.
Everything is checked when the request is validated, before any VM is
touched, and every problem names the request field and the file.

A manifest is read as YAML without anchors or aliases, at most
:data:`MAX_BYTES` long and :data:`MAX_DEPTH` collections deep: the event
stream is checked before any node is built, so an alias bomb or a
self-referencing document is refused before it can expand.

The driver never edits the manifest's text: :func:`body_for` takes the
parsed object and sets ``spec.nfs.server`` and the instance label on a
copy, so a manifest cannot smuggle anything through a substitution.
"""

import copy
import dataclasses
import os
import posixpath
import re

import yaml

from k8s_mgmt.params import fields
from k8s_mgmt.params.reader import child

ROOT = 'k8s_cluster_installation_param'
FIELD = child(ROOT, 'pv_registration_params')
# Every PV the driver registers carries the instance it belongs to.
INSTANCE_LABEL = 'k8s-mgmt.openstack.org/vnf-instance'
MAX_BYTES = 64 * 1024
# Collections inside collections; a PersistentVolume needs about five.
MAX_DEPTH = 32
_DNS_SUBDOMAIN = re.compile(
    r'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
# Set by the API server or by a controller, never by a manifest.
_SERVER_FIELDS = ('uid', 'resourceVersion', 'creationTimestamp',
                  'generation', 'managedFields', 'selfLink',
                  'deletionTimestamp', 'deletionGracePeriodSeconds')


class ManifestError(ValueError):
    """What is wrong with one manifest (the field path is the caller's)."""


@dataclasses.dataclass(frozen=True)
class PvManifest:
    """One checked manifest: where it came from and what it holds."""

    relative_path: str
    name: str
    nfs_path: str
    nfs_server_cp: str
    obj: dict


def field_path(index):
    return '%s[%d].pv_manifest_file_path' % (FIELD, index)


def _read_text(package_dir, relative):
    if relative.startswith('/') or '..' in relative.split('/'):
        raise ManifestError('%s: must be a path inside the VNF package'
                            % relative)
    root = os.path.realpath(package_dir)
    path = os.path.realpath(os.path.join(root, *relative.split('/')))
    if os.path.commonpath([root, path]) != root:
        raise ManifestError('%s: resolves outside the VNF package (symlink)'
                            % relative)
    if not os.path.isfile(path):
        raise ManifestError('%s: no such file in the VNF package' % relative)
    with open(path, 'rb') as handle:
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ManifestError('%s: larger than %d bytes (64 KiB), the limit '
                            'for a manifest' % (relative, MAX_BYTES))
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        raise ManifestError('%s: not UTF-8 text' % relative) from None


def _line(event):
    return event.start_mark.line + 1


def _check_events(relative, text):
    """Refuse anchors, aliases and deep nesting from the parser's events,
    before the composer builds (and an alias would expand) anything."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if getattr(event, 'anchor', None) is not None:
            raise ManifestError('%s: YAML anchors and aliases are not '
                                'accepted (line %d); write the values out'
                                % (relative, _line(event)))
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise ManifestError('%s: nested deeper than %d levels '
                                    '(line %d)' % (relative, MAX_DEPTH,
                                                   _line(event)))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _one_document(relative, text):
    try:
        _check_events(relative, text)
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except ManifestError:
        raise
    except yaml.YAMLError as err:
        mark = getattr(err, 'problem_mark', None)
        where = (' (line %d, column %d)' % (mark.line + 1, mark.column + 1)
                 if mark is not None else '')
        raise ManifestError('%s: not valid YAML%s' % (relative,
                                                      where)) from None
    except ValueError:
        # Python refuses to read an integer of more than 4300 digits.
        raise ManifestError('%s: holds a number too long to read'
                            % relative) from None
    if len(documents) != 1:
        raise ManifestError('%s: holds %d YAML documents; one '
                            'PersistentVolume per file' % (relative,
                                                           len(documents)))
    return documents[0]


def _shown(value):
    """A manifest value for a message: escaped, short, never a structure."""
    if isinstance(value, str):
        return fields.show(value)
    if value is None or isinstance(value, (bool, int, float)):
        return fields.show(repr(value))[1:-1]
    return 'a %s' % type(value).__name__


def _mapping(relative, obj, key, what):
    value = obj.get(key)
    if not isinstance(value, dict):
        raise ManifestError('%s: %s is %s, not a mapping' % (
            relative, what, 'missing' if value is None else
            type(value).__name__))
    return value


def parse(relative, text, exports, nfs_server_cp):
    """The PvManifest of ``text``; ManifestError naming the problem.

    ``exports`` are the storage server's export directories (normalised).
    """
    obj = _one_document(relative, text)
    if not isinstance(obj, dict):
        raise ManifestError('%s: a %s, not a Kubernetes object'
                            % (relative, type(obj).__name__))
    if obj.get('kind') != 'PersistentVolume' or obj.get('apiVersion') != 'v1':
        raise ManifestError('%s: kind %s apiVersion %s; expected a v1 '
                            'PersistentVolume' % (
                                relative, _shown(obj.get('kind')),
                                _shown(obj.get('apiVersion'))))
    meta = _mapping(relative, obj, 'metadata', 'metadata')
    name = meta.get('name')
    if not (isinstance(name, str) and len(name) <= 253 and
            _DNS_SUBDOMAIN.fullmatch(name)):
        raise ManifestError('%s: metadata.name %s is not a valid object '
                            'name (lower-case DNS subdomain)'
                            % (relative, _shown(name)))
    spec = _mapping(relative, obj, 'spec', 'spec')
    nfs = _mapping(relative, spec, 'nfs', 'spec.nfs (an NFS volume source)')
    path = nfs.get('path')
    if not isinstance(path, str) or not path.startswith('/'):
        raise ManifestError('%s: spec.nfs.path %s is not an absolute path'
                            % (relative, _shown(path)))
    normal = posixpath.normpath(path)
    if normal not in exports:
        raise ManifestError('%s: spec.nfs.path %s is not one of the storage '
                            'server\'s exports (%s)' % (
                                relative, _shown(path),
                                ', '.join(sorted(exports)) or 'none'))
    return PvManifest(relative, name, normal, nfs_server_cp, obj)


def _exports(params):
    storage = params.storage_server
    if storage is None:
        return frozenset()
    return frozenset(e.export_dir for e in storage.nfs_server_setup_params)


def load_all(package_dir, params):
    """Every manifest of ``params`` as PvManifest, in request order, and
    the problems as (field path, message) pairs."""
    found, problems, seen = [], [], {}
    exports = _exports(params)
    for index, item in enumerate(params.pv_registration_params):
        relative = item.pv_manifest_file_path
        if package_dir is None:
            problems.append((field_path(index), '%s: no VNF package to read '
                             'it from' % relative))
            continue
        try:
            manifest = parse(relative, _read_text(package_dir, relative),
                             exports, item.nfs_server_cp)
        except ManifestError as err:
            problems.append((field_path(index), str(err)))
            continue
        if manifest.name in seen:
            problems.append((field_path(index), '%s: PersistentVolume %s is '
                             'also defined by %s' % (
                                 relative, manifest.name,
                                 seen[manifest.name])))
            continue
        seen[manifest.name] = relative
        found.append(manifest)
    return found, problems


def server_cp(params):
    """The one CP whose address the PVs point at, or None."""
    names = {item.nfs_server_cp for item in params.pv_registration_params}
    return names.pop() if len(names) == 1 else None


def check(report, package_dir, params):
    """Report every problem of the request's PV manifests (the rules
    that need no package are in :mod:`k8s_mgmt.params.overlap`)."""
    if not params.pv_registration_params:
        return
    _found, problems = load_all(package_dir, params)
    for path, message in problems:
        report.problem(path, message)


def body_for(manifest, server_ip, instance_id):
    """The PersistentVolume to create: the manifest with ``spec.nfs.server``
    set to ``server_ip`` and the instance label added; fields only the API
    server sets are dropped. The manifest itself is not changed."""
    obj = copy.deepcopy(manifest.obj)
    obj.pop('status', None)
    meta = obj['metadata']
    for key in _SERVER_FIELDS:
        meta.pop(key, None)
    labels = meta.get('labels')
    meta['labels'] = dict(labels) if isinstance(labels, dict) else {}
    meta['labels'][INSTANCE_LABEL] = instance_id
    obj['spec']['nfs']['server'] = server_ip
    return obj
