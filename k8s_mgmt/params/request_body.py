"""The parts of an InstantiateVnfRequest outside the cluster parameters.

They decide what Tacker runs before our driver sees a VM: the two
``lcm-operation-user-data`` keys make Tacker import our UserData and build
the stack from the BaseHOT (without them it translates the VNFD with
heat-translator instead), and ``extVirtualLinks`` feed the UserData the
network of each external CP. Only their shape is checked here; what they
name in the VNF package is checked by :mod:`k8s_mgmt.params.package_checks`.

Paths are the request body's (camelCase, ``extVirtualLinks[1].extCps[0].
cpdId``) whichever casing the input used; Tacker's objects arrive as
snake_case dicts and read the same.

A request for Tacker's v2 API (checked with a :class:`V2Report`) differs:
``vimConnectionInfo`` is a map with one entry, each ``extCps[].cpConfig`` a
map, and the UserData keys are refused, since the v2 package builds the
stack with Tacker's DefaultUserData (see :mod:`k8s_mgmt.package_v2`).
"""

import collections
import keyword
import posixpath

from k8s_mgmt.params import casing
from k8s_mgmt.params import fields
from k8s_mgmt.params.fields import key_for_path

USER_DATA = 'lcm-operation-user-data'
USER_DATA_CLASS = 'lcm-operation-user-data-class'
USER_DATA_PATH = 'additionalParams.' + USER_DATA
USER_DATA_CLASS_PATH = 'additionalParams.' + USER_DATA_CLASS

# The UserData script and class a request names: ``path`` normalised and
# relative to the package root; either is None when it was not valid.
UserData = collections.namedtuple('UserData', 'path class_name')
# One extCps[].cpdId: where it is in the request, and its value.
ExtCp = collections.namedtuple('ExtCp', 'path cpd_id')
# The Tacker VNF LCM APIs a request can be written for.
API_V1 = 'v1'
API_V2 = 'v2'
APIS = (API_V1, API_V2)
_VIM_INFO = 'vimConnectionInfo'


class V2Report(fields.Report):
    """The report of a request for Tacker's v2 API: the checks here that
    differ between the APIs read ``api`` from it."""

    api = API_V2


def api_of(report):
    """The API a report checks a request for (a plain Report: v1)."""
    return getattr(report, 'api', API_V1)


def detect_api(body):
    """The API a request body is written for: v2 when its
    ``vimConnectionInfo`` is an object (v2's map), else v1."""
    if isinstance(body, dict) and isinstance(body.get(_VIM_INFO), dict):
        return API_V2
    return API_V1


def user_data(report, additional_params, operation):
    """Check the two UserData keys: both or neither, each well formed.

    Returns :class:`UserData` when both are given (null means absent), else
    None. Without either key an instantiate is warned about.
    """
    script = additional_params.get(USER_DATA)
    klass = additional_params.get(USER_DATA_CLASS)
    if api_of(report) == API_V2:
        _no_user_data_under_v2(report, script, klass)
        return None
    if script is None and klass is None:
        if operation == 'instantiate':
            report.warn(USER_DATA_PATH, 'absent (and %s): Tacker will ignore '
                        'the BaseHOT and UserData and build the stack with '
                        'heat-translator instead' % USER_DATA_CLASS)
        return None
    for name, where, value in ((USER_DATA_CLASS, USER_DATA_CLASS_PATH, klass),
                               (USER_DATA, USER_DATA_PATH, script)):
        if value is None:
            other = USER_DATA if name == USER_DATA_CLASS else USER_DATA_CLASS
            report.problem(where, 'required together with %s: Tacker runs '
                           'the UserData only when both are given' % other)
    if script is None or klass is None:
        return None
    return UserData(_module_path(report, script), _class_name(report, klass))


def _no_user_data_under_v2(report, script, klass):
    if script is not None or klass is not None:
        report.problem(USER_DATA_PATH, 'remove it and %s: the v2 package '
                       'uses Tacker\'s DefaultUserData to build the stack; '
                       'the v1 UserData class cannot run under v2'
                       % USER_DATA_CLASS)


def _module_path(report, value):
    """The UserData script as Tacker imports it, or None after a problem.

    Tacker strips leading '.' and '/' and imports the rest as a dotted
    module (``os.path.splitext(path.lstrip('./'))[0].replace('/', '.')``),
    so each directory and the file stem must be a Python identifier.
    """
    normal = fields.package_path(report, USER_DATA_PATH, value)
    if normal is None:
        return None
    if not normal.endswith('.py'):
        report.problem(USER_DATA_PATH, 'not a Python file (want a name '
                       'ending in .py): %s' % fields.show(value))
        return None
    imported = value.lstrip('./')
    module = posixpath.splitext(imported)[0]
    bad = [part for part in module.split('/') if not part.isidentifier()]
    if bad:
        report.problem(USER_DATA_PATH, 'Tacker imports it as the module %s, '
                       'but %s is not a Python identifier' % (
                           fields.show(module.replace('/', '.')),
                           fields.show(bad[0])))
        return None
    if imported != normal:
        report.problem(USER_DATA_PATH, 'Tacker strips the leading "." and '
                       '"/" and would import %s, not %s' % (
                           fields.show(imported), fields.show(normal)))
        return None
    return normal


def _class_name(report, value):
    name = fields.string(report, USER_DATA_CLASS_PATH, value)
    if name is None:
        return None
    if not name.isidentifier() or keyword.iskeyword(name):
        report.problem(USER_DATA_CLASS_PATH, 'not a Python class name: %s'
                       % fields.show(name))
        return None
    return name


def ext_cps(report, links):
    """Check ``extVirtualLinks``; return every well-formed cpdId as ExtCp.

    Each link needs ``id``, ``resourceId`` and a non-empty ``extCps`` list
    whose items have a ``cpdId``. ``links`` None means absent (allowed).
    """
    found = []
    for path, link in _objects(report, 'extVirtualLinks', links):
        _required(report, path, link, 'id', fields.string)
        _required(report, path, link, 'resource_id', fields.string)
        cps = _required(report, path, link, 'ext_cps', _list)
        for cp_path, cp in _objects(report, path + '.extCps', cps, 1):
            cpd_id = _required(report, cp_path, cp, 'cpd_id', fields.name)
            if cpd_id is not None:
                found.append(ExtCp(cp_path + '.cpdId', cpd_id))
            if api_of(report) == API_V2:
                _required(report, cp_path, cp, 'cp_config', _v2_cp_config)
    return found


def _v2_cp_config(report, path, value):
    """v2's cpConfig: a non-empty map of VnfExtCpConfig objects."""
    if not isinstance(value, dict):
        report.problem(path, 'expected an object keyed by a name (Tacker '
                       'API v2\'s map of VnfExtCpConfig, e.g. {"<cpdId>_1": '
                       '{"cpProtocolData": [...]}}), got %s'
                       % fields.describe(value))
        return None
    if not value:
        report.problem(path, 'needs at least 1 entry')
    for key, config in value.items():
        where = '%s.%s' % (path, key_for_path(key))
        if not isinstance(config, dict):
            report.problem(where, 'expected an object, got %s'
                           % fields.describe(config))
            continue
        _v2_protocol_data(report, where + '.cpProtocolData',
                          config.get('cpProtocolData'))
    return value


def _v2_protocol_data(report, path, value):
    """v2 builds the port's CpProtocolInfo from each IP_OVER_ETHERNET
    entry's ``ipOverEthernet`` and fails the instantiate (FAILED_TEMP,
    after the grant) without it: refused here, before anything runs."""
    if not isinstance(value, list):
        return
    for index, data in enumerate(value):
        if (isinstance(data, dict) and
                data.get('layerProtocol') == 'IP_OVER_ETHERNET' and
                not isinstance(data.get('ipOverEthernet'), dict)):
            report.problem('%s[%d].ipOverEthernet' % (path, index),
                           'required by Tacker API v2 for IP_OVER_ETHERNET '
                           '(e.g. {"ipAddresses": [{"type": "IPV4", '
                           '"numDynamicAddresses": 1}]}: one address from '
                           'the network\'s subnet)')


def vim_connection_info(report, value):
    """``vimConnectionInfo``; None means absent (allowed). v1: a list of
    objects with ``id`` and ``vimType``; v2: see :func:`_v2_vim_info`."""
    if api_of(report) == API_V2:
        _v2_vim_info(report, value)
        return
    for path, info in _objects(report, _VIM_INFO, value):
        _required(report, path, info, 'id', fields.string)
        _required(report, path, info, 'vim_type', fields.string)


def _v2_vim_info(report, value):
    """v2's map of VimConnectionInfo: exactly one entry (v2 refuses to
    choose among several), with ``vimType`` and either ``vimId`` (Tacker
    fills in the rest from its VIM database) or ``accessInfo`` and
    ``interfaceInfo``."""
    if value is None:
        return
    if not isinstance(value, dict):
        report.problem(_VIM_INFO, 'expected an object keyed by a name '
                       '(Tacker API v2), got %s' % fields.describe(value))
        return
    if len(value) != 1:
        report.problem(_VIM_INFO, 'v2 supports exactly one VIM connection: '
                       'Tacker cannot tell which of several to use (got %d)'
                       % len(value))
    for key, info in value.items():
        path = '%s.%s' % (_VIM_INFO, key_for_path(key))
        if not isinstance(info, dict):
            report.problem(path, 'expected an object, got %s'
                           % fields.describe(info))
            continue
        _required(report, path, info, 'vim_type', fields.string)
        if _present(info, 'vim_id'):
            _required(report, path, info, 'vim_id', fields.string)
        elif any(_present(info, name)
                 for name in ('access_info', 'interface_info')):
            for name in ('access_info', 'interface_info'):
                _required(report, path, info, name, _object)
        else:
            report.problem(path, 'needs vimId, or accessInfo and '
                           'interfaceInfo')


def _present(raw, snake_name):
    found, value, _ = casing.pick(raw, snake_name)
    return found and value is not None


def _object(report, path, value):
    if not isinstance(value, dict):
        report.problem(path, 'expected an object, got %s'
                       % fields.describe(value))
        return None
    return value


def _list(report, path, value):
    if not isinstance(value, list):
        report.problem(path, 'expected a list, got %s'
                       % fields.describe(value))
        return None
    return value


def _objects(report, path, value, minimum=0):
    """``(path[i], item)`` for each object of the list ``value``."""
    if value is None or _list(report, path, value) is None:
        return
    if len(value) < minimum:
        report.problem(path, 'needs at least %d item(s)' % minimum)
    for index, item in enumerate(value):
        where = '%s[%d]' % (path, index)
        if isinstance(item, dict):
            yield where, item
        else:
            report.problem(where, 'expected an object, got %s'
                           % fields.describe(item))


def _required(report, path, raw, snake_name, check):
    """The checked value of a required field (either casing), or None."""
    where = '%s.%s' % (path, casing.snake_to_camel(snake_name))
    found, value, conflict = casing.pick(raw, snake_name)
    if conflict:
        report.problem(where, 'given twice, as %r and %r, with different '
                       'values' % casing.spellings(snake_name))
        return None
    if not found or value is None:
        report.problem(where, 'required')
        return None
    return check(report, where, value)
