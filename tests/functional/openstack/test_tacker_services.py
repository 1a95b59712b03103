"""Real Tacker 16 in the control plane (ControlPlane(tacker=True)):
tacker-server answers both VNF LCM API versions through Keystone, an
operator's python-tackerclient lists VIMs and packages, tacker-conductor
loaded our management drivers from the wheel built from this checkout,
then everything down: nothing of the plane is left running or
listening."""

import json
import os
import subprocess
import time

import pytest

from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import processes
from k8s_mgmt_lab.openstack import services
from k8s_mgmt_lab.openstack import tacker_driver
from k8s_mgmt_lab.openstack import venvs
from tests.functional.openstack import iaas_fixture

DRIVERS = ('mgmt-drivers-kubernetes', 'mgmt-drivers-kubespray')


@pytest.fixture(scope='module')
def plane(tmp_path_factory):
    yield from iaas_fixture.running_plane(tmp_path_factory, 'tacker',
                                          tacker=True)


def _session(plane, authenticated=True):
    if not authenticated:
        from keystoneauth1 import session
        return session.Session()
    return iaas_fixture.admin_session(plane)


def _openstack(plane, *words):
    """``openstack WORDS -f json`` from the client venv as the plane's
    admin, parsed."""
    done = subprocess.run(
        venvs.entry_point_argv(plane.client_venv(), 'openstack', *words)
        + ['-f', 'json'], env=plane.client_env(), capture_output=True,
        text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_tacker_runs_beside_keystone_and_heat(plane):
    status = plane.status()
    assert all(service['alive'] for service in status.values()), status
    assert status['tacker-server']['version'] == '16.0.0'
    assert status['tacker-server']['url'] == config.tacker_url(plane.ports)
    assert status['tacker-conductor']['log'].startswith(plane.layout.logs)


def test_both_vnf_lcm_api_versions_answer_through_keystone(plane):
    keystone = _session(plane)
    url = keystone.get_endpoint(service_type='nfv-orchestration',
                                interface='public', region_name='RegionOne')
    assert url == plane.status()['tacker-server']['url']
    versions = keystone.get(url + 'vnflcm/api_versions').json()
    assert [v['version'] for v in versions['apiVersions']] == [
        '1.3.0', '2.0.0']
    assert keystone.get(url + 'vnflcm/v2/vnf_instances',
                        headers={'Version': '2.0.0'}).json() == []
    anonymous = _session(plane, authenticated=False).get(
        url + 'vnflcm/v2/vnf_instances', raise_exc=False)
    assert anonymous.status_code == 401


def test_an_operator_lists_vims_and_packages_with_tackerclient(plane):
    assert _openstack(plane, 'vim', 'list') == []
    assert _openstack(plane, 'vnf', 'package', 'list') == []
    assert _openstack(plane, 'vnflcm', 'list') == []


def test_the_conductor_loaded_our_drivers_from_this_checkout(plane):
    with open(plane.status()['tacker-conductor']['log']) as handle:
        registered = [line for line in handle
                      if 'Registered drivers from '
                         'tacker.tacker.mgmt.drivers' in line]
    assert registered and all(name in registered[-1] for name in DRIVERS)
    venv = venvs.ensure(plane.cache_dir, 'tacker')
    loaded = subprocess.run(
        [venvs.python(venv), '-c',
         'from importlib.metadata import entry_points\n'
         "for e in entry_points(group='tacker.tacker.mgmt.drivers'):\n"
         "    if e.name.startswith('mgmt-drivers-'):\n"
         "        print(e.name, e.load().__module__)\n"],
        capture_output=True, text=True, timeout=60, check=True)
    assert sorted(loaded.stdout.splitlines()) == [
        'mgmt-drivers-kubernetes k8s_mgmt.driver',
        'mgmt-drivers-kubespray k8s_mgmt.kubespray.driver']
    with open(os.path.join(plane.layout.run,
                           'tacker-conductor.driver')) as handle:
        assert handle.read().strip() == tacker_driver.recorded(venv)['wheel']


def test_an_unchanged_checkout_restarts_nothing(plane):
    # The first call catches up with edits made since up (others may be
    # editing this checkout); the second must find nothing to do.
    plane.install_driver()
    pid = plane.supervisor.pid('tacker-conductor')
    started = time.monotonic()
    assert plane.install_driver() is False
    assert time.monotonic() - started < 5
    assert plane.supervisor.pid('tacker-conductor') == pid


def test_tacker_server_comes_back_after_a_stop(plane):
    plane.supervisor.stop('tacker-server', services.STOP_TIMEOUT)
    started = time.monotonic()
    plane.supervisor.start(services.tacker_server(
        plane.layout, plane.ports, venvs.ensure(plane.cache_dir, 'tacker')))
    print('tacker-server ready in %.1f s' % (time.monotonic() - started))
    assert plane.status()['tacker-server']['alive']


def test_down_leaves_no_process_and_no_listener(plane):
    pids = [service['pid'] for service in plane.status().values()]
    started = time.monotonic()
    ended = plane.down()
    print('down in %.1f s' % (time.monotonic() - started))
    assert ended['tacker-server'] is not None
    assert ended['tacker-conductor'] is not None
    assert not any(processes.group_alive(pid) for pid in pids)
    assert [name for name, port in plane.ports.items()
            if iaas_fixture.listening(port)] == []
    assert not any(s['alive'] for s in plane.status().values())
