"""The sample VNF package parses with tosca-parser and its UserData feeds
the BaseHOT it ships."""

import importlib.util
import os
import types

import pytest
import yaml

from k8s_mgmt.lab import hot

FLAVOURS = ('simple', 'complex', 'podaffinity')
DF_INPUTS = dict(descriptor_id='2807101a-7250-45ae-8908-d3151a302ea9',
                 descriptor_version='1.0', provider='k8s-mgmt',
                 product_name='Sample Kubernetes cluster',
                 software_version='1.0', vnfm_info=['Tacker'],
                 flavour_id='x', flavour_description='x')


def test_top_vnfd_parses(package_dir):
    from toscaparser.tosca_template import ToscaTemplate
    top = os.path.join(package_dir, 'Definitions',
                       'sample_kubernetes_top.vnfd.yaml')
    parsed = ToscaTemplate(top, parsed_params={'selected_flavour': 'complex'})
    assert [n.name for n in parsed.nodetemplates] == ['VNF']


@pytest.mark.parametrize('flavour', FLAVOURS)
def test_flavour_vnfd_parses(package_dir, flavour):
    from toscaparser.tosca_template import ToscaTemplate
    path = os.path.join(package_dir, 'Definitions',
                        'sample_kubernetes_df_%s.yaml' % flavour)
    parsed = ToscaTemplate(path, parsed_params=DF_INPUTS)
    names = {n.name for n in parsed.nodetemplates}
    assert {'masterNode', 'workerNode', 'masterNode_CP1',
            'workerNode_CP2'} <= names
    policies = {p.name for p in parsed.policies}
    assert ('worker_anti_affinity' in policies) == (flavour == 'podaffinity')


def test_tosca_meta_names_top_vnfd(package_dir):
    with open(os.path.join(package_dir, 'TOSCA-Metadata', 'TOSCA.meta')) as f:
        meta = dict(line.split(': ', 1) for line in f.read().splitlines()
                    if line)
    assert os.path.isfile(os.path.join(package_dir,
                                       meta['Entry-Definitions']))


@pytest.mark.parametrize('flavour', FLAVOURS)
def test_basehot_loads_with_only_supported_types(package_dir, flavour):
    folder = os.path.join(package_dir, 'BaseHOT', flavour)
    top = hot.load_template(os.path.join(folder, '%s_hot_top.yaml' % flavour))
    assert top.resources['master_instance']['type'] == hot.SCALING_GROUP
    assert ('vip_CP' in top.resources) == (flavour != 'simple')
    for name in os.listdir(os.path.join(folder, 'nested')):
        hot.load_template(os.path.join(folder, 'nested', name))


def _load_user_data(package_dir):
    pytest.importorskip('tacker.vnfm.lcm_user_data.utils')
    path = os.path.join(package_dir, 'UserData', 'k8s_cluster_user_data.py')
    spec = importlib.util.spec_from_file_location('k8s_user_data', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_user_data_output_fits_basehot(package_dir, tmp_path):
    """Run the package's UserData as Tacker would and build the stack from
    what it returns: the parameters must be exactly what the BaseHOT reads."""
    module = _load_user_data(package_dir)
    folder = os.path.join(package_dir, 'BaseHOT', 'complex')
    with open(os.path.join(folder, 'complex_hot_top.yaml')) as f:
        top = yaml.safe_load(f)
    nested = {}
    for name in os.listdir(os.path.join(folder, 'nested')):
        with open(os.path.join(folder, 'nested', name)) as f:
            nested[name] = yaml.safe_load(f)
    with open(os.path.join(package_dir, 'Definitions',
                           'sample_kubernetes_df_complex.yaml')) as f:
        vnfd = yaml.safe_load(f)
    ext_cp = types.SimpleNamespace(cpd_id='masterNode_CP1', cp_config=[])
    ext_cp2 = types.SimpleNamespace(cpd_id='workerNode_CP2', cp_config=[])
    request = types.SimpleNamespace(
        additional_params={}, instantiation_level_id=None,
        ext_virtual_links=[types.SimpleNamespace(
            resource_id='net-uuid', ext_cps=[ext_cp, ext_cp2])])
    params = module.KubernetesClusterUserData.instantiate(
        base_hot_dict={'heat_template': top, 'nested_hot_templates': nested},
        vnfd_dict=vnfd, inst_req_info=request)
    vdu = params['nfv']['VDU']
    assert vdu['masterNode']['desired_capacity'] == 3
    assert vdu['workerNode']['desired_capacity'] == 1
    assert vdu['masterNode']['flavor'] == 'm1.medium'
    assert params['nfv']['CP']['masterNode_CP1']['network'] == 'net-uuid'

    from k8s_mgmt.lab import cloud as lab_cloud
    cloud = lab_cloud.LabCloud(package_dir)
    stack_id = cloud.create_stack('complex', params)
    roles = sorted(s['resource_name'] for s in cloud.servers(stack_id))
    assert roles == ['masterNode'] * 3 + ['workerNode']


def test_user_data_instantiation_level(package_dir):
    module = _load_user_data(package_dir)
    with open(os.path.join(package_dir, 'Definitions',
                           'sample_kubernetes_df_complex.yaml')) as f:
        vnfd = yaml.safe_load(f)
    assert module.initial_instances(vnfd, 'instantiation_level_2') == {
        'masterNode': 5, 'workerNode': 5}
