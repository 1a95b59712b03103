"""The lab's Tacker client (k8s_mgmt_lab.tacker_api) against real Tacker
16 in a control plane of its own: the sample VNF package built, uploaded
and ONBOARDED; an instance of its VNFD created, shown, listed and
deleted; the package disabled and deleted; Tacker's refusals read as one
line. Nothing is instantiated (that needs the lab's VMs)."""

import time
import uuid

import pytest

from k8s_mgmt import package as k8s_package
from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import processes
from k8s_mgmt_lab.openstack import state
from k8s_mgmt_lab.tacker_api.client import Tacker
from k8s_mgmt_lab.tacker_api.errors import TackerApiError
from tests.functional.openstack import iaas_fixture


@pytest.fixture(scope='module')
def plane(tmp_path_factory):
    yield from iaas_fixture.running_plane(tmp_path_factory, 'tacker-api',
                                          tacker=True)


@pytest.fixture(scope='module')
def tacker(plane):
    return Tacker.for_plane(plane)


@pytest.fixture(scope='module')
def package(tacker, tmp_path_factory):
    """The sample package, as ``k8s-mgmt package build`` writes it,
    onboarded."""
    path = tmp_path_factory.mktemp('csar') / 'k8s_mgmt_vnf_package.zip'
    k8s_package.build(output=str(path))
    started = time.monotonic()
    onboarded = tacker.packages.onboard(str(path), deadline=120)
    print('package onboarded in %.1f s' % (time.monotonic() - started))
    return onboarded


@pytest.fixture(scope='module')
def default_vim(plane, tacker):
    """The plane's own OpenStack as Tacker's default VIM: Tacker creates
    no instance without one."""
    body = {'vim': {
        'name': 'lab-plane', 'description': 'the control plane itself',
        'type': 'openstack', 'is_default': True,
        'auth_url': config.keystone_url(plane.ports),
        'auth_cred': {'username': 'admin', 'user_domain_name': 'Default',
                      'password': state.secrets(plane.layout)['admin'],
                      'cert_verify': 'False'},
        'vim_project': {'name': 'admin', 'project_domain_name': 'Default'}}}
    return tacker.rest.json('register VIM', 'POST', 'v1.0/vims',
                            expect=(201,), json=body)['vim']


def _refusal(call, *args):
    with pytest.raises(TackerApiError) as caught:
        call(*args)
    text = str(caught.value)
    print(text)
    assert '\n' not in text and 'Traceback' not in text
    return caught.value


def test_the_client_finds_tacker_in_keystones_catalog(plane, tacker):
    assert tacker.endpoint() == plane.status()['tacker-server']['url']


def test_the_sample_package_is_onboarded(tacker, package):
    assert (package['onboardingState'], package['operationalState'],
            package['usageState']) == ('ONBOARDED', 'ENABLED', 'NOT_IN_USE')
    assert package['vnfdId']
    assert tacker.packages.show(package['id'])['vnfdId'] == package['vnfdId']
    onboarded = tacker.packages.list(filter='(eq,onboardingState,ONBOARDED)')
    assert [p['id'] for p in onboarded] == [package['id']]


def test_an_instance_of_its_vnfd_is_created_shown_listed_and_deleted(
        tacker, package, default_vim):
    instance = tacker.instances.create(
        package['vnfdId'], name='lab-api', description='tacker_api test',
        metadata={'lab': 'functional'})
    shown = tacker.instances.show(instance['id'])
    assert (shown['vnfdId'], shown['vnfInstanceName'],
            shown['instantiationState']) == (
        package['vnfdId'], 'lab-api', 'NOT_INSTANTIATED')
    assert shown['metadata']['lab'] == 'functional'
    assert default_vim['is_default']
    assert instance['id'] in [i['id'] for i in tacker.instances.list()]
    assert tacker.packages.show(package['id'])['usageState'] == 'IN_USE'
    tacker.instances.delete(instance['id'])
    assert tacker.instances.list() == []
    gone = _refusal(tacker.instances.show, instance['id'])
    assert gone.status == 404
    assert tacker.packages.show(package['id'])['usageState'] == 'NOT_IN_USE'


def test_instantiate_of_a_missing_instance_is_one_line(tacker):
    missing = str(uuid.uuid4())
    refused = _refusal(tacker.instances.instantiate, missing,
                       {'flavourId': 'simple'})
    assert refused.status == 404 and refused.op_id is None
    assert str(refused).startswith(
        'instantiate VNF instance %s: HTTP 404: ' % missing)
    assert missing in refused.detail


def test_an_unknown_op_occurrence_is_one_line(tacker):
    missing = str(uuid.uuid4())
    refused = _refusal(tacker.op_occs.wait, missing, 5)
    assert refused.status == 404
    assert str(refused).startswith(
        'wait (op occurrence %s): HTTP 404: ' % missing)


def test_the_package_is_disabled_then_deleted(tacker, package):
    enabled = _refusal(tacker.packages.delete, package['id'])
    assert enabled.status == 409 and 'ENABLED' in enabled.detail
    assert tacker.packages.disable(package['id'])['operationalState'] == (
        'DISABLED')
    tacker.packages.delete(package['id'])
    assert _refusal(tacker.packages.show, package['id']).status == 404
    assert tacker.packages.list() == []


def test_down_leaves_no_tacker_running(plane):
    pids = [service['pid'] for service in plane.status().values()]
    plane.down()
    assert not any(processes.group_alive(pid) for pid in pids if pid)
