"""The storage and podaffinity flavours through the lab's real Tacker, the
operator's way: the README's session with python-tackerclient, each on a
lab of its own, with the storage server's heal (refused, given up, then
with its volume kept) and the workers' compute-host labels
(tacker_flavours)."""

import pytest

import tacker_flavours
from lab_cli import LabCLI

k8s_mgmt = LabCLI('/var/lib/k8s-mgmt-lab-test-tacker-st', bridge='k8slabts',
                  tag='kts', timeout=1800)
SUBNET = '10.254.253.0/24'


@pytest.mark.parametrize('flavour', ['storage', 'podaffinity'])
def test_flavour_through_the_operators_own_client(
        assert_lab_clean, tmp_path, flavour):
    with k8s_mgmt.fresh(assert_lab_clean):
        tacker_flavours.run(k8s_mgmt, str(tmp_path), SUBNET, flavour)
