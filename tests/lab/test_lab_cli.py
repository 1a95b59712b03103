"""``k8s-mgmt lab up/status/down`` as an operator runs them."""

import json
import os
import uuid

import pytest

from lab_cli import LabCLI

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-cli'
k8s_mgmt = LabCLI(STATE_DIR, bridge='k8slabt2', tag='k8c')


@pytest.fixture
def cli_lab(assert_lab_clean):
    with k8s_mgmt.fresh(assert_lab_clean):
        yield
    assert not os.path.exists(STATE_DIR + '.daemon.log')


def test_up_status_down(cli_lab):
    up = k8s_mgmt('up', '--flavour', 'complex', '--workers', '2',
                  '--subnet', '10.254.202.0/24')
    assert 'ssh ok' in up.stdout
    report = json.loads(k8s_mgmt('status', '--json').stdout)
    assert report['flavour'] == 'complex'
    assert report['vip'] and report['vip'].startswith('10.254.202.')
    vms = report['vms']
    assert len(vms) == 5 and all(vm['ssh_ok'] for vm in vms)
    assert sorted(vm['role'] for vm in vms) == ['master'] * 3 + ['worker'] * 2
    for vm in vms:
        assert vm['server_id'] and vm['vnfc_id'] and vm['compute_host']
    heat = report['heat']
    for key in ('auth_url', 'username', 'project_name', 'region_name',
                'stack_id', 'stack_name'):
        assert heat[key]
    assert 'password' not in heat and 'password' not in json.dumps(report)
    openstack = report['openstack']
    assert openstack['region'] == heat['region_name'] == 'lab-k8c'
    assert {'keystone', 'heat-api', 'heat-engine', 'nova', 'neutron',
            'cinder', 'glance'} <= set(openstack['services'])
    assert all(s['alive'] for s in openstack['services'].values())
    # The operator's view: an openrc without the secret in its text, and
    # real Heat's events of the lab's stack through python-openstackclient.
    openrc = k8s_mgmt('openrc').stdout
    assert 'export OS_REGION_NAME=lab-k8c\n' in openrc
    assert 'OS_PASSWORD="$(cat %s/os-password)"' % STATE_DIR in openrc
    events = k8s_mgmt('openstack', 'stack', 'event', 'list',
                      heat['stack_name']).stdout
    assert '[%s]: CREATE_COMPLETE' % heat['stack_name'] in events

    again = k8s_mgmt('up', '--flavour', 'simple', check=False)
    assert again.returncode == 1
    assert again.stderr.count('\n') == 1 and 'already up' in again.stderr
    assert 'Traceback' not in again.stderr

    down = k8s_mgmt('down')
    assert 'is down' in down.stdout
    gone = k8s_mgmt('status', check=False)
    assert gone.returncode == 1 and 'no lab is up' in gone.stderr


def test_bad_flavour_is_one_line_not_a_traceback(cli_lab):
    proc = k8s_mgmt('up', '--flavour', 'huge', check=False)
    assert proc.returncode == 2 and 'invalid choice' in proc.stderr
    assert 'Traceback' not in proc.stderr


def _operator_request(tmp_path, mutate):
    from k8s_mgmt import shipped
    body = shipped.sample_request('simple')
    mutate(body)
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(body))
    return str(path)


def test_up_builds_the_stack_from_the_request(cli_lab, tmp_path):
    """The network and sizes come from the request through the UserData:
    every server's port is on the network the request names, as the
    stand-in Neutron shows it; a request naming two networks is refused
    in one line before anything is built (the lab has one network)."""
    network = str(uuid.uuid4())      # Neutron's ids are UUIDs

    def operator_net(body):
        for link in body['extVirtualLinks']:
            link['resourceId'] = network
    request = _operator_request(tmp_path, operator_net)
    k8s_mgmt('up', '--request', request, '--subnet', '10.254.204.0/24')
    from k8s_mgmt_lab.openstack.iaas import model
    state = model.State.load(os.path.join(STATE_DIR, 'iaas.json'))
    record = json.load(open(os.path.join(STATE_DIR, 'lab.json')))
    assert record['request']['extVirtualLinks'][0]['resourceId'] == network
    servers = state.records('servers')
    assert len(servers) == 2
    for server_id in servers:
        ports = state.server_ports(server_id)
        assert [p['network_id'] for p in ports] == [network]
        assert [a['addr'] for found in state.addresses(server_id).values()
                for a in found] == [ports[0]['fixed_ips'][0]['ip_address']]
    k8s_mgmt('down')

    def two_networks(body):
        body['extVirtualLinks'][0]['resourceId'] = str(uuid.uuid4())
        body['extVirtualLinks'][1]['resourceId'] = str(uuid.uuid4())
    proc = k8s_mgmt('up', '--request', _operator_request(tmp_path,
                                                         two_networks),
                    check=False)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count('\n') == 1, proc.stderr
    assert 'extVirtualLinks' in proc.stderr and 'Traceback' not in proc.stderr
    assert not os.path.exists(os.path.join(STATE_DIR, 'lab.json'))


def test_up_refuses_a_bad_request_before_any_vm(cli_lab, tmp_path):
    def no_worker_link(body):
        del body['extVirtualLinks'][1]
    request = _operator_request(tmp_path, no_worker_link)
    proc = k8s_mgmt('up', '--request', request, check=False)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count('\n') == 1, proc.stderr
    assert 'workerNode_CP2' in proc.stderr and 'Traceback' not in proc.stderr
    assert not os.path.exists(os.path.join(STATE_DIR, 'lab.json'))

    other = k8s_mgmt('up', '--flavour', 'complex', '--request',
                     _operator_request(tmp_path, lambda body: None),
                     check=False)
    assert other.returncode == 1
    assert 'asks for flavour simple' in other.stderr
