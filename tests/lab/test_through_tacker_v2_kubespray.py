"""The kubespray flavour through Tacker's v2 API, one test per LCM call
(v2_flavour_steps): instantiate, a scale-out by a worker, terminate."""

import v2_flavour_steps
from lab_cli import LabCLI

k8s_mgmt = LabCLI('/var/lib/k8s-mgmt-lab-test-tacker-v2-kubespray',
                  bridge='k8slabv6', tag='kv6k', timeout=1800)
SUBNET = '10.254.227.0/24'

life, step = v2_flavour_steps.fixtures(k8s_mgmt, SUBNET, 'kubespray')


def test_instantiate_through_v2(step):
    v2_flavour_steps.instantiate(step)


def test_a_scale_out_through_v2(step):
    v2_flavour_steps.scaled_out(step)


def test_terminate_through_v2(step):
    v2_flavour_steps.terminate(step)
