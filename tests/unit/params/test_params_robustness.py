"""Any JSON value anywhere gives problems, never another exception.

The sweeps of a body's every path by every odd value are long: the unit
lane tries a fixed sample of them (``odd_values_per_path`` from
tests/unit/params/conftest.py: a few values per path, rotating so that
every value is tried too), and tests/functional/params runs these same
tests over every pair.
"""

import copy
import glob
import logging
import os

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt.params import casing

import params_helpers as h


def _deep_list(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def _deep_dict(depth):
    value = {}
    for _ in range(depth):
        value = {'master_node': value}
    return value


ODD_VALUES = [None, True, 0, -1.5, float('nan'), '', '   ', 'x' * 5000,
              '\x00', '../../etc/passwd', [], [None, 1], {}, {'a': {}},
              {1: 'non-string key'}, _deep_list(5000), _deep_dict(5000),
              'a\u2028ERROR forged', '\ud800', 'a\u202eb', '\ufeffx',
              'x\x85y', {'\u2029key': 'v'}]
ODD_IDS = ['null', 'true', 'zero', 'float', 'nan', 'empty', 'blank', 'long',
           'nul', 'escape', 'list', 'list2', 'obj', 'obj2', 'intkey',
           'deeplist', 'deepdict', 'linesep', 'surrogate', 'bidi', 'bom',
           'nel', 'parakey']
SEED_BODIES = [h.load_json(p) for p in
               sorted(glob.glob(os.path.join(h.FIXTURES, 'seed_*.json')))]


def _paths(value, prefix=()):
    """Every key/index path inside ``value``."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, item in items:
        yield prefix + (key,)
        yield from _paths(item, prefix + (key,))


def _replaced(value, path, new):
    value = copy.deepcopy(value)
    target = value
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return value


def _pairs(paths, values, per_path, least=100):
    """(path, value) pairs to try: every pair when ``per_path`` is None,
    else ``per_path`` values for each path (more when there are too few
    paths for every value to be tried), the choice rotating along the
    paths so that every value is tried at some path. ``least``: the full
    sweep is bigger than that, else the body gave too few paths."""
    paths, count = list(paths), len(values)
    assert len(paths) * count > least, (len(paths), count)
    if per_path is None or per_path >= count:
        return [(path, value) for path in paths for value in values]
    per_path = max(per_path, -(-count // len(paths)))
    pairs = [(path, values[(index * per_path + shift) % count])
             for index, path in enumerate(paths)
             for shift in range(per_path)]
    assert len({id(value) for _path, value in pairs}) == count
    return pairs


def _camel(value):
    if isinstance(value, dict):
        return {casing.snake_to_camel(k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _only_validation_errors(call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except exceptions.ValidationError as err:
        for path, message in err.problems:
            assert isinstance(path, str) and isinstance(message, str)
            assert len(message) < 2000
            # One line, nothing that hides or reorders it in a log.
            line = '%s: %s' % (path, message)
            assert line.isprintable(), line
        return None


@pytest.fixture(autouse=True)
def _quiet_logs(caplog):
    caplog.set_level(logging.ERROR, logger='k8s_mgmt.params')


@pytest.mark.parametrize('body', SEED_BODIES,
                         ids=lambda b: b['flavourId'])
@pytest.mark.parametrize('camel', [False, True], ids=['snake', 'camel'])
def test_odd_value_at_every_path(body, camel, odd_values_per_path):
    additional = body['additionalParams']
    if camel:
        additional = _camel(additional)
    for path, odd in _pairs(_paths(additional), ODD_VALUES,
                            odd_values_per_path, least=50):
        mutated = _replaced(additional, path, odd)
        for operation in ('instantiate', 'terminate'):
            _only_validation_errors(
                params.load_cluster_params, mutated,
                operation=operation, flavour=body['flavourId'])


@pytest.mark.parametrize('odd', ODD_VALUES, ids=ODD_IDS)
@pytest.mark.parametrize('operation', params.OPERATIONS)
def test_odd_whole_inputs(odd, operation):
    _only_validation_errors(params.load_cluster_params, odd,
                            operation=operation)
    _only_validation_errors(params.load_cluster_params, {h.ROOT: odd},
                            operation=operation)
    _only_validation_errors(params.load_request, odd, operation=operation)
    _only_validation_errors(params.load_request,
                            {'flavourId': odd, 'additionalParams': odd},
                            operation=operation)


@pytest.mark.parametrize('odd', ODD_VALUES, ids=ODD_IDS)
def test_odd_overrides(odd):
    stored = params.load_cluster_params(h.base_params(), flavour='simple')
    for request in (odd, {h.ROOT: odd}, {'force_drain': odd},
                    {h.ROOT: {'master_node': odd}},
                    {h.ROOT: {'worker_node': {'password': odd}}}):
        _only_validation_errors(params.merge_overrides, stored, request,
                                'scale')


# -- the request body around additionalParams, and the VNF package ---------

SAMPLE_BODIES = [h.load_json(p) for p in
                 sorted(glob.glob(os.path.join(h.SAMPLES, '*.json')))]


def _body_paths(body):
    """Paths of the body that the package checks read: everything outside
    the cluster parameters, and the CP names inside them."""
    for path in _paths(body):
        inside = path[:2] == ('additionalParams', h.ROOT)
        if not inside or path[-1] in ('ssh_cp_name', 'nic_cp_name',
                                      'cluster_cp_name'):
            yield path


@pytest.mark.parametrize('body', SEED_BODIES, ids=lambda b: b['flavourId'])
def test_odd_value_at_every_body_path(body, odd_values_per_path):
    for path, odd in _pairs(_body_paths(body), ODD_VALUES,
                            odd_values_per_path):
        _only_validation_errors(params.load_request,
                                _replaced(body, path, odd))


@pytest.mark.parametrize('body', SAMPLE_BODIES, ids=lambda b: b['flavourId'])
def test_odd_value_at_every_body_path_with_the_package(body, built_package,
                                                       odd_values_per_path):
    for path, odd in _pairs(_body_paths(body), ODD_VALUES,
                            odd_values_per_path):
        _only_validation_errors(params.load_request,
                                _replaced(body, path, odd),
                                package_dir=built_package)


@pytest.mark.parametrize('odd', ODD_VALUES, ids=ODD_IDS)
def test_odd_links_and_flavour_through_the_driver_entry(odd, built_package):
    additional = SAMPLE_BODIES[0]['additionalParams']
    for links in (odd, [odd], [{'ext_cps': odd}], [{'ext_cps': [odd]}],
                  [{'ext_cps': [{'cpd_id': odd}]}]):
        _only_validation_errors(params.load_cluster_params, additional,
                                flavour='complex', package_dir=built_package,
                                ext_virtual_links=links)
    _only_validation_errors(params.load_cluster_params, additional,
                            flavour=odd, package_dir=built_package,
                            ext_virtual_links=[{'ext_cps': [{'cpd_id': 'x'}]}])


_ODD_FILES = [b'', b'\xff\xfe\x00garbage', b'- just\n- a list\n',
              b'resources: [1, 2]\n', b'resources:\n  1: 2\n  null: x\n',
              b'topology_template: {substitution_mappings: {properties: '
              b'{flavour_id: complex}}, node_templates: [1]}\n',
              b'topology_template: {substitution_mappings: {properties: '
              b'{flavour_id: complex}}, node_templates: {a: 1, b: {type: '
              b'[x]}}}\n',
              b'key: [unclosed\n', b'&a [*a]\n', b'!!python/object:os.system '
              b'{}\n', b'[' * 5000 + b']' * 5000, b'{a: ' * 3000 + b'1' +
              b'}' * 3000, b'resources: ' + b'1' * 5000 + b'\n',
              b'kind: PersistentVolume\nmetadata: {name: "a\\u2028b"}\n',
              b'a: &x [1]\nb: [*x, *x]\n', b'#' * (70 * 1024)]
_MANIFEST = 'Files/kubernetes/nfs-pv2.yaml'
_PACKAGE_FILES = ['BaseHOT/complex/complex_hot_top.yaml',
                  'BaseHOT/complex/nested/complex_nested_master.yaml',
                  'Definitions/sample_kubernetes_df_complex.yaml',
                  'UserData/k8s_cluster_user_data.py', _MANIFEST]


@pytest.mark.parametrize('relative', _PACKAGE_FILES)
def test_odd_package_files(relative, package_copy, odd_values_per_path):
    flavour = 'storage' if relative == _MANIFEST else 'complex'
    body = next(b for b in SAMPLE_BODIES if b['flavourId'] == flavour)
    target = os.path.join(package_copy, relative)
    for content in [content for path, content in _pairs(
            _PACKAGE_FILES, _ODD_FILES, odd_values_per_path, least=50)
            if path == relative]:
        with open(target, 'wb') as handle:
            handle.write(content)
        _only_validation_errors(params.load_request, body,
                                package_dir=package_copy)
    os.remove(target)
    os.mkdir(target)   # a directory where a file is expected
    _only_validation_errors(params.load_request, body,
                            package_dir=package_copy)


# -- the kubespray section's own fields ------------------------------------

_ODD_ANSIBLE = ODD_VALUES + [
    'SHA256:', 'SHA256:' + '=' * 43, 'SHA256:' + 'A' * 5000, 'MD5:zz',
    '::ffff:127.0.0.1', 'fe80::1%eth0', '169.254.169.254/32', '0', '/tmp/',
    '/tmp/../home', '//tmp', '/dev/shm\n/x', '\u0661.1.1.1']


@pytest.mark.parametrize('camel', [False, True], ids=['snake', 'camel'])
def test_odd_value_at_every_path_of_the_ansible_section(
        camel, odd_values_per_path):
    body = h.sample('kubespray')
    section = body['additionalParams'][h.ROOT]['ansible']
    section['host_key_fingerprint'] = \
        'SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU'
    additional = body['additionalParams']
    root = h.ROOT
    if camel:
        additional, root = _camel(additional), casing.snake_to_camel(root)
    paths = [(root, 'ansible') + p
             for p in _paths(additional[root]['ansible'])]
    for path, odd in _pairs(paths, _ODD_ANSIBLE, odd_values_per_path):
        _only_validation_errors(params.load_cluster_params,
                                _replaced(additional, path, odd),
                                flavour='kubespray')


# -- the storage server's section, with its export and mount rules ---------

_STORAGE_VALUES = [
    '0.0.0.0/0', '0.0.0.0/32', '::/0', '::1', '127.0.0.1/8',
    '169.254.169.254', '224.0.0.1', '255.255.255.255', '10.0.0.0/8',
    '10.0.0.0/15', 'fe80::1', '::ffff:10.0.0.1', '10.254.0.0/24\n',
    '/', '/etc', '//etc/exports', '/var', '/var/lib/x', '/lib64', '/tmp/./v',
    '/srv/.ssh', '/srv/./data/', '/volume/../etc', 'true', 'false', 1]


@pytest.mark.parametrize('camel', [False, True], ids=['snake', 'camel'])
def test_odd_value_at_every_path_of_the_storage_section(
        camel, odd_values_per_path):
    body = h.sample('storage')
    section = body['additionalParams'][h.ROOT]['storage_server']
    section['allow_wide_export'] = True
    section['nfs_server_setup_params'][0]['no_root_squash'] = True
    additional = body['additionalParams']
    root = h.ROOT
    if camel:
        additional, root = _camel(additional), casing.snake_to_camel(root)
    key = casing.snake_to_camel('storage_server') if camel else \
        'storage_server'
    # The generic odd values once; camelCase keys with the storage ones.
    odd_values = _STORAGE_VALUES + ([] if camel else ODD_VALUES)
    paths = [(root, key) + p for p in _paths(additional[root][key])]
    for path, odd in _pairs(paths, odd_values, odd_values_per_path,
                            least=400):
        _only_validation_errors(params.load_cluster_params,
                                _replaced(additional, path, odd),
                                flavour='storage')
