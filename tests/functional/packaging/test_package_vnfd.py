"""The sample VNF package's VNFDs parse with tosca-parser (the top VNFD,
each flavour's, the storage flavour's server, volume and CP), TOSCA.meta
names the top VNFD, and the package's UserData reads the instantiation
levels and fills the storage flavour's parameters from its sample request.

(Moved from the lab's cloud tests when the lab's own Heat went: none of
this needs a cloud. That real Heat accepts every flavour's BaseHOT is
tests/functional/openstack/test_flavour_stacks.py.)
"""

import importlib.util
import os

import pytest
import yaml

from k8s_mgmt import package
from k8s_mgmt import shipped

PACKAGE = os.path.abspath(os.path.join(
    os.path.dirname(__file__), '..', '..', '..', 'k8s_mgmt', 'samples',
    'vnf_package'))
FLAVOURS = ('simple', 'complex', 'podaffinity', 'storage')
DF_INPUTS = dict(descriptor_id='2807101a-7250-45ae-8908-d3151a302ea9',
                 descriptor_version='1.0', provider='k8s-mgmt',
                 product_name='Sample Kubernetes cluster',
                 software_version='1.0', vnfm_info=['Tacker'],
                 flavour_id='x', flavour_description='x')


def _flavour_vnfd(flavour):
    from toscaparser.tosca_template import ToscaTemplate
    path = os.path.join(PACKAGE, 'Definitions',
                        'sample_kubernetes_df_%s.yaml' % flavour)
    return ToscaTemplate(path, parsed_params=dict(DF_INPUTS,
                                                  flavour_id=flavour))


def test_top_vnfd_parses():
    from toscaparser.tosca_template import ToscaTemplate
    top = os.path.join(PACKAGE, 'Definitions',
                       'sample_kubernetes_top.vnfd.yaml')
    parsed = ToscaTemplate(top, parsed_params={'selected_flavour': 'complex'})
    assert [n.name for n in parsed.nodetemplates] == ['VNF']


@pytest.mark.parametrize('flavour', FLAVOURS)
def test_flavour_vnfd_parses(flavour):
    parsed = _flavour_vnfd(flavour)
    names = {n.name for n in parsed.nodetemplates}
    assert {'masterNode', 'workerNode', 'masterNode_CP1',
            'workerNode_CP2'} <= names
    policies = {p.name for p in parsed.policies}
    assert ('worker_anti_affinity' in policies) == (flavour == 'podaffinity')


def test_the_storage_vnfd_has_the_storage_server_and_its_volume():
    nodes = {n.name: n for n in _flavour_vnfd('storage').nodetemplates}
    assert nodes['storage_server_volume'].type == (
        'tosca.nodes.nfv.Vdu.VirtualBlockStorage')
    assert nodes['storage_server_CP'].type == 'tosca.nodes.nfv.VduCp'
    assert {'virtual_storage': 'storage_server_volume'} in (
        nodes['storage_server'].requirements)
    assert {'virtual_binding': 'storage_server'} in (
        nodes['storage_server_CP'].requirements)


def test_tosca_meta_names_top_vnfd():
    with open(os.path.join(PACKAGE, 'TOSCA-Metadata', 'TOSCA.meta')) as f:
        meta = dict(line.split(': ', 1) for line in f.read().splitlines()
                    if line)
    assert os.path.isfile(os.path.join(PACKAGE, meta['Entry-Definitions']))


def test_user_data_instantiation_level():
    pytest.importorskip('tacker.vnfm.lcm_user_data.utils')
    path = os.path.join(PACKAGE, 'UserData', 'k8s_cluster_user_data.py')
    spec = importlib.util.spec_from_file_location('k8s_user_data', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(os.path.join(PACKAGE, 'Definitions',
                           'sample_kubernetes_df_complex.yaml')) as f:
        vnfd = yaml.safe_load(f)
    assert module.initial_instances(vnfd, 'instantiation_level_2') == {
        'masterNode': 5, 'workerNode': 5}


def test_the_storage_request_gives_every_storage_parameter(tmp_path):
    """What the package's UserData returns, through Tacker's code path,
    for the storage flavour's sample request."""
    pytest.importorskip('tacker.vnfm.lcm_user_data.utils')
    from k8s_mgmt_lab import user_data
    csar = str(tmp_path / 'p.zip')
    package.build(output=csar, output_dir=str(tmp_path / 'vnf_package'))
    request = shipped.sample_request('storage')
    nfv = user_data.hot_parameters(csar, request)['nfv']
    assert nfv['VDU']['storage_server'] == {
        'flavor': 'm1.medium', 'image': 'ubuntu-22.04-server-cloudimg-amd64'}
    network = request['extVirtualLinks'][2]['resourceId']
    assert nfv['CP']['storage_server_CP'] == {'network': network,
                                              'fixed_ips': []}
