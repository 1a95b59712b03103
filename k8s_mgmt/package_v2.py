"""The VNF package for Tacker's v2 VNF LCM API (``package build --api v2``).

It starts from the v1 package (:func:`k8s_mgmt.package.assemble`'s source
files and node scripts) and changes what v2 reads differently:

* v2 runs one Python script per hook, the file an artifact of type
  ``tosca.artifacts.Implementation.Python`` names, taken relative to
  ``Definitions/``. The package ships :mod:`k8s_mgmt.v2.shim` as
  ``Scripts/k8s_mgmt_v2.py`` and every flavour's VNFD names it, as
  ``../Scripts/k8s_mgmt_v2.py``, for every hook v2 calls; the v1 driver
  artifacts are left out.
* tosca-parser accepts only the operations the node type's interface
  declares, and the SOL001 ``tosca.interfaces.nfv.Vnflcm`` lacks the
  rollback and change_current_package hooks, so the node type's ``Vnflcm``
  gets an interface type of ours that declares every hook.
* v2 builds the stack with its DefaultUserData, which fills the VDU's
  ``computeFlavourId`` and ``vcImageId`` and never ``flavor`` or ``image``:
  the top BaseHOT templates ask for those two names instead.
* ``UserData/`` is dropped: v2 never calls the v1 UserData class.

The VNFD files are rewritten through YAML (their comments are lost), the
BaseHOT templates as text (each change checked by parsing the result).
"""

import importlib
import inspect
import re

import yaml

V2_SCRIPT = 'Scripts/k8s_mgmt_v2.py'
SHIM_MODULE = 'k8s_mgmt.v2.shim'
ARTIFACT_NAME = 'k8s-mgmt-v2'
# The artifact's file is read relative to Definitions/.
ARTIFACT_FILE = '../' + V2_SCRIPT
ARTIFACT_TYPE = 'tosca.artifacts.Implementation.Python'
INTERFACE_TYPE = 'k8smgmt.sample.Vnflcm.v2'
_OPERATIONS = ('instantiate', 'scale', 'heal', 'terminate',
               'instantiate_rollback', 'scale_rollback',
               'modify_information', 'change_current_package',
               'change_current_package_rollback')
# Every hook v2's conductor may run, in the order the VNFD lists them.
HOOKS = tuple('%s_%s' % (operation, when) for operation in _OPERATIONS
              for when in ('start', 'end'))
# What DefaultUserData fills in place of the v1 UserData's names.
HOT_PARAMS = {'flavor': 'computeFlavourId', 'image': 'vcImageId'}
USER_DATA_DIR = 'UserData/'
_DF_FILE = re.compile(r'^Definitions/sample_kubernetes_df_[^/]+\.ya?ml$')
_TOP_HOT = re.compile(r'^BaseHOT/[^/]+/[^/]+\.ya?ml$')
_Q = r'''["']?'''
_NFV_VDU_PARAM = re.compile(
    r'(get_param\s*:\s*\[\s*{q}nfv{q}\s*,\s*{q}VDU{q}\s*,\s*{q}[^,\]\s]+{q}'
    r'\s*,\s*{q})(flavor|image)({q}\s*\])'.format(q=_Q))
# The v1 driver artifacts a v2 package leaves out (k8s_mgmt.package's
# DRIVER_ARTIFACTS; this module does not import that one, which imports it).
V1_ARTIFACTS = ('Scripts/k8s_mgmt_driver.py',
                'Scripts/k8s_mgmt_kubespray_driver.py')
_HEADER = ('# Made by "k8s-mgmt package build --api v2" from the v1 sample: '
           'every hook runs\n# %s (relative to Definitions/).\n'
           % ARTIFACT_FILE)


class V2PackageError(Exception):
    """The v2 package cannot be made from the v1 files (k8s_mgmt.package
    raises it again as its PackageError)."""


def shim_path():
    """The file of the installed v2 shim module: the script v2 runs."""
    return inspect.getsourcefile(importlib.import_module(SHIM_MODULE))


def script_files():
    """{archive name: bytes} of the v2 script the package ships."""
    path = shim_path()
    try:
        with open(path, 'rb') as handle:
            return {V2_SCRIPT: handle.read()}
    except OSError as err:
        raise V2PackageError('cannot read %s: %s'
                             % (path, err.strerror or err))


def transform(files):
    """The v1 package's ``{archive name: bytes}`` (TOSCA.meta aside) as
    the v2 package's files."""
    dropped = set(V1_ARTIFACTS)
    result = {name: data for name, data in files.items()
              if name not in dropped and not name.startswith(USER_DATA_DIR)}
    df_names = [name for name in result if _DF_FILE.match(name)]
    if not df_names:
        raise V2PackageError('no Definitions/sample_kubernetes_df_*.yaml '
                             'in the package to point at %s' % V2_SCRIPT)
    node_types = set()
    for name in df_names:
        result[name], types = v2_deployment_flavour(name, result[name])
        node_types.update(types)
    type_files = list(_type_files(result, node_types))
    if not type_files:
        raise V2PackageError(
            'no file under Definitions/ defines the node type %s, whose '
            'Vnflcm interface must declare the v2 hooks'
            % ', '.join(sorted(node_types)))
    for name in type_files:
        result[name] = v2_node_types(name, result[name], node_types)
    for name in result:
        if _TOP_HOT.match(name):
            result[name] = v2_top_template(name, result[name])
    result.update(script_files())
    if SCRIPTS_README in result:
        result[SCRIPTS_README] = V2_SCRIPTS_README.encode()
    return result


SCRIPTS_README = 'Scripts/README.md'
# The v1 text names the v1 driver's artifact, which a v2 package lacks.
V2_SCRIPTS_README = """# Scripts/

Filled by `k8s-mgmt package build --api v2`, not by hand: `k8s_mgmt_v2.py`,
the script the VNFD names for every hook (Tacker's v2 conductor runs it
with its own Python, where k8s-mgmt is installed; it only hands the hook to
the installed driver), and the node scripts as the installed k8s-mgmt ships
them (`install_k8s_cluster.sh`, `configure_lb.sh`, `k8s_mgmt_lib.sh`,
`setup_storage.sh`). Every file of the built package is listed with its
SHA-256 in `TOSCA-Metadata/TOSCA.meta`.
"""


def _load(name, data):
    try:
        return yaml.safe_load(data)
    except yaml.YAMLError as err:
        raise V2PackageError('%s is not valid YAML: %s' % (name, err))


def _dump(document):
    text = yaml.safe_dump(document, sort_keys=False, default_flow_style=False,
                          allow_unicode=True, width=100)
    return (_HEADER + text).encode('utf-8')


def _nodes(document):
    topology = document.get('topology_template') if isinstance(
        document, dict) else None
    nodes = topology.get('node_templates') if isinstance(
        topology, dict) else None
    return nodes if isinstance(nodes, dict) else {}


def _lcm_nodes(document):
    """(name, node) of each node template with ``interfaces.Vnflcm``."""
    for node_name, node in _nodes(document).items():
        interfaces = node.get('interfaces') if isinstance(node, dict) \
            else None
        if isinstance(interfaces, dict) and isinstance(
                interfaces.get('Vnflcm'), dict):
            yield node_name, node


def v2_deployment_flavour(name, data):
    """A flavour's VNFD with every hook on the v2 script; also returns the
    node types of the nodes changed. Refuses a VNFD without the v1
    ``interfaces.Vnflcm`` block."""
    document = _load(name, data)
    changed = list(_lcm_nodes(document))
    if not changed:
        raise V2PackageError(
            '%s has no node template with interfaces.Vnflcm (the v1 hooks) '
            'to point at %s' % (name, V2_SCRIPT))
    for _, node in changed:
        node['interfaces']['Vnflcm'] = {
            hook: {'implementation': ARTIFACT_NAME} for hook in HOOKS}
        node['artifacts'] = {ARTIFACT_NAME: {
            'description': 'k8s-mgmt management script for Tacker\'s v2 '
                           'API (runs every hook)',
            'type': ARTIFACT_TYPE,
            'file': ARTIFACT_FILE}}
    types = {node.get('type') for _, node in changed
             if isinstance(node.get('type'), str)}
    return _dump(document), types


def _type_files(files, node_types):
    """Names of the Definitions/ files defining one of ``node_types``
    (the large SOL001 files are skipped by a text test first)."""
    for name, data in sorted(files.items()):
        if not name.startswith('Definitions/') or _DF_FILE.match(name):
            continue
        if any(('%s:' % kind).encode() in data for kind in node_types):
            document = _load(name, data)
            defined = document.get('node_types') if isinstance(
                document, dict) else None
            if isinstance(defined, dict) and node_types & set(defined):
                yield name


def v2_node_types(name, data, node_types):
    """The types file with our interface type (declaring every v2 hook)
    as the ``Vnflcm`` interface of each node type in ``node_types``."""
    document = _load(name, data)
    for kind, definition in document['node_types'].items():
        if kind in node_types and isinstance(definition, dict):
            interfaces = definition.setdefault('interfaces', {})
            interfaces['Vnflcm'] = {'type': INTERFACE_TYPE}
    declared = document.setdefault('interface_types', {})
    operations = {'derived_from': 'tosca.interfaces.nfv.Vnflcm'}
    for hook in HOOKS:
        operation, _, when = hook.rpartition('_')
        operations[hook] = {'description': 'invoked %s %s'
                            % ('before' if when == 'start' else 'after',
                               operation)}
    declared[INTERFACE_TYPE] = operations
    return _dump(document)


def v2_top_template(name, data):
    """A top BaseHOT template asking for DefaultUserData's parameter
    names; refuses one still asking for a VDU's ``flavor``/``image``."""
    text = data.decode('utf-8')
    text = _NFV_VDU_PARAM.sub(
        lambda match: match.group(1) + HOT_PARAMS[match.group(2)] +
        match.group(3), text)
    left = sorted(set(v1_vdu_params(_load(name, text))))
    if left:
        raise V2PackageError(
            '%s still asks for %s, which Tacker v2\'s DefaultUserData never '
            'fills: write them as "get_param: [nfv, VDU, <vdu>, flavor]" '
            'on one line' % (name, ', '.join(left)))
    return text.encode('utf-8')


def v1_vdu_params(value):
    """``nfv.VDU.<vdu>.flavor|image`` of each v1-style get_param in a
    parsed template."""
    if isinstance(value, dict):
        for key, item in value.items():
            if (key == 'get_param' and isinstance(item, list) and
                    len(item) == 4 and item[:2] == ['nfv', 'VDU'] and
                    item[3] in HOT_PARAMS):
                yield 'nfv.VDU.%s.%s' % (item[2], item[3])
            else:
                yield from v1_vdu_params(item)
    elif isinstance(value, list):
        for item in value:
            yield from v1_vdu_params(item)
