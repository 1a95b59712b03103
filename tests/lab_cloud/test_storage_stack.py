"""The sample package's ``storage`` flavour builds in the lab cloud.

The stack is built as ``k8s-mgmt lab up --flavour storage`` builds it: the
package assembled by ``package build``, the sample request validated against
it, the HOT parameters from the package's UserData through Tacker's own code
path, then the lab's Heat. No VM is made (the provisioner only records);
the driver's own Heat reader then finds the storage server and its volume
through the lab's Heat API, as it will on instantiate_end.
"""

import os

import pytest

from k8s_mgmt import package
from k8s_mgmt import params
from k8s_mgmt import shipped
from k8s_mgmt.secrets import Secret
from k8s_mgmt.topology import heat as topology_heat
from k8s_mgmt.topology.from_params import spec_from_params
from k8s_mgmt_lab import api
from k8s_mgmt_lab import cloud as lab_cloud
from k8s_mgmt_lab import hot
from k8s_mgmt_lab import manager
from k8s_mgmt_lab import user_data
from k8s_mgmt_lab.machines import vm as vm_mod
from tests.lab_cloud import nfv_params

PASSWORD = 'lab-secret-pw'
DF_INPUTS = dict(descriptor_id='2807101a-7250-45ae-8908-d3151a302ea9',
                 descriptor_version='1.0', provider='k8s-mgmt',
                 product_name='Sample Kubernetes cluster',
                 software_version='1.0', vnfm_info=['Tacker'],
                 flavour_id='storage', flavour_description='x')


@pytest.fixture(scope='module')
def built(tmp_path_factory):
    """(zip, unpacked directory) of the package, as the lab builds it."""
    root = tmp_path_factory.mktemp('storage-package')
    zip_path, pkg_dir = str(root / 'p.zip'), str(root / 'vnf_package')
    package.build(output=zip_path, output_dir=pkg_dir)
    return zip_path, pkg_dir


@pytest.fixture(scope='module')
def tacker_parameters(built):
    """What the package's UserData returns for the sample request."""
    pytest.importorskip('tacker.vnfm.lcm_user_data.utils')
    request = shipped.sample_request('storage')
    manager.check_request(request, built[1])
    return user_data.hot_parameters(built[0], request)


def _cloud(pkg_dir, provisioner, tmp_path, networks=None):
    return lab_cloud.LabCloud(pkg_dir, provisioner=provisioner,
                              compute_hosts=3,
                              state_file=str(tmp_path / 'state.json'),
                              networks=networks)


def _request_cloud(pkg_dir, provisioner, tmp_path):
    """A cloud with the sample request's network, as ``lab up`` makes."""
    return _cloud(pkg_dir, provisioner, tmp_path, networks=(
        manager.request_networks(shipped.sample_request('storage'))))


def test_vnfd_parses_with_the_storage_server_and_its_volume(package_dir):
    from toscaparser.tosca_template import ToscaTemplate
    path = os.path.join(package_dir, 'Definitions',
                        'sample_kubernetes_df_storage.yaml')
    parsed = ToscaTemplate(path, parsed_params=DF_INPUTS)
    nodes = {n.name: n for n in parsed.nodetemplates}
    assert nodes['storage_server_volume'].type == (
        'tosca.nodes.nfv.Vdu.VirtualBlockStorage')
    assert nodes['storage_server_CP'].type == 'tosca.nodes.nfv.VduCp'
    assert {'virtual_storage': 'storage_server_volume'} in (
        nodes['storage_server'].requirements)
    assert {'virtual_binding': 'storage_server'} in (
        nodes['storage_server_CP'].requirements)


def test_the_request_gives_every_storage_parameter(tacker_parameters):
    nfv = tacker_parameters['nfv']
    assert nfv['VDU']['storage_server'] == {
        'flavor': 'm1.medium', 'image': 'ubuntu-22.04-server-cloudimg-amd64'}
    network = shipped.sample_request('storage')['extVirtualLinks'][2][
        'resourceId']
    assert nfv['CP']['storage_server_CP'] == {'network': network,
                                              'fixed_ips': []}


def test_storage_stack_attaches_the_volume_as_vdb(
        built, tacker_parameters, provisioner, tmp_path):
    cloud = _request_cloud(built[1], provisioner, tmp_path)
    stack_id = cloud.create_stack('storage', tacker_parameters)
    servers = {s['resource_name']: s for s in cloud.servers(stack_id)}
    assert sorted(servers) == ['masterNode', 'storage_server', 'workerNode']
    assert len(provisioner.created) == 3
    _, server_res, server = cloud.resource(stack_id, 'storage_server')
    _, volume_res, volume = cloud.resource(stack_id, 'storage_server_volume')
    _, _, port = cloud.resource(stack_id, 'storage_server_CP')
    assert server['name'] == 'storage_server'
    assert volume['size'] == 5 and volume['status'] == 'in-use'
    [attachment] = volume['attachments']
    assert attachment['server_id'] == server_res['physical_id']
    assert attachment['volume_id'] == volume_res['physical_id']
    assert attachment['device'] == '/dev/vdb'
    assert servers['storage_server']['ip'] == (
        port['fixed_ips'][0]['ip_address'])


def test_the_drivers_heat_reader_finds_storage_server_and_volume(
        built, tacker_parameters, provisioner, tmp_path):
    cloud = _request_cloud(built[1], provisioner, tmp_path)
    stack_id = cloud.create_stack('storage', tacker_parameters)
    server, _url = api.serve(cloud, password=PASSWORD)
    try:
        session = topology_heat.session_from_settings(
            server.auth_url, 'admin', Secret(PASSWORD), 'admin')
        cluster = params.load_request(shipped.sample_request('storage'))
        topo = topology_heat.HeatReader(session).read_topology(
            spec_from_params(cluster), stack_id)
    finally:
        server.stop()
    [storage] = topo.storage
    assert storage.role == 'storage' and len(topo.masters) == 1
    _, server_res, _ = cloud.resource(stack_id, 'storage_server')
    _, _, port = cloud.resource(stack_id, 'storage_server_CP')
    assert storage.server_id == server_res['physical_id']
    assert storage.ssh_ip == port['fixed_ips'][0]['ip_address']
    [volume] = topo.volumes
    assert (volume.resource_name, volume.device, volume.server_id) == (
        'storage_server_volume', '/dev/vdb', storage.server_id)


def test_scaling_workers_leaves_the_storage_server_alone(
        package_dir, provisioner, tmp_path):
    cloud = _cloud(package_dir, provisioner, tmp_path)
    stack_id = cloud.create_stack('storage', nfv_params.sample_parameters(
        package_dir, 'storage'))
    before = cloud.resource(stack_id, 'storage_server_volume')[2]
    cloud.scale(stack_id, 'worker_instance', 'SCALE_OUT')
    names = sorted(s['resource_name'] for s in cloud.servers(stack_id))
    assert names == ['masterNode', 'storage_server', 'workerNode',
                     'workerNode']
    assert cloud.resource(stack_id, 'storage_server_volume')[2] == before
    top = hot.load_template(lab_cloud.top_template(package_dir, 'storage'))
    assert top.resources['storage_server']['type'] == hot.SERVER


def test_lab_group_sizes_leave_the_storage_server_alone(
        package_dir, tacker_parameters):
    assert manager.request_flavour(shipped.sample_request('storage')) == (
        'storage')
    parameters = manager.override_group_sizes(
        {'nfv': {'VDU': {k: dict(v) for k, v in
                         tacker_parameters['nfv']['VDU'].items()}}},
        masters=1, workers=3)
    vdus = parameters['nfv']['VDU']
    assert vdus['workerNode']['desired_capacity'] == 3
    assert vdus['masterNode']['desired_capacity'] == 1
    assert 'desired_capacity' not in vdus['storage_server']


class _RecordingVMs:
    def __init__(self):
        self.created = []

    def create_many(self, items):
        self.created.extend(items)


def test_lab_vms_of_the_storage_stack_get_valid_hostnames(
        package_dir, tmp_path):
    """Nova makes 'storage-server' of the server name 'storage_server'; a
    lab VM's hostname must be a DNS label too."""
    vms = _RecordingVMs()
    cloud = _cloud(package_dir, manager.VMProvisioner(vms), tmp_path)
    cloud.create_stack('storage', nfv_params.sample_parameters(
        package_dir, 'storage'))
    names = sorted(hostname.rsplit('-', 1)[0]
                   for _id, hostname, _ip in vms.created)
    assert names == ['masternode', 'storage-server', 'workernode']
    for _id, hostname, _ip in vms.created:
        assert vm_mod._HOSTNAME.match(hostname), hostname
    assert manager.guest_hostname('A b_c.d-?') == 'a-b-c-d'


def test_the_sample_request_follows_the_labs_subnet():
    from k8s_mgmt import shipped
    from k8s_mgmt_lab import manager
    sample = shipped.sample_request('storage')
    assert manager.sample_on_subnet(sample, '10.254.0.0/24') == sample
    moved = manager.sample_on_subnet(shipped.sample_request('storage'),
                                     '10.254.212.0/24')
    root = moved['additionalParams']['k8s_cluster_installation_param']
    assert root['proxy']['k8s_node_cidr'] == '10.254.212.0/24'
    assert {e['export_to'] for e in root['storage_server'][
        'nfs_server_setup_params']} == {'10.254.212.0/24'}
    # Nothing else: the rest of the request is the sample's.
    root['proxy']['k8s_node_cidr'] = '10.254.0.0/24'
    for export in root['storage_server']['nfs_server_setup_params']:
        export['export_to'] = '10.254.0.0/24'
    assert moved == sample
