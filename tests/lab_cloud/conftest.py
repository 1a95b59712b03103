import os

import pytest

from k8s_mgmt_lab import cloud as lab_cloud
from tests.lab_cloud import nfv_params

PACKAGE = os.path.join(os.path.dirname(__file__), '..', '..', 'k8s_mgmt',
                       'samples', 'vnf_package')


class RecordingProvisioner:
    """Stands in for the VM layer: records what the cloud asks for."""

    def __init__(self):
        self.created, self.deleted = [], []

    def create_servers(self, specs):
        self.created.extend(specs)

    def delete_servers(self, server_ids):
        self.deleted.extend(server_ids)


@pytest.fixture
def package_dir():
    return os.path.abspath(PACKAGE)


@pytest.fixture
def provisioner():
    return RecordingProvisioner()


@pytest.fixture
def make_cloud(package_dir, provisioner, tmp_path):
    def make(flavour, masters=None, workers=None, hosts=3):
        cloud = lab_cloud.LabCloud(package_dir, provisioner=provisioner,
                                   compute_hosts=hosts,
                                   state_file=str(tmp_path / 'state.json'))
        params = nfv_params.sample_parameters(
            package_dir, flavour, masters=masters, workers=workers)
        return cloud, cloud.create_stack(flavour, params)
    return make
