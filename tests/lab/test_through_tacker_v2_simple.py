"""The simple flavour through Tacker's v2 API, one test per LCM call
(v2_flavour_steps): instantiate, a certificate check by a PATCH of the
metadata, terminate."""

import v2_flavour_steps
from lab_cli import LabCLI

k8s_mgmt = LabCLI('/var/lib/k8s-mgmt-lab-test-tacker-v2-simple',
                  bridge='k8slabv3', tag='kv3t', timeout=1800)
SUBNET = '10.254.246.0/24'

life, step = v2_flavour_steps.fixtures(k8s_mgmt, SUBNET, 'simple')


def test_instantiate_through_v2(step):
    v2_flavour_steps.instantiate(step)


def test_a_certificate_check_through_v2(step):
    v2_flavour_steps.certificates_checked(step)


def test_terminate_through_v2(step):
    v2_flavour_steps.terminate(step)
