"""``k8s-mgmt package build``: hashes, determinism, the driver artifact.

Tacker's own CSAR loader and MgmtDriver hash check are run on the built
package in a separate process (importing Tacker swaps green locks into
``threading``): tests/helpers/tacker_csar_check.py.
"""

import hashlib
import importlib.util
import inspect
import io
import os
import shutil
import subprocess
import sys
import zipfile

import pytest
import yaml

from k8s_mgmt.driver import KubernetesMgmtDriver
from k8s_mgmt import package
from k8s_mgmt import shipped
from tests.helpers import tacker_csar_check

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SAMPLES = os.path.join(REPO, 'k8s_mgmt', 'samples', 'requests')
REPO_SAMPLE = os.path.join(REPO, 'k8s_mgmt', 'samples', 'vnf_package')
FLAVOURS = ('simple', 'complex', 'podaffinity', 'storage')
HOOKS = ('instantiate_start', 'instantiate_end', 'heal_start', 'heal_end',
         'scale_start', 'scale_end', 'terminate_start', 'terminate_end')


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, '-m', 'k8s_mgmt'] + list(args),
                          capture_output=True, text=True, timeout=120,
                          cwd=cwd or REPO)


def zip_members(path):
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.fixture
def built(tmp_path):
    out = tmp_path / 'pkg.zip'
    package.build(output=str(out))
    return out


def test_every_file_is_listed_with_its_sha256(built):
    members = zip_members(built)
    entries = package.parse_tosca_meta(members[package.TOSCA_META])
    assert set(entries) == set(members) - {package.TOSCA_META}
    for name, (algorithm, digest) in entries.items():
        assert algorithm == 'SHA-256'
        assert digest == hashlib.sha256(members[name]).hexdigest(), name
    header = members[package.TOSCA_META].decode().split('\n\n')[0]
    assert ('Entry-Definitions: Definitions/sample_kubernetes_top.vnfd.yaml'
            in header)


def test_driver_artifact_is_the_installed_module_and_scripts_are_copied(
        built):
    members = zip_members(built)
    with open(inspect.getsourcefile(KubernetesMgmtDriver), 'rb') as handle:
        assert members[package.DRIVER_ARTIFACT] == handle.read()
    for script in shipped.SCRIPTS:
        scripts_dir = os.path.join(REPO, 'k8s_mgmt', 'scripts')
        with open(os.path.join(scripts_dir, script), 'rb') as handle:
            assert members['Scripts/' + script] == handle.read()
    with zipfile.ZipFile(built) as archive:
        mode = archive.getinfo('Scripts/install_k8s_cluster.sh').external_attr
    assert (mode >> 16) & 0o777 == 0o755


def test_a_missing_node_script_fails_the_build(tmp_path, monkeypatch):
    """An installation without the storage script builds no package (it
    would fail only when the driver sets up a storage server)."""
    root = tmp_path / 'k8s_mgmt'
    shutil.copytree(os.path.join(REPO, 'k8s_mgmt', 'scripts'),
                    root / 'scripts')
    (root / 'scripts' / shipped.STORAGE_SCRIPT).unlink()
    monkeypatch.setattr(shipped, '_root', lambda: root)
    with pytest.raises(package.PackageError) as caught:
        package.assemble(str(REPO_SAMPLE))
    assert str(caught.value) == (
        'this installation of k8s-mgmt lacks the node script '
        'setup_storage.sh (looked in %s)'
        % (root / 'scripts' / 'setup_storage.sh'))


def test_storage_flavour_files(built):
    """The storage flavour's VNFD, BaseHOT, PV manifests and script are in
    the CSAR, and its VNFD and BaseHOT agree on the storage server."""
    members = zip_members(built)
    for name in ('Definitions/sample_kubernetes_df_storage.yaml',
                 'BaseHOT/storage/storage_hot_top.yaml',
                 'BaseHOT/storage/nested/storage_nested_master.yaml',
                 'BaseHOT/storage/nested/storage_nested_worker.yaml',
                 'Scripts/setup_storage.sh'):
        assert name in members, name
    with zipfile.ZipFile(built) as archive:
        mode = archive.getinfo('Scripts/setup_storage.sh').external_attr
    assert (mode >> 16) & 0o777 == 0o755
    for index in (1, 2, 3):
        manifest = yaml.safe_load(
            members['Files/kubernetes/nfs-pv%d.yaml' % index])
        assert manifest['kind'] == 'PersistentVolume'
        assert manifest['spec']['nfs'] == {
            'server': '0.0.0.0', 'path': '/volume/nfs/pv%d' % index}
        assert manifest['spec']['accessModes'] == ['ReadWriteMany']
        assert manifest['spec']['storageClassName'] == ''
    vnfd = yaml.safe_load(
        members['Definitions/sample_kubernetes_df_storage.yaml'])
    nodes = vnfd['topology_template']['node_templates']
    size = nodes['storage_server_volume']['properties'][
        'virtual_block_storage_data']['size_of_storage']
    top = yaml.safe_load(members['BaseHOT/storage/storage_hot_top.yaml'])
    resources = top['resources']
    assert size == '%d GB' % resources['storage_server_volume'][
        'properties']['size']
    assert resources['storage_server']['properties'][
        'block_device_mapping_v2'] == [
            {'device_name': 'vdb', 'boot_index': -1,
             'volume_id': {'get_resource': 'storage_server_volume'}}]
    # No scaling aspect, no group: the storage server is never scaled.
    scaled = [target for policy in vnfd['topology_template']['policies']
              for body in policy.values()
              if body['type'] == 'tosca.policies.nfv.VduScalingAspectDeltas'
              for target in body['targets']]
    assert sorted(scaled) == ['masterNode', 'workerNode']
    assert resources['storage_server']['type'] == 'OS::Nova::Server'


def test_same_inputs_same_bytes_whatever_the_mtimes(tmp_path):
    source = tmp_path / 'src'
    shutil.copytree(str(shipped.sample_package()), source)
    first = package.zip_bytes(package.assemble(str(source)))
    for path in source.rglob('*'):
        os.utime(path, (1e9, 1e9))
    (source / 'Definitions' / '__pycache__').mkdir()
    (source / 'Definitions' / '__pycache__' / 'x.pyc').write_bytes(b'junk')
    assert package.zip_bytes(package.assemble(str(source))) == first
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        names = archive.namelist()
        assert names == sorted(names)
        assert {i.date_time for i in archive.infolist()} == {
            package.ZIP_TIMESTAMP}


def test_a_changed_file_changes_only_its_own_hash(tmp_path):
    source = tmp_path / 'src'
    shutil.copytree(str(shipped.sample_package()), source)
    before = package.parse_tosca_meta(
        package.assemble(str(source))[package.TOSCA_META])
    hot = source / 'BaseHOT' / 'simple' / 'simple_hot_top.yaml'
    hot.write_text(hot.read_text() + '\n# changed\n')
    after = package.parse_tosca_meta(
        package.assemble(str(source))[package.TOSCA_META])
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {'BaseHOT/simple/simple_hot_top.yaml'}


@pytest.mark.parametrize('flavour', FLAVOURS)
def test_vnfd_sends_every_hook_to_the_driver_artifact(tmp_path, flavour):
    files = package.build(output_dir=str(tmp_path / 'pkg'))
    vnfd = yaml.safe_load(files['Definitions/sample_kubernetes_df_%s.yaml'
                                % flavour])
    vnf = vnfd['topology_template']['node_templates']['VNF']
    hooks = vnf['interfaces']['Vnflcm']
    assert {h: hooks[h]['implementation'] for h in HOOKS} == dict.fromkeys(
        HOOKS, 'mgmt-drivers-kubernetes')
    artifact = vnf['artifacts']['mgmt-drivers-kubernetes']
    assert artifact['type'] == 'tosca.artifacts.Implementation.Python'
    # Tacker joins the package root with this path.
    on_disk = tmp_path / 'pkg' / artifact['file']
    assert on_disk.read_bytes() == files[package.DRIVER_ARTIFACT]


def test_cli_builds_zip_and_dir_that_validate_accepts(tmp_path):
    proc = cli('package', 'build', '--output', str(tmp_path / 'p.zip'),
               '--output-dir', str(tmp_path / 'p'))
    assert proc.returncode == 0, proc.stderr
    assert 'sha256' in proc.stdout
    assert zip_members(tmp_path / 'p.zip') == {
        str(p.relative_to(tmp_path / 'p')): p.read_bytes()
        for p in (tmp_path / 'p').rglob('*') if p.is_file()}
    for flavour in FLAVOURS:
        request = os.path.join(SAMPLES, '%s.json' % flavour)
        ok = cli('validate', '--package-dir', str(tmp_path / 'p'), request)
        assert ok.returncode == 0, ok.stdout + ok.stderr
    # The source tree alone lacks the scripts: validate must notice.
    bare = cli('validate', '--package-dir', str(shipped.sample_package()),
               os.path.join(SAMPLES, 'simple.json'))
    assert bare.returncode == 2 and 'script_path' in bare.stdout


def test_cli_default_output_and_bad_source(tmp_path):
    proc = cli('package', 'build', cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / 'k8s_mgmt_vnf_package.zip').is_file()
    bad = cli('package', 'build', '--source', str(tmp_path),
              '--output', str(tmp_path / 'x.zip'))
    assert bad.returncode == 1
    assert bad.stderr.count('\n') == 1 and 'TOSCA.meta' in bad.stderr
    assert 'Traceback' not in bad.stderr


def test_unpacking_refuses_to_replace_a_foreign_directory(tmp_path):
    foreign = tmp_path / 'home'
    foreign.mkdir()
    (foreign / 'precious.txt').write_text('keep me')
    with pytest.raises(package.PackageError):
        package.build(output_dir=str(foreign))
    assert (foreign / 'precious.txt').read_text() == 'keep me'
    package.build(output_dir=str(tmp_path / 'pkg'))
    package.build(output_dir=str(tmp_path / 'pkg'))  # a rebuild replaces
    assert not [p for p in tmp_path.iterdir() if p.name.startswith('.')]


def test_tackers_own_checks_accept_the_package(tmp_path):
    if importlib.util.find_spec('tacker') is None:
        pytest.skip('tacker extra not installed')
    files = package.build(output=str(tmp_path / 'p.zip'),
                          output_dir=str(tmp_path / 'p'))
    tampered = dict(files)
    tampered['Scripts/configure_lb.sh'] += b'\n# tampered\n'
    (tmp_path / 't.zip').write_bytes(package.zip_bytes(tampered))
    report = tacker_csar_check.run(tmp_path / 'p.zip', tmp_path / 't.zip',
                                   pkg_dir=tmp_path / 'p')
    assert report['flavours'] == sorted(FLAVOURS + ('kubespray', 'registry'))
    assert report['artifacts'] == sorted(set(files) - {package.TOSCA_META})
    assert 'Scripts/configure_lb.sh' in report['tampered']
    assert report['chosen'] == 'mgmt-drivers-kubernetes'
    assert report['edited'] == 'refused'
