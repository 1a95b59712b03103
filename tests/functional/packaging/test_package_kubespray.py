"""The sample package's kubespray flavour: VNFD, BaseHOT, request, the
kubespray driver's artifact, and the driver the lab loads for it."""

import inspect
import os
import subprocess
import sys

import pytest
import yaml

from k8s_mgmt.driver import KubernetesMgmtDriver
from k8s_mgmt.kubespray.driver import KubesprayMgmtDriver
from k8s_mgmt import package
from k8s_mgmt import params
from k8s_mgmt import shipped

HOOKS = ('instantiate_start', 'instantiate_end', 'heal_start', 'heal_end',
         'scale_start', 'scale_end', 'terminate_start', 'terminate_end')
DF = 'Definitions/sample_kubernetes_df_kubespray.yaml'
HOT = 'BaseHOT/kubespray/'
DF_INPUTS = dict(descriptor_id='2807101a-7250-45ae-8908-d3151a302ea9',
                 descriptor_version='1.0', provider='k8s-mgmt',
                 product_name='Sample Kubernetes cluster',
                 software_version='1.0', vnfm_info=['Tacker'],
                 flavour_id='kubespray', flavour_description='x')


@pytest.fixture(scope='module')
def pkg(tmp_path_factory):
    out = tmp_path_factory.mktemp('pkg') / 'p'
    files = package.build(output_dir=str(out))
    return out, files


def test_every_hook_goes_to_the_kubespray_driver_artifact(pkg):
    out, files = pkg
    vnf = yaml.safe_load(files[DF])['topology_template'][
        'node_templates']['VNF']
    hooks = vnf['interfaces']['Vnflcm']
    assert {h: hooks[h]['implementation'] for h in HOOKS} == dict.fromkeys(
        HOOKS, 'mgmt-drivers-kubespray')
    artifact = vnf['artifacts']['mgmt-drivers-kubespray']
    assert artifact['file'] == package.KUBESPRAY_DRIVER_ARTIFACT
    with open(inspect.getsourcefile(KubesprayMgmtDriver), 'rb') as handle:
        module = handle.read()
    assert (out / artifact['file']).read_bytes() == module
    assert files[package.KUBESPRAY_DRIVER_ARTIFACT] == module
    with open(inspect.getsourcefile(KubernetesMgmtDriver), 'rb') as handle:
        assert files[package.DRIVER_ARTIFACT] == handle.read() != module


def test_the_external_lb_script_is_shipped_in_scripts(pkg):
    _, files = pkg
    name = shipped.EXTERNAL_LB_SCRIPT
    assert name in shipped.SCRIPTS
    assert files['Scripts/' + name] == shipped.script(name).read_bytes()


def test_the_top_vnfd_lists_the_flavour(pkg):
    out, _ = pkg
    from toscaparser.tosca_template import ToscaTemplate
    top = out / 'Definitions' / 'sample_kubernetes_top.vnfd.yaml'
    parsed = ToscaTemplate(str(top),
                           parsed_params={'selected_flavour': 'kubespray'})
    assert [n.name for n in parsed.nodetemplates] == ['VNF']
    imports = yaml.safe_load(top.read_text())['imports']
    assert 'sample_kubernetes_df_kubespray.yaml' in imports


def test_the_flavour_vnfd_parses_with_tosca_parser(pkg):
    out, _ = pkg
    from toscaparser.tosca_template import ToscaTemplate
    parsed = ToscaTemplate(str(out / DF), parsed_params=DF_INPUTS)
    nodes = {n.name: n for n in parsed.nodetemplates}
    assert {'masterNode', 'workerNode', 'externalLB', 'masterNode_CP1',
            'workerNode_CP2', 'externalLB_CP1', 'externalLB_CP2'} <= set(
        nodes)
    raw = yaml.safe_load((out / DF).read_text())['topology_template']
    profile = raw['node_templates']['masterNode']['properties'][
        'vdu_profile']
    assert profile['min_number_of_instances'] == 1  # one master allowed
    lb = raw['node_templates']['externalLB']['properties']['vdu_profile']
    assert lb['max_number_of_instances'] == 1
    aspects = [p for p in raw['policies'] if 'scaling_aspects' in p][0]
    aspects = aspects['scaling_aspects']['properties']['aspects']
    assert set(aspects) == {'master_instance', 'worker_instance'}
    # The masters' aspect only makes Tacker count three VNFCs: it never
    # scales.
    assert aspects['master_instance']['max_scale_level'] == 0


def test_the_basehot_has_the_lb_vm_and_no_vip(pkg):
    out, _ = pkg
    top = yaml.safe_load((out / HOT / 'kubespray_hot_top.yaml').read_text())
    res = top['resources']
    assert res['externalLB']['type'] == 'OS::Nova::Server'
    assert [n['port']['get_resource'] for n in
            res['externalLB']['properties']['networks']] == [
        'externalLB_CP1', 'externalLB_CP2']
    assert 'vip_CP' not in res
    master = yaml.safe_load((out / HOT / 'nested' /
                             'kubespray_nested_master.yaml').read_text())
    assert 'allowed_address_pairs' not in master['resources'][
        'masterNode_CP1']['properties']


def test_the_sample_request_validates_with_the_built_package(pkg):
    out, _ = pkg
    body = shipped.sample_request('kubespray')
    cluster = params.load_request(body, package_dir=str(out))
    assert cluster.flavour == 'kubespray' and cluster.uses_ansible
    assert not [w for w in cluster.warnings if w[0] == 'flavourId']
    assert cluster.external_lb_param.ssh_cp_name == 'externalLB_CP1'
    assert cluster.external_lb_param.script_path == (
        'Scripts/configure_external_lb.sh')
    assert [c['cpdId'] for link in body['extVirtualLinks']
            for c in link['extCps']] == ['masterNode_CP1', 'workerNode_CP2',
                                         'externalLB_CP1']
    proc = subprocess.run(
        [sys.executable, '-m', 'k8s_mgmt', 'validate', '--package-dir',
         str(out), os.path.join(os.path.dirname(shipped.script(
             shipped.INSTALL_SCRIPT).parent), 'samples', 'requests',
             'kubespray.json')], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'kubespray mode' in proc.stdout and '0 warning' in proc.stdout


@pytest.mark.parametrize('flavour, cls', [
    ('kubespray', KubesprayMgmtDriver), ('complex', KubernetesMgmtDriver)])
def test_the_lab_loads_the_driver_the_vnfd_names(pkg, flavour, cls):
    drivers = pytest.importorskip('k8s_mgmt_lab.conductor.drivers')
    out, _ = pkg
    loaded = drivers.load(str(out), flavour)
    assert type(loaded) is cls
