"""What a request names inside the unpacked VNF package.

Tacker runs the package's UserData and builds the Heat stack from
``BaseHOT/<flavourId>/`` before our driver sees a VM; a typo in any of the
names that lead there fails only after that (or, for a cluster CP, after
every VM is up). These checks read the package to catch them first:

* the UserData script exists and defines the class at module level (read
  with :mod:`ast`; the file is never imported or run);
* every CP the cluster parameters name is a resource of the flavour's
  BaseHOT: a template directly in ``BaseHOT/<flavourId>/`` or in its
  ``nested/``, where Tacker reads them;
* every ``extVirtualLinks[].extCps[].cpdId`` is a CP (``VduCp`` or
  ``VnfExtCp``) of the flavour's VNFD in ``Definitions/``;
* every storage server ``volume_resource_id`` is an ``OS::Cinder::Volume``
  of the flavour's BaseHOT (the driver finds the volume by that name).

The PersistentVolume manifests are checked by
:mod:`k8s_mgmt.params.pv_manifests`.

A request for Tacker's v2 API names no UserData (v2 builds the stack with
its DefaultUserData), so nothing about UserData is checked for it; instead
the package must be one built for v2, shipping the v2 script.

YAML is read with ``yaml.safe_load``. A problem in the package itself is
reported at ``flavourId`` (or the UserData key) and names the file.
"""

import ast
import functools
import os
import re

import yaml

from k8s_mgmt import shipped
from k8s_mgmt.params import fields
from k8s_mgmt.params import request_body

_CP_TYPES = ('tosca.nodes.nfv.VduCp', 'tosca.nodes.nfv.VnfExtCp')
# Cluster parameter sections and their fields that name a Heat resource.
_CP_FIELDS = (
    ('master_node', ('ssh_cp_name', 'nic_cp_name', 'cluster_cp_name')),
    ('worker_node', ('ssh_cp_name', 'nic_cp_name')),
    ('storage_server', ('ssh_cp_name',)),
    ('external_lb_param', ('ssh_cp_name',)),
)
_ROOT = 'k8s_cluster_installation_param'
_REGISTRY_ROOT = 'private_registry_installation_param'
_VOLUME_TYPE = 'OS::Cinder::Volume'
# A flavour id is used as a directory name under BaseHOT/.
_FLAVOUR_DIR = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}')
_SHOWN = 80
_YAML_SUFFIXES = ('.yaml', '.yml')
# k8s_mgmt.package_v2.V2_SCRIPT: the script a v2 package's hooks run.
V2_SCRIPT = 'Scripts/k8s_mgmt_v2.py'


def check(report, package_dir, flavour, user_data=None, params=None,
          ext_cps=()):
    """Check in the package what the request names.

    ``user_data`` is a :class:`~k8s_mgmt.params.request_body.UserData`,
    ``params`` the validated ClusterParams (their CPs must be BaseHOT
    resources), ``ext_cps`` the request's ExtCps (they must be VNFD CPs);
    each may be empty. The flavour matters only for the CPs.
    """
    _check_user_data(report, package_dir, user_data)
    if params is not None:
        _check_script_features(report, package_dir, params)
    named = list(_named_cps(params)) if params is not None else []
    volumes = list(_named_volumes(params)) if params is not None else []
    if flavour is None or not (named or volumes or ext_cps):
        return
    if not isinstance(flavour, str):
        report.problem('flavourId', 'expected a string, got %s'
                       % fields.describe(flavour))
        return
    if not _FLAVOUR_DIR.fullmatch(flavour):
        report.problem('flavourId', 'cannot name a BaseHOT directory: %s'
                       % fields.show(flavour))
        return
    if named or volumes:
        _check_named_resources(report, package_dir, flavour, named, volumes)
    if ext_cps:
        _check_ext_cps(report, package_dir, flavour, ext_cps)


# Request options -> the install-script feature that takes them.
_OPTION_FEATURES = (('kubernetes_apt_repository', 'apt-repo'),
                    ('private_registry_connection_info', 'registries'),
                    ('helm', 'helm'), ('cni', 'cni-edits'))


def _check_script_features(report, package_dir, params):
    """A request option the package's own install script is too old to
    take is refused here, not on the VMs."""
    asked = [(option, feature) for option, feature in _OPTION_FEATURES
             if getattr(params, option)]
    if any(r.username for r in params.private_registry_connection_info):
        asked.append(('private_registry_connection_info', 'registry-auth'))
    if not asked or params.uses_ansible or not params.script_path:
        return
    path = os.path.join(package_dir, params.script_path)
    try:
        with open(path, 'rb') as handle:
            features = shipped.script_features(handle.read())
    except OSError:
        return            # not in the package: the shipped copy is used
    for option, feature in asked:
        if feature not in features:
            report.problem(
                _ROOT + '.' + option,
                'the VNF package\'s install script %s predates this option '
                '(no "%s" on its k8s-mgmt-features line): build the package '
                'again with this version of k8s-mgmt'
                % (fields.show(params.script_path), feature))


def _check_named_resources(report, package_dir, flavour, cps, volumes):
    resources = _hot_resources(report, package_dir, flavour)
    if resources is None:
        return
    for path, name in cps + volumes:
        if name not in resources:
            report.problem(path, '%s is not a resource of BaseHOT/%s'
                           % (_short(name), flavour))
    for path, name in volumes:
        kind = _get(resources.get(name), 'type')
        if name in resources and kind != _VOLUME_TYPE:
            shown = fields.show(kind) if isinstance(kind, str) else 'none'
            report.problem(path, '%s has type %s in BaseHOT/%s, not %s'
                           % (_short(name), shown, flavour, _VOLUME_TYPE))


def _check_ext_cps(report, package_dir, flavour, ext_cps):
    known = _vnfd_cps(report, package_dir, flavour)
    if known is None:
        return
    listed = ', '.join(sorted(known)) or 'none'
    for cp in ext_cps:
        if cp.cpd_id not in known:
            report.problem(cp.path, "%s is not a CP of flavour %s's VNFD "
                           "(its CPs: %s)" % (_short(cp.cpd_id), flavour,
                                              listed))


def check_api(report, package_dir, api):
    """A v2 request needs a package built for v2: one whose hooks have
    the v2 script to run."""
    if api != request_body.API_V2:
        return
    if not os.path.isfile(os.path.join(package_dir, *V2_SCRIPT.split('/'))):
        report.problem('flavourId', 'the VNF package has no %s: it is not '
                       'built for Tacker API v2 (build it with "k8s-mgmt '
                       'package build --api v2")' % V2_SCRIPT)


def _check_user_data(report, package_dir, user_data):
    """The UserData script is in the package and defines the class
    (v1 only: a v2 request uses no UserData)."""
    if (user_data is None or user_data.path is None or
            request_body.api_of(report) == request_body.API_V2):
        return
    where = request_body.USER_DATA_PATH
    if fields.package_path(report, where, user_data.path,
                           package_dir=package_dir) is None:
        return
    try:
        with open(os.path.join(package_dir, user_data.path), 'rb') as handle:
            tree = ast.parse(handle.read(), filename=user_data.path)
    except OSError as err:
        report.problem(where, 'cannot read %s: %s'
                       % (user_data.path, err.strerror or err))
        return
    except SyntaxError as err:
        report.problem(where, '%s is not valid Python (line %s: %s)'
                       % (user_data.path, err.lineno, err.msg))
        return
    except (ValueError, RecursionError) as err:
        report.problem(where, '%s is not valid Python (%s)'
                       % (user_data.path, type(err).__name__))
        return
    if user_data.class_name is None:
        return
    classes = {node.name for node in tree.body
               if isinstance(node, ast.ClassDef)}
    if user_data.class_name not in classes:
        report.problem(request_body.USER_DATA_CLASS_PATH, '%s defines no '
                       'class %s' % (user_data.path,
                                     _short(user_data.class_name)))


def _short(name):
    """A (checked, whitespace-free) name for a message, cut when long."""
    return name if len(name) <= _SHOWN else name[:_SHOWN] + '...'


def _named_cps(params):
    registry = params.registry
    if registry is not None:
        for name in ('ssh_cp_name', 'nic_cp_name'):
            value = getattr(registry, name)
            if value:
                yield '%s.%s' % (_REGISTRY_ROOT, name), value
    for section, names in _CP_FIELDS:
        group = getattr(params, section)
        for name in names:
            value = getattr(group, name, None)
            if value is not None:
                yield '%s.%s.%s' % (_ROOT, section, name), value
    for index, item in enumerate(params.pv_registration_params):
        yield ('%s.pv_registration_params[%d].nfs_server_cp' % (_ROOT, index),
               item.nfs_server_cp)


def _named_volumes(params):
    registry = params.registry
    for index, volume in enumerate(
            registry.cinder_volume_setup_params if registry else ()):
        yield ('%s.cinder_volume_setup_params[%d].volume_resource_id'
               % (_REGISTRY_ROOT, index), volume.volume_resource_id)
    storage = params.storage_server
    for index, volume in enumerate(
            storage.cinder_volume_setup_params if storage else ()):
        yield ('%s.storage_server.cinder_volume_setup_params[%d].'
               'volume_resource_id' % (_ROOT, index),
               volume.volume_resource_id)


def _hot_resources(report, package_dir, flavour):
    """{name: definition} of the resources of every template under
    BaseHOT/<flavour>, or None after a problem."""
    folder = os.path.join(package_dir, 'BaseHOT', flavour)
    if not os.path.isdir(folder):
        report.problem('flavourId', 'no BaseHOT/%s directory in the VNF '
                       'package' % flavour)
        return None
    prefix = 'BaseHOT/' + flavour
    tops = _yaml_files(folder, prefix)
    if not tops:
        report.problem('flavourId', 'no top template (*.yaml) in %s of the '
                       'VNF package' % prefix)
        return None
    resources, complete = {}, True
    nested = _yaml_files(os.path.join(folder, 'nested'), prefix + '/nested')
    for name in tops + nested:
        loaded, template = _load(report, package_dir, name)
        if not loaded:
            complete = False
        elif isinstance(template, dict) and isinstance(
                template.get('resources'), dict):
            resources.update(template['resources'])
    return resources if complete else None


def _vnfd_cps(report, package_dir, flavour):
    """CP names of the VNFD whose flavour_id is ``flavour``, or None."""
    folder = os.path.join(package_dir, 'Definitions')
    found = None
    for relative in _yaml_files(folder, 'Definitions'):
        if not _mentions(os.path.join(package_dir, relative), flavour):
            continue
        loaded, vnfd = _load(report, package_dir, relative)
        if not loaded:
            return None   # that problem is enough
        topology = _get(vnfd, 'topology_template')
        if _get(_get(_get(topology, 'substitution_mappings'), 'properties'),
                'flavour_id') != flavour:
            continue
        nodes = _get(topology, 'node_templates')
        found = found or set()
        found.update(node for node, spec in (
            nodes.items() if isinstance(nodes, dict) else ())
            if _get(spec, 'type') in _CP_TYPES)
    if found is None:
        report.problem('flavourId', 'no VNFD in the package\'s Definitions/ '
                       'has flavour_id %s' % flavour)
    return found


def _mentions(path, flavour):
    """Cheap filter before parsing: the file could hold the flavour's
    VNFD (the SOL001 type files are large and never do)."""
    try:
        with open(path, encoding='utf-8', errors='replace') as handle:
            text = handle.read()
    except OSError:
        return False
    return 'substitution_mappings' in text and flavour in text


def _yaml_files(folder, prefix):
    """Package-relative names of the YAML files directly in ``folder``
    (where Tacker's get_base_nest_hot_dict looks)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return ['%s/%s' % (prefix, name) for name in names
            if name.endswith(_YAML_SUFFIXES) and
            os.path.isfile(os.path.join(folder, name))]


def _load(report, package_dir, relative):
    """``(True, YAML of a package file)``, or ``(False, None)`` after a
    problem at flavourId."""
    path = os.path.join(package_dir, relative)
    try:
        info = os.stat(path)
        return True, _parsed(os.path.realpath(path), info.st_ino,
                             info.st_size, info.st_mtime_ns)
    except OSError as err:
        report.problem('flavourId', 'cannot read %s in the VNF package: %s'
                       % (relative, err.strerror or err))
    except (yaml.YAMLError, RecursionError, ValueError) as err:
        mark = getattr(err, 'problem_mark', None)
        where = ' (line %d)' % (mark.line + 1) if mark is not None else ''
        report.problem('flavourId', '%s in the VNF package is not valid '
                       'YAML%s' % (relative, where))
    return False, None


@functools.lru_cache(maxsize=64)
def _parsed(path, inode, size, mtime_ns):
    """YAML of a file version: Tacker calls the driver several times per
    operation on the same package. Callers only read the result."""
    with open(path, 'rb') as handle:
        return yaml.safe_load(handle)


def _get(value, key):
    return value.get(key) if isinstance(value, dict) else None
