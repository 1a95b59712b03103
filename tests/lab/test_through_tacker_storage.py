"""The storage flavour through the lab's real Tacker, the operator's way
(tacker_flavours): the README's session with python-tackerclient, one test
per step, and after its heal of a worker the storage server's heal:
refused when nothing says what becomes of its volume (FAILED_TEMP,
Tacker's error naming the way on, given up with ``vnflcm op fail``), then
healed with the volume kept and its data still there."""

import readme_session
import tacker_flavours
from lab_cli import LabCLI

k8s_mgmt = LabCLI('/var/lib/k8s-mgmt-lab-test-tacker-st', bridge='k8slabts',
                  tag='kts', timeout=1800)
SUBNET = '10.254.253.0/24'


steps = tacker_flavours.steps_fixture(k8s_mgmt, SUBNET, 'storage')
session = readme_session.session_fixture()


def test_the_readme_to_its_instantiate(steps, session):
    steps.next_call('instantiate')


def test_the_readme_to_its_scale_out(steps, session):
    steps.next_call('scale')


def test_the_readme_to_its_heal_of_a_worker(steps, session):
    steps.next_call('heal')


def test_the_storage_servers_heal_refused_then_with_its_volume_kept(
        session):
    tacker_flavours.check_storage_heal(session)


def test_the_readme_to_its_end(steps, session):
    steps.next_call('terminate')
    tacker_flavours.check_end(steps)
