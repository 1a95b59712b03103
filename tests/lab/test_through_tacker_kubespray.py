"""The kubespray flavour through the lab's real Tacker, the operator's way
(tacker_flavours): the README's session with python-tackerclient, one test
per step, the request naming the operator's Ansible server (its address,
user, password, and the fingerprint of its host key read on its
console), and the masters' aspect refused by Tacker's own API."""

import readme_session
import tacker_flavours
from lab_cli import LabCLI

k8s_mgmt = LabCLI('/var/lib/k8s-mgmt-lab-test-tacker-ks', bridge='k8slabtk',
                  tag='ktk', timeout=1800)
SUBNET = '10.254.229.0/24'


steps = tacker_flavours.steps_fixture(k8s_mgmt, SUBNET, 'kubespray')
session = readme_session.session_fixture()


def test_the_readme_to_its_instantiate(steps, session):
    steps.next_call('instantiate')


def test_the_masters_aspect_refused_by_tackers_api(session):
    tacker_flavours.check_kubespray(session)


def test_the_readme_to_its_scale_out(steps, session):
    steps.next_call('scale')


def test_the_readme_to_its_heal_of_a_worker(steps, session):
    steps.next_call('heal')


def test_the_readme_to_its_end(steps, session):
    steps.next_call('terminate')
    tacker_flavours.check_end(steps)
