"""PersistentVolume manifests: read from the package, checked, and turned
into the objects the driver creates (never edited as text)."""

import copy
import os

import pytest
import yaml

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
     'spec.nfs.path /volume/nfs/pv3 is not one of the storage server\'s '
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
        (field(4), 'Files/big.yaml: larger than %d bytes'
         % pv_manifests.MAX_BYTES)]


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
