"""What the lab makes of a request and of the stand-in Nova's servers,
without a cloud: the group sizes it sets leave the storage server alone,
the storage flavour is one it builds, a server's name becomes a valid VM
hostname as Nova's would, and a sample request follows the lab's subnet.

(These were checked beside the imitation of Heat in tests/lab_cloud,
which is gone; none of them needs a cloud.)
"""

from k8s_mgmt import shipped
from k8s_mgmt_lab import manager
from k8s_mgmt_lab import stack_request
from k8s_mgmt_lab.machines import vm as vm_mod
from k8s_mgmt_lab.openstack.iaas import compute


def test_lab_group_sizes_leave_the_storage_server_alone():
    assert manager.request_flavour(shipped.sample_request('storage')) == (
        'storage')
    storage = {'flavor': 'm1.medium',
               'image': 'ubuntu-22.04-server-cloudimg-amd64'}
    parameters = stack_request.override_group_sizes({'nfv': {'VDU': {
        'masterNode': {'desired_capacity': 1},
        'workerNode': {'desired_capacity': 1},
        'storage_server': dict(storage)}}}, masters=1, workers=3)
    vdus = parameters['nfv']['VDU']
    assert vdus['workerNode']['desired_capacity'] == 3
    assert vdus['masterNode']['desired_capacity'] == 1
    assert vdus['storage_server'] == storage


class _RecordingVMs(object):
    def __init__(self):
        self.created = []

    def create_many(self, items):
        self.created.extend(items)


def test_lab_vms_of_the_storage_stack_get_valid_hostnames():
    """Nova makes 'storage-server' of the server name 'storage_server'; a
    lab VM's hostname must be a DNS label too."""
    vms = _RecordingVMs()
    manager.VMProvisioner(vms).create_servers([
        compute.ServerSpec('id-%d' % n, name, '10.254.0.%d' % (10 + n),
                           'compute01')
        for n, name in enumerate(('masterNode', 'storage_server',
                                  'workerNode'))])
    assert [hostname for _id, hostname, _ip in vms.created] == [
        'masternode', 'storage-server', 'workernode']
    for _id, hostname, _ip in vms.created:
        assert vm_mod._HOSTNAME.match(hostname), hostname
    assert manager.guest_hostname('A b_c.d-?') == 'a-b-c-d'


def test_the_sample_request_follows_the_labs_subnet():
    sample = shipped.sample_request('storage')
    assert manager.sample_on_subnet(sample, '10.254.0.0/24') == sample
    moved = manager.sample_on_subnet(shipped.sample_request('storage'),
                                     '10.254.212.0/24')
    root = moved['additionalParams']['k8s_cluster_installation_param']
    assert root['proxy']['k8s_node_cidr'] == '10.254.212.0/24'
    assert {e['export_to'] for e in root['storage_server'][
        'nfs_server_setup_params']} == {'10.254.212.0/24'}
    # The nodes install Kubernetes from the lab's repository on its subnet.
    assert root['kubernetes_apt_repository'] == {
        'url': 'http://10.254.212.1:8088/core:/stable:/'}
    # Nothing else: the rest of the request is the sample's.
    root['proxy']['k8s_node_cidr'] = '10.254.0.0/24'
    root['kubernetes_apt_repository']['url'] = manager.repository_url(
        '10.254.0.0/24')
    for export in root['storage_server']['nfs_server_setup_params']:
        export['export_to'] = '10.254.0.0/24'
    assert moved == sample
