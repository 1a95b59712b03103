"""PersistentVolume manifests: read from the package, checked, and turned
into the objects the driver creates (never edited as text)."""

import copy
import json
import os

import pytest
import yaml

from k8s_mgmt import driver
from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt.params import pv_manifests
from tests.unit.params import params_helpers as h

GOOD = {
    'apiVersion': 'v1', 'kind': 'PersistentVolume',
    'metadata': {'name': 'nfs-pv1', 'labels': {'tier': 'data'},
                 'uid': 'from-another-cluster', 'resourceVersion': '7'},
    'spec': {'capacity': {'storage': '1Gi'},
             'accessModes': ['ReadWriteMany'],
             'persistentVolumeReclaimPolicy': 'Retain',
             'nfs': {'server': '0.0.0.0', 'path': '/volume/nfs/pv1/'}},
    'status': {'phase': 'Bound'},
}
EXPORTS = frozenset(['/volume/nfs/pv1', '/volume/nfs/pv2'])


def parse(obj, exports=EXPORTS):
    text = obj if isinstance(obj, str) else yaml.safe_dump(obj)
    return pv_manifests.parse('Files/kubernetes/pv.yaml', text, exports,
                              'storage_server_CP')


def changed(path, value):
    obj = copy.deepcopy(GOOD)
    keys = path.split('.')
    target = obj
    for key in keys[:-1]:
        target = target[key]
    if value is None:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return obj


def test_a_good_manifest():
    manifest = parse(GOOD)
    assert manifest.name == 'nfs-pv1'
    assert manifest.nfs_path == '/volume/nfs/pv1'


@pytest.mark.parametrize('obj, message', [
    ('a: [', 'not valid YAML (line'),
    ('--- \n' + yaml.safe_dump(GOOD) + '---\n' + yaml.safe_dump(GOOD),
     'holds 2 YAML documents'),
    ('', 'holds 0 YAML documents'),
    ('- 1\n- 2\n', 'a list, not a Kubernetes object'),
    (changed('kind', 'PersistentVolumeClaim'),
     "kind 'PersistentVolumeClaim' apiVersion 'v1'; expected a v1 "
     "PersistentVolume"),
    (changed('apiVersion', 'v2'), "apiVersion 'v2'"),
    (changed('metadata', None), 'metadata is missing, not a mapping'),
    (changed('metadata.name', 'NFS_PV'), "metadata.name 'NFS_PV' is not a "
                                         "valid object name"),
    (changed('spec.nfs', None), 'spec.nfs (an NFS volume source) is '
                                'missing'),
    (changed('spec.nfs', {'server': 'x'}), 'spec.nfs.path None is not an '
                                           'absolute path'),
    (changed('spec.nfs.path', '/volume/nfs/pv3'),
     'spec.nfs.path \'/volume/nfs/pv3\' is not one of the storage server\'s '
     'exports (/volume/nfs/pv1, /volume/nfs/pv2)'),
    # A directory under an export is not an export.
    (changed('spec.nfs.path', '/volume/nfs/pv1/sub'), 'is not one of'),
])
def test_bad_manifests_name_the_file_and_the_problem(obj, message):
    with pytest.raises(pv_manifests.ManifestError) as err:
        parse(obj)
    assert str(err.value).startswith('Files/kubernetes/pv.yaml: ')
    assert message in str(err.value)


def test_body_sets_the_server_and_label_on_a_copy():
    manifest = parse(GOOD)
    before = copy.deepcopy(manifest.obj)
    body = pv_manifests.body_for(manifest, '10.254.0.9', 'inst-1')
    assert body['spec']['nfs'] == {'server': '10.254.0.9',
                                   'path': '/volume/nfs/pv1/'}
    assert body['metadata'] == {
        'name': 'nfs-pv1',
        'labels': {'tier': 'data', pv_manifests.INSTANCE_LABEL: 'inst-1'}}
    assert 'status' not in body
    assert manifest.obj == before


def test_a_server_value_cannot_smuggle_anything():
    # The address is a value in a structure, whatever its text.
    manifest = parse(GOOD)
    body = pv_manifests.body_for(manifest, '10.0.0.1\n  path: /etc', 'i')
    assert body['spec']['nfs']['path'] == '/volume/nfs/pv1/'


def _request_with(tmp_path, files, registrations):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    additional = h.base_params()
    storage = h.storage_section()
    storage['nfs_server_setup_params'] = [
        {'export_dir': d, 'export_to': '10.254.0.0/24'} for d in EXPORTS]
    additional[h.ROOT]['storage_server'] = storage
    additional[h.ROOT]['pv_registration_params'] = [
        {'pv_manifest_file_path': p, 'nfs_server_cp': 'storage_server_CP'}
        for p in registrations]
    return params.load_cluster_params(additional, flavour='simple')


def test_load_all_reports_each_entry(tmp_path):
    pv2 = changed('metadata.name', 'nfs-pv2')
    pv2['spec']['nfs']['path'] = '/volume/nfs/pv2'
    files = {'Files/pv1.yaml': yaml.safe_dump(GOOD),
             'Files/pv2.yaml': yaml.safe_dump(pv2),
             'Files/again.yaml': yaml.safe_dump(GOOD),
             'Files/big.yaml': 'x' * (pv_manifests.MAX_BYTES + 1)}
    loaded = _request_with(tmp_path, files, [
        'Files/pv1.yaml', 'Files/pv2.yaml', 'Files/missing.yaml',
        'Files/again.yaml', 'Files/big.yaml'])
    found, problems = pv_manifests.load_all(str(tmp_path), loaded)
    assert [m.name for m in found] == ['nfs-pv1', 'nfs-pv2']
    field = pv_manifests.field_path
    assert problems == [
        (field(2), 'Files/missing.yaml: no such file in the VNF package'),
        (field(3), 'Files/again.yaml: PersistentVolume nfs-pv1 is also '
                   'defined by Files/pv1.yaml'),
        (field(4), 'Files/big.yaml: larger than 65536 bytes (64 KiB), the '
                   'limit for a manifest')]


def test_validation_with_the_package_reports_manifests(tmp_path):
    os.makedirs(tmp_path / 'Files')
    (tmp_path / 'Files' / 'pv.yaml').write_text('kind: Pod\n')
    loaded = _request_with(tmp_path, {}, ['Files/pv.yaml'])
    report = _Collect()
    pv_manifests.check(report, str(tmp_path), loaded)
    assert report.problems == [(pv_manifests.field_path(0),
                                "Files/pv.yaml: kind 'Pod' apiVersion None; "
                                "expected a v1 PersistentVolume")]


class _Collect(object):
    def __init__(self):
        self.problems = []

    def problem(self, path, message):
        self.problems.append((path, message))


def test_without_a_package_each_manifest_is_a_problem(tmp_path):
    loaded = _request_with(tmp_path, {}, ['Files/pv.yaml'])
    assert pv_manifests.load_all(None, loaded) == ([], [(
        pv_manifests.field_path(0),
        'Files/pv.yaml: no VNF package to read it from')])


# -- YAML that could expand, recurse or exhaust: refused from the events ---

def _bomb():
    """A PersistentVolume whose labels hold a billion-laughs alias bomb
    (9**9 strings once expanded) in under 800 bytes."""
    lines = ['apiVersion: v1', 'kind: PersistentVolume',
             'metadata:', '  name: nfs-pv1', '  labels:',
             '    l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]']
    for level in range(1, 9):
        lines.append('    l%d: &l%d [%s]' % (
            level, level, ', '.join(['*l%d' % (level - 1)] * 9)))
    lines += ['spec:', '  nfs: {server: 0.0.0.0, path: /volume/nfs/pv1}']
    return '\n'.join(lines) + '\n'


def _never_composed(monkeypatch):
    # Refused from the event stream means no node is ever built.
    def compose(*_args):
        raise AssertionError('the document was composed')
    monkeypatch.setattr(yaml.composer.Composer, 'compose_node', compose)


@pytest.mark.parametrize('text, line', [
    (_bomb(), 6),
    ('&a [*a]\n', 1),
    # Valid as a PersistentVolume, and a cycle once composed.
    ('&pv {apiVersion: v1, kind: PersistentVolume, metadata: {name: a}, '
     'spec: {nfs: {path: /volume/nfs/pv1}, again: *pv}}\n', 1),
    (yaml.safe_dump(GOOD).replace('spec:', 'spec: &s', 1),
     yaml.safe_dump(GOOD).splitlines().index('spec:') + 1),
    ('kind: &k PersistentVolume\n', 1),
])
def test_anchors_and_aliases_are_refused_before_composing(
        text, line, monkeypatch):
    _never_composed(monkeypatch)
    with pytest.raises(pv_manifests.ManifestError) as err:
        parse(text)
    assert str(err.value) == (
        'Files/kubernetes/pv.yaml: YAML anchors and aliases are not '
        'accepted (line %d); write the values out' % line)


def test_the_bomb_is_small_and_refused_at_once():
    text = _bomb()
    assert 500 < len(text.encode()) < 800
    with pytest.raises(pv_manifests.ManifestError):
        parse(text)


def test_nesting_is_capped_at_max_depth():
    deepest = '[' * pv_manifests.MAX_DEPTH + ']' * pv_manifests.MAX_DEPTH
    with pytest.raises(pv_manifests.ManifestError) as err:
        parse(deepest)
    assert 'a list, not a Kubernetes object' in str(err.value)
    too_deep = '[' + deepest + ']'
    with pytest.raises(pv_manifests.ManifestError) as err:
        parse(too_deep)
    assert str(err.value) == ('Files/kubernetes/pv.yaml: nested deeper '
                              'than 32 levels (line 1)')


def test_deep_block_nesting_is_refused_without_recursion(monkeypatch):
    _never_composed(monkeypatch)
    text = ''.join('%sk:\n' % (' ' * depth) for depth in range(5000))
    with pytest.raises(pv_manifests.ManifestError) as err:
        parse(text + ' ' * 5000 + 'k: 1\n')
    assert 'nested deeper than 32 levels (line 33)' in str(err.value)


def test_a_number_too_long_for_python_is_a_problem():
    text = yaml.safe_dump(GOOD).replace('1Gi', '1' * 5000)
    with pytest.raises(pv_manifests.ManifestError) as err:
        parse(text)
    assert str(err.value) == ('Files/kubernetes/pv.yaml: holds a number '
                              'too long to read')


def test_shown_values_are_escaped_and_short():
    with pytest.raises(pv_manifests.ManifestError) as err:
        parse(changed('spec.nfs.path', '/x\nERROR forged line' + 'y' * 500))
    assert '\n' not in str(err.value) and len(str(err.value)) < 300
    with pytest.raises(pv_manifests.ManifestError) as err:
        parse(changed('kind', {'a': ['b'] * 1000}))
    assert "kind a dict apiVersion 'v1'" in str(err.value)


def test_the_size_cap_is_64_kib(tmp_path):
    text = yaml.safe_dump(GOOD)
    at_cap = text + '#' * (pv_manifests.MAX_BYTES - len(text) - 1) + '\n'
    files = {'Files/at.yaml': at_cap, 'Files/over.yaml': at_cap + '\n'}
    loaded = _request_with(tmp_path, files, ['Files/at.yaml',
                                             'Files/over.yaml'])
    found, problems = pv_manifests.load_all(str(tmp_path), loaded)
    assert [m.relative_path for m in found] == ['Files/at.yaml']
    assert problems == [(pv_manifests.field_path(1), (
        'Files/over.yaml: larger than 65536 bytes (64 KiB), the limit for '
        'a manifest'))]


def test_a_symlink_out_of_the_package_is_not_read(tmp_path):
    outside = tmp_path / 'outside.yaml'
    outside.write_text(yaml.safe_dump(GOOD))
    package = tmp_path / 'pkg'
    (package / 'Files').mkdir(parents=True)
    os.symlink(str(outside), str(package / 'Files' / 'pv.yaml'))
    loaded = _request_with(package, {}, ['Files/pv.yaml'])
    assert pv_manifests.load_all(str(package), loaded) == ([], [(
        pv_manifests.field_path(0),
        'Files/pv.yaml: resolves outside the VNF package (symlink)')])


def test_the_sample_manifests_still_load(built_package):
    body = h.sample('storage')
    loaded = params.load_request(body, package_dir=built_package)
    found, problems = pv_manifests.load_all(built_package, loaded)
    assert problems == []
    assert [m.name for m in found] == ['nfs-pv1', 'nfs-pv2', 'nfs-pv3']


# -- where the refusal shows: the CLI and the driver, before any VM --------

def _storage_package_with(package_copy, text):
    with open(os.path.join(package_copy, 'Files', 'kubernetes',
                           'nfs-pv2.yaml'), 'w') as handle:
        handle.write(text)
    return package_copy


def test_validate_cli_prints_one_line_and_exits_2(package_copy, tmp_path):
    package = _storage_package_with(package_copy, _bomb())
    request = tmp_path / 'request.json'
    request.write_text(json.dumps(h.sample('storage')))
    done = h.validate_cli('--package-dir', package, str(request))
    assert done.returncode == 2
    assert done.stdout.splitlines() == [
        'k8s_cluster_installation_param.pv_registration_params[1].'
        'pv_manifest_file_path: Files/kubernetes/nfs-pv2.yaml: YAML anchors '
        'and aliases are not accepted (line 6); write the values out']


def test_instantiate_start_refuses_before_any_vm(package_copy):
    package = _storage_package_with(package_copy, '&a [*a]\n')
    body = h.sample('storage')
    request = {'flavour_id': 'storage',
               'additional_params': body['additionalParams']}
    with pytest.raises(exceptions.ValidationError) as info:
        driver.KubernetesMgmtDriver().instantiate_start(
            None, {'id': 'vnf-1'}, request, None, None,
            vnf_package_path=package)
    assert info.value.problems == [(
        pv_manifests.field_path(1),
        'Files/kubernetes/nfs-pv2.yaml: YAML anchors and aliases are not '
        'accepted (line 1); write the values out')]
