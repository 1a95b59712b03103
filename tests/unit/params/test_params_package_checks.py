"""With a package directory: what the request's UserData keys, cluster CPs
and extVirtualLinks name must be in the package (the checks without a
package are in test_params_request_body.py)."""

import glob
import json
import logging
import os
import shutil
import sys

import pytest

from k8s_mgmt import context
from k8s_mgmt import params

import params_helpers as h

SAMPLE_FILES = sorted(glob.glob(os.path.join(h.SAMPLES, '*.json')))
UD, UDC, sample, changed, lines = (h.UD, h.UDC, h.sample, h.changed,
                                   h.lines)
SCRIPT = 'UserData/k8s_cluster_user_data.py'
M = h.ROOT + '.master_node'
W = h.ROOT + '.worker_node'


@pytest.fixture(autouse=True)
def _quiet_logs(caplog):
    caplog.set_level(logging.ERROR, logger='k8s_mgmt.params')


def write(package_dir, relative, text):
    path = os.path.join(package_dir, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)


# -- the samples, as shipped and as built --------------------------------


@pytest.mark.parametrize('path', SAMPLE_FILES, ids=os.path.basename)
def test_sample_is_valid_with_the_built_package(path, built_package):
    body = h.load_json(path)
    result = params.load_request(body, package_dir=built_package)
    assert result.warnings == ()
    assert result.flavour == body['flavourId']


@pytest.mark.parametrize('path', SAMPLE_FILES, ids=os.path.basename)
def test_sample_cli_with_the_built_package(path, built_package):
    done = h.validate_cli(path, '--package-dir', built_package)
    assert done.returncode == 0, done.stdout
    assert done.stderr == ''
    assert ', 0 warning(s)' in done.stdout


@pytest.mark.parametrize('path', SAMPLE_FILES, ids=os.path.basename)
def test_sample_through_the_driver_entry_point(path, built_package):
    """context.build validates additionalParams and the request's
    extVirtualLinks (Tacker's snake_case form) against the package."""
    body = h.load_json(path)
    request = {'flavour_id': body['flavourId'],
               'additional_params': body['additionalParams'],
               'ext_virtual_links': [
                   {'id': link['id'], 'resource_id': link['resourceId'],
                    'ext_cps': [{'cpd_id': cp['cpdId']}
                                for cp in link['extCps']]}
                   for link in body['extVirtualLinks']]}
    built = context.build(
        'instantiate', 'instantiate_start', None, {'id': 'vnf-1'}, request,
        None, {'vnf_package_path': built_package},
        additional_params=request['additional_params'])
    assert built.params.warnings == ()
    request['ext_virtual_links'][0]['ext_cps'][0]['cpd_id'] = 'nope_CP'
    problems = h.problems_of(
        context.build, 'instantiate', 'instantiate_start', None,
        {'id': 'vnf-1'}, request, None, {'vnf_package_path': built_package},
        additional_params=request['additional_params'])
    assert h.paths(problems) == ['extVirtualLinks[0].extCps[0].cpdId']


# -- the UserData script in the package ----------------------------------


def test_user_data_class_missing(built_package):
    body = changed(sample(), 'additionalParams|lcm-operation-user-data-class',
                   'KubernetesClusterUserDta')
    assert lines(body, package_dir=built_package) == [
        UDC + ': UserData/k8s_cluster_user_data.py defines no class '
              'KubernetesClusterUserDta']


def test_user_data_file_missing(built_package):
    body = changed(sample(), 'additionalParams|lcm-operation-user-data',
                   './UserData/missing.py')
    assert lines(body, package_dir=built_package) == [
        UD + ": no such file in the VNF package %r: 'UserData/missing.py'"
        % built_package]


def test_user_data_class_must_be_at_module_level(package_copy):
    write(package_copy, 'UserData/nested.py',
          'def factory():\n    class Inner:\n        pass\n'
          'class Outer:\n    class Inner2:\n        pass\n')
    body = changed(sample(), 'additionalParams|lcm-operation-user-data',
                   'UserData/nested.py')
    for name in ('Inner', 'Inner2'):
        body['additionalParams']['lcm-operation-user-data-class'] = name
        assert lines(body, package_dir=package_copy) == [
            UDC + ': UserData/nested.py defines no class %s' % name]
    body['additionalParams']['lcm-operation-user-data-class'] = 'Outer'
    assert params.load_request(body, package_dir=package_copy).warnings == ()


def test_user_data_syntax_error(package_copy):
    source = 'class Broken(:\n    pass\n'
    write(package_copy, SCRIPT, source)
    with pytest.raises(SyntaxError) as info:
        compile(source, SCRIPT, 'exec')
    assert lines(sample(), package_dir=package_copy) == [
        UD + ': %s is not valid Python (line %d: %s)'
        % (SCRIPT, info.value.lineno, info.value.msg)]


def test_user_data_with_nul_bytes(package_copy):
    with open(os.path.join(package_copy, SCRIPT), 'wb') as handle:
        handle.write(b'class KubernetesClusterUserData:\n    x = "\0"\n')
    [line] = lines(sample(), package_dir=package_copy)
    assert line.startswith(UD + ': %s is not valid Python (' % SCRIPT)


def test_user_data_is_never_imported_or_run(package_copy, tmp_path):
    marker = tmp_path / 'ran'
    write(package_copy, SCRIPT,
          'open(%r, "w").close()\nraise SystemExit(3)\n\n'
          'class KubernetesClusterUserData:\n    pass\n' % str(marker))
    result = params.load_request(sample(), package_dir=package_copy)
    assert result.warnings == ()
    assert not marker.exists()
    assert 'UserData.k8s_cluster_user_data' not in sys.modules
    assert 'k8s_cluster_user_data' not in sys.modules


# -- cluster CPs against the BaseHOT -------------------------------------


@pytest.mark.parametrize('field', [
    'master_node|ssh_cp_name', 'master_node|nic_cp_name',
    'master_node|cluster_cp_name', 'worker_node|ssh_cp_name',
    'worker_node|nic_cp_name'])
def test_cluster_cp_not_in_the_base_hot(field, built_package):
    body = changed(sample('complex'), 'additionalParams|%s|%s'
                   % (h.ROOT, field), 'masterNode_CPX')
    assert lines(body, package_dir=built_package) == [
        '%s.%s: masterNode_CPX is not a resource of BaseHOT/complex'
        % (h.ROOT, field.replace('|', '.'))]


PV1 = '''apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv1
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteMany]
  nfs:
    server: 0.0.0.0
    path: /volume/nfs/pv1
'''


def test_storage_external_lb_and_pv_cps(package_copy):
    body = sample('simple')
    root = body['additionalParams'][h.ROOT]
    root['storage_server'] = h.storage_section()
    root['pv_registration_params'] = [
        {'pv_manifest_file_path': 'Files/kubernetes/pv1.yaml',
         'nfs_server_cp': 'storage_server_CP'}]
    write(package_copy, 'Files/kubernetes/pv1.yaml', PV1)
    root['external_lb_param'] = {
        'ssh_cp_name': 'externalLB_CP1', 'ssh_username': 'ubuntu',
        'ssh_password': h.PASSWORD, 'script_path': 'Scripts/configure_lb.sh'}
    assert lines(body, package_dir=package_copy) == [
        h.ROOT + '.storage_server.ssh_cp_name: storage_server_CP is not a '
                 'resource of BaseHOT/simple',
        h.ROOT + '.external_lb_param.ssh_cp_name: externalLB_CP1 is not a '
                 'resource of BaseHOT/simple',
        h.ROOT + '.pv_registration_params[0].nfs_server_cp: '
                 'storage_server_CP is not a resource of BaseHOT/simple',
        h.ROOT + '.storage_server.cinder_volume_setup_params[0].'
                 'volume_resource_id: storage_server_volume is not a '
                 'resource of BaseHOT/simple']
    # Resources of the top template and of a nested one both count.
    write(package_copy, 'BaseHOT/simple/nested/storage.yaml',
          'heat_template_version: 2016-10-14\nresources:\n'
          '  storage_server_CP:\n    type: OS::Neutron::Port\n'
          '  storage_server_volume:\n    type: OS::Cinder::Volume\n')
    top = os.path.join(package_copy, 'BaseHOT/simple/simple_hot_top.yaml')
    with open(top, encoding='utf-8') as handle:
        text = handle.read()
    text = text.replace('\nresources:\n', '\nresources:\n  externalLB_CP1:\n'
                        '    type: OS::Neutron::Port\n', 1)
    with open(top, 'w', encoding='utf-8') as handle:
        handle.write(text)
    assert params.load_request(body, package_dir=package_copy).warnings == ()


# -- the storage flavour: its manifests and its volume --------------------


S = h.ROOT + '.storage_server'
PV = h.ROOT + '.pv_registration_params'


def test_storage_sample_names_what_its_package_holds(built_package):
    body = sample('storage')
    assert params.load_request(body, package_dir=built_package).warnings == ()
    assert lines(changed(
        body, 'additionalParams|%s|pv_registration_params|2|'
        'pv_manifest_file_path' % h.ROOT, 'Files/kubernetes/nfs-pv9.yaml'),
        package_dir=built_package) == [
        PV + "[2].pv_manifest_file_path: no such file in the VNF package "
             "%r: 'Files/kubernetes/nfs-pv9.yaml'" % built_package]


def test_volume_resource_id_must_be_a_cinder_volume_of_the_base_hot(
        built_package):
    where = ('additionalParams|%s|storage_server|cinder_volume_setup_params|'
             '0|volume_resource_id' % h.ROOT)
    field = S + '.cinder_volume_setup_params[0].volume_resource_id'
    assert lines(changed(sample('storage'), where, 'storage_volume'),
                 package_dir=built_package) == [
        field + ': storage_volume is not a resource of BaseHOT/storage']
    assert lines(changed(sample('storage'), where, 'storage_server_CP'),
                 package_dir=built_package) == [
        field + ": storage_server_CP has type 'OS::Neutron::Port' in "
                "BaseHOT/storage, not OS::Cinder::Volume"]


def test_missing_base_hot_directory_names_the_flavour(package_copy):
    shutil.rmtree(os.path.join(package_copy, 'BaseHOT', 'complex'))
    assert lines(sample('complex'), package_dir=package_copy) == [
        'flavourId: no BaseHOT/complex directory in the VNF package']


def test_unknown_flavour_with_a_package(built_package):
    body = changed(sample('simple'), 'flavourId', 'tiny')
    assert lines(body, package_dir=built_package) == [
        'flavourId: no BaseHOT/tiny directory in the VNF package',
        "flavourId: no VNFD in the package's Definitions/ has flavour_id "
        "tiny"]


def test_flavour_that_cannot_be_a_directory(built_package):
    body = changed(sample('simple'), 'flavourId', '../simple')
    assert lines(body, package_dir=built_package) == [
        "flavourId: cannot name a BaseHOT directory: '../simple'"]


def test_base_hot_is_read_where_tacker_reads_it(package_copy):
    """Templates directly in BaseHOT/<flavour>/ and in its nested/; an
    empty one is no problem, one in another folder does not count."""
    write(package_copy, 'BaseHOT/complex/nested/empty.yaml', '')
    write(package_copy, 'BaseHOT/complex/other/extra.yaml',
          'resources:\n  masterNode_CPX:\n    type: OS::Neutron::Port\n')
    body = changed(sample('complex'), 'additionalParams|%s|master_node|'
                   'ssh_cp_name' % h.ROOT, 'masterNode_CPX')
    assert lines(body, package_dir=package_copy) == [
        M + '.ssh_cp_name: masterNode_CPX is not a resource of '
            'BaseHOT/complex']


def test_base_hot_without_a_top_template(package_copy):
    os.remove(os.path.join(package_copy, 'BaseHOT', 'complex',
                           'complex_hot_top.yaml'))
    assert lines(sample('complex'), package_dir=package_copy) == [
        'flavourId: no top template (*.yaml) in BaseHOT/complex of the VNF '
        'package']


def test_broken_vnfd_yaml_is_named_once(package_copy):
    write(package_copy, 'Definitions/sample_kubernetes_df_complex.yaml',
          'topology_template:\n  substitution_mappings: {flavour_id: '
          'complex\n')
    [line] = lines(sample('complex'), package_dir=package_copy)
    assert line.startswith(
        'flavourId: Definitions/sample_kubernetes_df_complex.yaml in the VNF '
        'package is not valid YAML (line ')


def test_broken_base_hot_yaml_is_named(package_copy):
    write(package_copy, 'BaseHOT/complex/nested/complex_nested_master.yaml',
          'resources:\n  masterNode: [unclosed\n')
    assert lines(sample('complex'), package_dir=package_copy) == [
        'flavourId: BaseHOT/complex/nested/complex_nested_master.yaml in the '
        'VNF package is not valid YAML (line 3)']


# -- extVirtualLinks against the VNFD ------------------------------------


def test_ext_cp_not_in_the_vnfd(built_package):
    body = changed(sample('complex'),
                   'extVirtualLinks|1|extCps|0|cpdId', 'workerNode_CP9')
    assert lines(body, package_dir=built_package) == [
        "extVirtualLinks[1].extCps[0].cpdId: workerNode_CP9 is not a CP of "
        "flavour complex's VNFD (its CPs: masterNode_CP1, workerNode_CP2)"]
    # Without the package only the shape is checked.
    assert params.load_request(body).warnings == ()


def test_a_vdu_is_not_a_cp(built_package):
    body = changed(sample('simple'),
                   'extVirtualLinks|0|extCps|0|cpdId', 'masterNode')
    assert lines(body, package_dir=built_package) == [
        "extVirtualLinks[0].extCps[0].cpdId: masterNode is not a CP of "
        "flavour simple's VNFD (its CPs: masterNode_CP1, workerNode_CP2)"]


def test_vnf_ext_cp_counts_and_other_flavours_do_not(package_copy):
    path = os.path.join(package_copy, 'Definitions',
                        'sample_kubernetes_df_complex.yaml')
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    text = text.replace('\n    workerNode_CP2:\n', '\n    external_CP:\n'
                        '      type: tosca.nodes.nfv.VnfExtCp\n'
                        '\n    workerNode_CP2:\n', 1)
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)
    body = changed(sample('complex'), 'extVirtualLinks|1|extCps|0|cpdId',
                   'external_CP')
    assert params.load_request(body, package_dir=package_copy).warnings == ()
    body = changed(sample('simple'), 'extVirtualLinks|1|extCps|0|cpdId',
                   'external_CP')
    assert lines(body, package_dir=package_copy) == [
        "extVirtualLinks[1].extCps[0].cpdId: external_CP is not a CP of "
        "flavour simple's VNFD (its CPs: masterNode_CP1, workerNode_CP2)"]


def test_missing_vnfd_of_the_flavour(package_copy):
    os.remove(os.path.join(package_copy, 'Definitions',
                           'sample_kubernetes_df_podaffinity.yaml'))
    assert lines(sample('podaffinity'), package_dir=package_copy) == [
        "flavourId: no VNFD in the package's Definitions/ has flavour_id "
        "podaffinity"]


# -- the CLI prints the lines ---------------------------------------------


def test_cli_prints_every_package_problem(tmp_path, built_package):
    body = sample('complex')
    body['additionalParams']['lcm-operation-user-data-class'] = (
        'KubernetesClusterUserDta')
    body['additionalParams'][h.ROOT]['master_node']['ssh_cp_name'] = (
        'masterNode_CPX')
    body['extVirtualLinks'][1]['extCps'][0]['cpdId'] = 'workerNode_CP9'
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(body))
    done = h.validate_cli(str(path), '--package-dir', built_package)
    assert done.returncode == 2
    assert sorted(done.stdout.splitlines()) == sorted([
        UDC + ': UserData/k8s_cluster_user_data.py defines no class '
              'KubernetesClusterUserDta',
        M + '.ssh_cp_name: masterNode_CPX is not a resource of '
            'BaseHOT/complex',
        "extVirtualLinks[1].extCps[0].cpdId: workerNode_CP9 is not a CP of "
        "flavour complex's VNFD (its CPs: masterNode_CP1, workerNode_CP2)"])
    assert done.stderr.splitlines() == [
        '%s: 3 problem(s)' % path]


def test_cli_missing_base_hot(package_copy, tmp_path):
    shutil.rmtree(os.path.join(package_copy, 'BaseHOT', 'podaffinity'))
    done = h.validate_cli(os.path.join(h.SAMPLES, 'podaffinity.json'),
                          '--package-dir', package_copy)
    assert done.returncode == 2
    assert done.stdout.splitlines() == [
        'flavourId: no BaseHOT/podaffinity directory in the VNF package']


def test_cli_package_dir_must_be_a_directory(tmp_path):
    missing = str(tmp_path / 'nope')
    done = h.validate_cli(os.path.join(h.SAMPLES, 'simple.json'),
                          '--package-dir', missing)
    assert done.returncode == 1
    assert done.stdout == ''
    assert done.stderr.splitlines() == [
        'k8s-mgmt validate: --package-dir %s: not a directory' % missing]
