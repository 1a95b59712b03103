"""The podaffinity flavour through the lab's real Tacker, the operator's
way (tacker_flavours): the README's session with python-tackerclient, one
test per step, every worker, the scaled-out one too, labelled with the
compute host Nova put it on."""

import readme_session
import tacker_flavours
from lab_cli import LabCLI

k8s_mgmt = LabCLI('/var/lib/k8s-mgmt-lab-test-tacker-pa', bridge='k8slabtp',
                  tag='ktp', timeout=1800)
SUBNET = '10.254.228.0/24'


steps = tacker_flavours.steps_fixture(k8s_mgmt, SUBNET, 'podaffinity')
session = readme_session.session_fixture()


def test_the_readme_to_its_instantiate(steps, session):
    steps.next_call('instantiate')


def test_the_readme_to_its_scale_out(steps, session):
    steps.next_call('scale')
    tacker_flavours.check_podaffinity(session)


def test_the_readme_to_its_heal_of_a_worker(steps, session):
    steps.next_call('heal')


def test_the_readme_to_its_end(steps, session):
    steps.next_call('terminate')
    tacker_flavours.check_end(steps)
