"""The simple flavour through the lab's real Tacker, the operator's way
(tacker_flavours): the README's session with python-tackerclient, one test
per step, with Kubernetes upgraded one minor by a PATCH of the instance's
metadata (``openstack vnflcm update --I``) after the instantiate, every
node then at the new version, and the README's scale-out after it adding
a worker at that version too."""

import readme_session
import tacker_flavours
from lab_cli import LabCLI

k8s_mgmt = LabCLI('/var/lib/k8s-mgmt-lab-test-tacker-fl', bridge='k8slabtf',
                  tag='ktf', timeout=1800)
SUBNET = '10.254.252.0/24'


steps = tacker_flavours.steps_fixture(k8s_mgmt, SUBNET, 'simple')
session = readme_session.session_fixture()


def test_the_readme_to_its_instantiate(steps, session):
    steps.next_call('instantiate')


def test_an_upgrade_by_the_operators_patch(session):
    tacker_flavours.check_upgrade(session)


def test_the_readme_to_its_scale_out(steps, session):
    steps.next_call('scale')
    tacker_flavours.check_upgraded_scale_out(session)


def test_the_readme_to_its_heal_of_a_worker(steps, session):
    steps.next_call('heal')


def test_the_readme_to_its_end(steps, session):
    steps.next_call('terminate')
    tacker_flavours.check_end(steps)
