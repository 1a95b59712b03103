"""The simple and kubespray flavours through the lab's real Tacker, the
operator's way: the README's session with python-tackerclient, each on a
lab of its own (tacker_flavours; test_through_tacker.py runs every
operation on the complex flavour, test_through_tacker_storage.py the
storage and podaffinity flavours)."""

import pytest

import tacker_flavours
from lab_cli import LabCLI

k8s_mgmt = LabCLI('/var/lib/k8s-mgmt-lab-test-tacker-fl', bridge='k8slabtf',
                  tag='ktf', timeout=1800)
SUBNET = '10.254.252.0/24'


@pytest.mark.parametrize('flavour', ['kubespray', 'simple'])
def test_flavour_through_the_operators_own_client(
        assert_lab_clean, tmp_path, flavour):
    with k8s_mgmt.fresh(assert_lab_clean):
        tacker_flavours.run(k8s_mgmt, str(tmp_path), SUBNET, flavour)
