"""The real control plane (MariaDB, RabbitMQ, Keystone 30, Heat 27) up
from the cached venvs (built on first use), a token from Keystone, a
stack through Heat's REST API created, read and deleted, then everything
down: nothing of it is left running or listening."""

import json
import os
import subprocess
import sys
import time

import pytest

from k8s_mgmt import polling
from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack import processes
from tests.functional.openstack import iaas_fixture

TEMPLATE = {
    'heat_template_version': '2018-08-31',
    'resources': {
        'secret': {'type': 'OS::Heat::RandomString',
                   'properties': {'length': 12}},
        'marker': {'type': 'OS::Heat::None',
                   'properties': {'value': {'get_resource': 'secret'}}},
    },
    'outputs': {'secret': {'value': {'get_attr': ['secret', 'value']}}},
}


@pytest.fixture(scope='module')
def plane(tmp_path_factory):
    made = control_plane.ControlPlane(str(iaas_fixture.plane_root(
        tmp_path_factory, 'cp')))
    try:
        made.up()
        yield made
    finally:
        made.down()


def _stack_status(heat, stacks, name):
    answer = heat.get('%s/%s' % (stacks, name), raise_exc=False)
    if answer.status_code == 404:
        return 'GONE'
    return answer.json()['stack']['stack_status']


def _wait_for(heat, stacks, name, wanted, timeout=120):
    seen = None
    for _attempt in polling.Poll(timeout, first=0.5, maximum=2.0):
        seen = _stack_status(heat, stacks, name)
        if seen == wanted:
            return
        assert not seen.endswith('FAILED'), seen
    pytest.fail('%s still %s after %d s' % (name, seen, timeout))


def _openstack(plane, *words):
    """``k8s-mgmt lab control-plane openstack WORDS -f json``, parsed."""
    done = subprocess.run(
        [sys.executable, '-m', 'k8s_mgmt', 'lab', 'control-plane',
         '--dir', plane.layout.root, '--cache-dir', plane.cache_dir,
         'openstack'] + list(words) + ['-f', 'json'],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _operator_sees_the_stack(plane, stack_id):
    """What an operator types, through python-openstackclient from the
    lab's cache: the stack and real Heat's events for it; the password
    reached the client only through its environment."""
    listed = _openstack(plane, 'stack', 'list')
    assert [(s['ID'], s['Stack Status']) for s in listed] == [
        (stack_id, 'CREATE_COMPLETE')]
    events = _openstack(plane, 'stack', 'event', 'list', 'probe')
    assert ('secret', 'CREATE_COMPLETE') in {
        (e['resource_name'], e['resource_status']) for e in events}


def test_a_stack_lives_and_dies_on_real_heat_then_all_stops(plane):
    status = plane.status()
    assert all(service['alive'] for service in status.values()), status
    assert status['keystone']['version'] == '30.0.0'
    assert status['heat-engine']['version'] == '27.0.1'
    assert 'OS_PASSWORD' not in plane.openrc()
    with open(plane.layout.openrc) as handle:
        assert 'OS_PASSWORD=' in handle.read()

    keystone = iaas_fixture.admin_session(plane)
    assert keystone.get_token()
    heat_url = keystone.get_endpoint(service_type='orchestration',
                                     interface='public',
                                     region_name='RegionOne')
    stacks = heat_url + '/stacks'
    created = keystone.post(stacks, json={
        'stack_name': 'probe', 'template': TEMPLATE}).json()['stack']
    _wait_for(keystone, stacks, 'probe/%s' % created['id'], 'CREATE_COMPLETE')
    stack = keystone.get('%s/probe/%s' % (stacks, created['id'])).json()
    outputs = {o['output_key']: o['output_value']
               for o in stack['stack']['outputs']}
    assert len(outputs['secret']) == 12
    events = keystone.get('%s/probe/%s/events' % (
        stacks, created['id'])).json()['events']
    assert {(e['resource_name'], e['resource_status']) for e in events} >= {
        ('secret', 'CREATE_COMPLETE'), ('marker', 'CREATE_COMPLETE'),
        ('probe', 'CREATE_COMPLETE')}
    _operator_sees_the_stack(plane, created['id'])
    keystone.delete('%s/probe/%s' % (stacks, created['id']))
    _wait_for(keystone, stacks, 'probe/%s' % created['id'],
              'DELETE_COMPLETE')

    pids = [service['pid'] for service in status.values()]
    started = time.monotonic()
    plane.down()
    print('down in %.1f s' % (time.monotonic() - started))
    assert not any(processes.group_alive(pid) for pid in pids)
    assert [name for name, port in plane.ports.items()
            if iaas_fixture.listening(port)] == []
    assert not any(s['alive'] for s in plane.status().values())
    # gunicorn's control socket is off, so it made no $HOME/.gunicorn.
    assert not os.path.exists(os.path.join(plane.layout.root, '.gunicorn'))
