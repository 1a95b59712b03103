"""The sample VNF package parses with tosca-parser and its UserData feeds
the BaseHOT it ships."""

import importlib.util
import os

import pytest
import yaml

from k8s_mgmt_lab import hot

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


def test_user_data_instantiation_level(package_dir):
    module = _load_user_data(package_dir)
    with open(os.path.join(package_dir, 'Definitions',
                           'sample_kubernetes_df_complex.yaml')) as f:
        vnfd = yaml.safe_load(f)
    assert module.initial_instances(vnfd, 'instantiation_level_2') == {
        'masterNode': 5, 'workerNode': 5}
