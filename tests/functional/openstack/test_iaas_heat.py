"""Real Heat 27 against the lab's Nova, Neutron, Cinder and Glance
stand-ins: one control plane for the module, the stand-ins on their
recorded ports and in its catalog, a recording provisioner (no VMs) and
a recording volume backend. Through Heat's REST API: a port, server,
volume and attachment stack is created, healed (mark unhealthy, then an
update: a new server on the same port, which is where a stand-in that
leaves the MAC in the old server's addresses fails with
InterfaceDetachFailed; the old server's addresses are empty when its VM
goes, the new one shows the port's MAC) and deleted; a server boots
with a volume mapped; a storage server is healed with a new volume, a
heal that would keep its volume fails as Nova refuses a volume in use,
and one that detaches the volume first moves it to the new server; an
autoscaling group of a nested template spreads over compute hosts
through an anti-affinity server group, and a member healed stays in the
group on a host of its own; nothing stays behind.
The seconds Heat took are printed (run with -s to see them)."""

import json
import time

import pytest
import requests

from k8s_mgmt import polling
from k8s_mgmt_lab.openstack import bootstrap
from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import stacks as stacks_mod
from k8s_mgmt_lab.openstack import state as plane_state
from k8s_mgmt_lab.openstack.iaas import model
from tests.functional.openstack import iaas_fixture

IMAGE = 'ubuntu-22.04-server-cloudimg-amd64'
USER_DATA = '#cloud-config\nhostname: vdu1\n'


def _stack_status(session, stacks, path):
    answer = session.get('%s/%s' % (stacks, path), raise_exc=False)
    if answer.status_code == 404:
        return 'GONE'
    return answer.json()['stack']['stack_status']


class Lab(object):
    """The control plane, the stand-ins and an admin session."""

    def __init__(self, plane, iaas, provisioner, volumes):
        self.plane, self.iaas = plane, iaas
        self.state = iaas.state
        self.provisioner, self.volumes = provisioner, volumes
        self.session = bootstrap.admin_session(
            plane.ports, plane_state.secrets(plane.layout))
        self.stacks = self.session.get_endpoint(
            service_type='orchestration', interface='public',
            region_name='RegionOne') + '/stacks'
        self.timings = {}

    def create(self, name, template, files=None, parameters=None):
        body = {'stack_name': name, 'template': template,
                'parameters': parameters or {}, 'files': files or {}}
        started = time.monotonic()
        made = self.session.post(self.stacks, json=body).json()['stack']
        path = '%s/%s' % (name, made['id'])
        self.wait(path, 'CREATE_COMPLETE', 'create ' + name, started)
        return path

    def wait(self, path, wanted, what, started=None, timeout=150):
        """Poll the stack until ``wanted``; the seconds since ``started``
        (the request that began it) are printed."""
        started, seen = started or time.monotonic(), None
        for _attempt in polling.Poll(timeout, first=0.3, maximum=1.5):
            seen = _stack_status(self.session, self.stacks, path)
            if seen == wanted or (seen, wanted) == ('GONE',
                                                    'DELETE_COMPLETE'):
                self.timings[what] = time.monotonic() - started
                print('Heat: %s took %.1f s' % (what, self.timings[what]))
                return
            if seen.endswith('FAILED'):
                reason = self.session.get('%s/%s' % (
                    self.stacks, path)).json()['stack']['stack_status_reason']
                pytest.fail('%s: %s: %s' % (what, seen, reason))
        pytest.fail('%s: still %s after %d s' % (what, seen, timeout))

    def delete(self, path):
        started = time.monotonic()
        self.session.delete('%s/%s' % (self.stacks, path))
        self.wait(path, 'DELETE_COMPLETE', 'delete ' + path.split('/')[0],
                  started)

    def resource_id(self, path, resource):
        return self.session.get('%s/%s/resources/%s' % (
            self.stacks, path, resource)).json()['resource'][
                'physical_resource_id']

    def nova(self, path, raise_exc=True):
        """GET Nova's ``path``: its JSON, or the answer when not raising."""
        answer = self.session.get('%s/%s' % (self.session.get_endpoint(
            service_type='compute'), path), raise_exc=raise_exc)
        return answer.json() if raise_exc else answer

    def records(self, kind):
        with self.state.lock:
            return json.loads(json.dumps(self.state.records(kind)))


@pytest.fixture(scope='module')
def lab(tmp_path_factory):
    root = iaas_fixture.plane_root(tmp_path_factory, 'iaas')
    state = model.State('10.254.0.0/24', 3, str(root / 'iaas.json'))
    with iaas_fixture.plane_with_iaas(root, state) as running:
        yield Lab(*running)


def _vdu_template():
    return {
        'heat_template_version': '2018-08-31',
        'parameters': {'net': {'type': 'string'}},
        'resources': {
            'port': {'type': 'OS::Neutron::Port',
                     'properties': {'network': {'get_param': 'net'}}},
            'server': {'type': 'OS::Nova::Server', 'properties': {
                'name': 'vdu1', 'flavor': 'm1.medium', 'image': IMAGE,
                'networks': [{'port': {'get_resource': 'port'}}],
                'user_data': USER_DATA, 'user_data_format': 'RAW'}},
            'volume': {'type': 'OS::Cinder::Volume',
                       'properties': {'size': 1}},
            'attachment': {'type': 'OS::Cinder::VolumeAttachment',
                           'properties': {
                               'instance_uuid': {'get_resource': 'server'},
                               'volume_id': {'get_resource': 'volume'}}},
        },
        'outputs': {'ip': {'value': {
            'get_attr': ['port', 'fixed_ips', 0, 'ip_address']}}},
    }


def test_a_server_stack_is_created_healed_and_deleted(lab):
    path = lab.create('vdu', _vdu_template(), parameters={
        'net': model.NETWORK_NAME})
    server_id = lab.resource_id(path, 'server')
    port_id = lab.resource_id(path, 'port')
    volume_id = lab.resource_id(path, 'volume')
    port = lab.records('ports')[port_id]
    ip = port['fixed_ips'][0]['ip_address']
    assert ip == '10.254.0.10'
    assert [(s.server_id, s.name, s.ip) for s in lab.provisioner.created] \
        == [(server_id, 'vdu1', ip)]
    server = lab.records('servers')[server_id]
    assert server['user_data'] and server['host'] == 'compute01'
    volume = lab.records('volumes')[volume_id]
    assert volume['status'] == 'in-use'
    assert [a['server_id'] for a in volume['attachments']] == [server_id]
    nova = lab.session.get_endpoint(service_type='compute')
    console = lab.session.post('%s/servers/%s/action' % (nova, server_id),
                               json={'os-getConsoleOutput': {'length': 1}})
    assert console.json() == {'output': 'lab login: '}

    started = time.monotonic()
    lab.session.patch('%s/%s/resources/server' % (lab.stacks, path), json={
        'mark_unhealthy': True, 'resource_status_reason': 'heal test'})
    lab.session.patch('%s/%s' % (lab.stacks, path), json={})
    lab.wait(path, 'UPDATE_COMPLETE', 'heal vdu', started)
    new_id = lab.resource_id(path, 'server')
    assert new_id != server_id
    assert lab.resource_id(path, 'port') == port_id
    assert lab.provisioner.deleted == [server_id]
    assert lab.provisioner.created[-1][:3] == (new_id, 'vdu1', ip)
    servers = lab.records('servers')
    assert list(servers) == [new_id]
    # The user port moved with its MAC: Heat detached it from the old
    # server first and waited until Nova's addresses no longer showed the
    # MAC (else InterfaceDetachFailed); the old server's VM went with
    # nothing left in them, the new server shows the port.
    assert lab.provisioner.addresses_at_delete[server_id] == {}
    shown = lab.nova('servers/' + new_id)['server']['addresses']
    assert shown == {model.NETWORK_NAME: [{
        'addr': ip, 'version': 4, 'OS-EXT-IPS:type': 'fixed',
        'OS-EXT-IPS-MAC:mac_addr': port['mac_address']}]}
    assert lab.nova('servers/' + server_id, raise_exc=False).status_code \
        == 404
    neutron = lab.session.get_endpoint(service_type='network')
    moved = lab.session.get('%s/v2.0/ports/%s' % (
        neutron.rstrip('/'), port_id)).json()['port']
    assert (moved['device_id'], moved['mac_address'], moved['status']) == (
        new_id, port['mac_address'], 'ACTIVE')
    volume = lab.records('volumes')[volume_id]
    assert [a['server_id'] for a in volume['attachments']] == [new_id]

    lab.delete(path)
    assert lab.records('servers') == {} and lab.records('ports') == {}
    assert lab.records('volumes') == {}
    assert set(lab.provisioner.deleted) == {server_id, new_id}


def test_a_volume_mapped_at_boot_is_in_use(lab):
    volume = {'type': 'OS::Cinder::Volume', 'properties': {'size': 2}}
    server = {'type': 'OS::Nova::Server', 'properties': {
        'name': 'storage_server', 'flavor': 'm1.tiny', 'image': IMAGE,
        'networks': [{'network': lab.state.network()['id']}],
        'block_device_mapping_v2': [{
            'device_name': 'vdb', 'boot_index': -1,
            'volume_id': {'get_resource': 'volume'}}]}}
    path = lab.create('storage', {
        'heat_template_version': '2018-08-31',
        'resources': {'volume': volume, 'server': server}})
    server_id = lab.resource_id(path, 'server')
    volume_id = lab.resource_id(path, 'volume')
    found = lab.records('volumes')[volume_id]
    assert found['status'] == 'in-use'
    assert [(a['server_id'], a['device']) for a in found['attachments']] \
        == [(server_id, '/dev/vdb')]
    assert ('attach', volume_id, server_id, '/dev/vdb') in lab.volumes.calls
    lab.delete(path)
    assert lab.records('volumes') == {} and lab.records('ports') == {}
    assert ('delete', volume_id) in lab.volumes.calls


WORKER = {
    'heat_template_version': '2018-08-31',
    'parameters': {'net': {'type': 'string'},
                   'group': {'type': 'string'}},
    'resources': {
        'port': {'type': 'OS::Neutron::Port',
                 'properties': {'network': {'get_param': 'net'}}},
        'server': {'type': 'OS::Nova::Server', 'properties': {
            'flavor': 'm1.small', 'image': IMAGE,
            'networks': [{'port': {'get_resource': 'port'}}],
            'scheduler_hints': {'group': {'get_param': 'group'}}}}}}


def _anti_affine_workers(size):
    """A top template: an anti-affinity server group and an autoscaling
    group of ``size`` WORKER members in it; its files."""
    return {
        'heat_template_version': '2018-08-31',
        'resources': {
            'group': {'type': 'OS::Nova::ServerGroup', 'properties': {
                'name': 'workers', 'policies': ['anti-affinity']}},
            'asg': {'type': 'OS::Heat::AutoScalingGroup', 'properties': {
                'min_size': size, 'max_size': size + 1,
                'desired_capacity': size,
                'resource': {'type': 'worker.yaml', 'properties': {
                    'net': model.NETWORK_NAME,
                    'group': {'get_resource': 'group'}}}}}}}, {
        'worker.yaml': json.dumps(WORKER)}


def test_an_autoscaling_group_spreads_over_hosts_by_anti_affinity(lab):
    """Spread at create, and still after a member is healed: the new
    server is in the group, on a host no other member has, and Nova's
    group shows it in the old one's place."""
    template, files = _anti_affine_workers(2)
    path = lab.create('workers', template, files=files)
    group_id = lab.resource_id(path, 'group')
    servers = lab.records('servers').values()
    assert len(servers) == 2
    assert {s['group_id'] for s in servers} == {group_id}
    assert len({s['host'] for s in servers}) == 2
    assert lab.records('server_groups')[group_id]['policy'] == \
        'anti-affinity'

    stacks = stacks_mod.Stacks(lab.session)
    old = stacks.servers(path)[0]
    started = time.monotonic()
    stacks.heal(path, [old])
    print('Heat: heal a group member took %.1f s'
          % (time.monotonic() - started))
    after = stacks.servers(path)
    [new] = [s for s in after if s.member == old.member]
    assert new.server_id != old.server_id and new.ports == old.ports
    nova = lab.records('servers')
    assert sorted(nova) == sorted(s.server_id for s in after)
    assert len({nova[s.server_id]['host'] for s in after}) == 2
    assert nova[new.server_id]['group_id'] == group_id
    members = lab.nova('os-server-groups/' + group_id)['server_group'][
        'members']
    assert sorted(members) == sorted(s.server_id for s in after)
    lab.delete(path)
    for kind in ('servers', 'ports', 'volumes', 'server_groups'):
        assert lab.records(kind) == {}, kind


def _storage_template():
    """The storage flavour's shape: a server with its own port and a
    volume mapped as vdb."""
    return {
        'heat_template_version': '2018-08-31',
        'resources': {
            'storage_server_volume': {'type': 'OS::Cinder::Volume',
                                      'properties': {'size': 1}},
            'storage_server_CP': {'type': 'OS::Neutron::Port', 'properties': {
                'network': model.NETWORK_NAME}},
            'storage_server': {'type': 'OS::Nova::Server', 'properties': {
                'name': 'storage_server', 'flavor': 'm1.tiny',
                'image': IMAGE,
                'networks': [{'port': {'get_resource': 'storage_server_CP'}}],
                'block_device_mapping_v2': [{
                    'device_name': 'vdb', 'boot_index': -1,
                    'volume_id': {'get_resource':
                                  'storage_server_volume'}}]}}}}


def _heal_storage(lab, path, what, keep_volume):
    """Mark the storage server unhealthy, its volume too unless kept, and
    update the stack as Tacker's heal does; the status it ends in."""
    started = time.monotonic()
    resources = '%s/%s/resources/' % (lab.stacks, path)
    marked = ['storage_server'] + ([] if keep_volume
                                   else ['storage_server_volume'])
    for resource in marked:
        lab.session.patch(resources + resource, json={
            'mark_unhealthy': True, 'resource_status_reason': 'heal'})
    lab.session.patch('%s/%s' % (lab.stacks, path), json={})
    for _attempt in polling.Poll(150, first=0.3, maximum=1.5):
        seen = _stack_status(lab.session, lab.stacks, path)
        if seen in ('UPDATE_COMPLETE', 'UPDATE_FAILED'):
            print('Heat: %s took %.1f s' % (what, time.monotonic() - started))
            return seen
    pytest.fail('%s: still %s' % (what, seen))


def test_a_storage_server_is_healed_with_a_new_volume(lab):
    """As Tacker heals the storage VDU with its volume: both marked
    unhealthy. The new server has a new volume as vdb, Nova and Cinder
    agree on it, and the old volume is gone."""
    path = lab.create('storage-new', _storage_template())
    try:
        server_id = lab.resource_id(path, 'storage_server')
        volume_id = lab.resource_id(path, 'storage_server_volume')
        assert _heal_storage(lab, path, 'heal storage-new', False) == \
            'UPDATE_COMPLETE'
        new_id = lab.resource_id(path, 'storage_server')
        new_volume = lab.resource_id(path, 'storage_server_volume')
        assert new_id != server_id and new_volume != volume_id
        volumes = lab.records('volumes')
        assert list(volumes) == [new_volume]
        [attachment] = volumes[new_volume]['attachments']
        assert (attachment['server_id'], attachment['device']) == (
            new_id, '/dev/vdb')
        assert volumes[new_volume]['status'] == 'in-use'
        assert [v['id'] for v in lab.nova('servers/' + new_id)['server'][
            'os-extended-volumes:volumes_attached']] == [new_volume]
        assert ('delete', volume_id) in lab.volumes.calls
    finally:
        lab.delete(path)
    for kind in ('servers', 'ports', 'volumes'):
        assert lab.records(kind) == {}, kind


def test_a_heal_keeping_a_volume_mapped_at_boot_fails_as_in_openstack(lab):
    """Heat makes the replacement server before it deletes the old one,
    and asks Nova to boot it with the volume the old server still has:
    Nova refuses a volume in use (400), as real Nova does, and the stack
    is UPDATE_FAILED with the old server and its volume untouched. So a
    heal that keeps a volume mapped at boot must detach it from the old
    server first (the driver's heal_start does: k8s_mgmt/volume_detach.py;
    the next test)."""
    path = lab.create('storage-kept', _storage_template())
    try:
        server_id = lab.resource_id(path, 'storage_server')
        volume_id = lab.resource_id(path, 'storage_server_volume')
        assert _heal_storage(lab, path, 'heal storage-kept', True) == \
            'UPDATE_FAILED'
        reason = lab.session.get('%s/%s' % (lab.stacks, path)).json()[
            'stack']['stack_status_reason']
        assert 'Invalid volume: volume %s' % volume_id in reason
        assert 'in-use' in reason
        assert list(lab.records('servers')) == [server_id]
        [attachment] = lab.records('volumes')[volume_id]['attachments']
        assert attachment['server_id'] == server_id
    finally:
        lab.delete(path)
    for kind in ('servers', 'ports', 'volumes'):
        assert lab.records(kind) == {}, kind


def test_a_heal_keeping_a_volume_detached_first_moves_it(lab):
    """The kept volume detached through Nova first (DELETE
    os-volume_attachments, as the driver's heal_start does), then the
    heal: the new server boots with the same volume as vdb, the old one
    goes, and Nova and Cinder agree on the volume's one attachment."""
    path = lab.create('storage-moved', _storage_template())
    try:
        server_id = lab.resource_id(path, 'storage_server')
        volume_id = lab.resource_id(path, 'storage_server_volume')
        nova = lab.session.get_endpoint(service_type='compute')
        lab.session.delete('%s/servers/%s/os-volume_attachments/%s' % (
            nova, server_id, volume_id))
        for _attempt in polling.Poll(30, first=0.1, maximum=0.5):
            if lab.records('volumes')[volume_id]['status'] == 'available':
                break
        else:
            pytest.fail('the volume was never detached')
        assert _heal_storage(lab, path, 'heal storage-moved', True) == \
            'UPDATE_COMPLETE'
        new_id = lab.resource_id(path, 'storage_server')
        assert new_id != server_id
        assert lab.resource_id(path, 'storage_server_volume') == volume_id
        assert list(lab.records('servers')) == [new_id]
        volume = lab.records('volumes')[volume_id]
        assert volume['status'] == 'in-use'
        assert [(a['server_id'], a['device'])
                for a in volume['attachments']] == [(new_id, '/dev/vdb')]
        assert [v['id'] for v in lab.nova('servers/' + new_id)['server'][
            'os-extended-volumes:volumes_attached']] == [volume_id]
        assert ('delete', volume_id) not in lab.volumes.calls
    finally:
        lab.delete(path)
    for kind in ('servers', 'ports', 'volumes'):
        assert lab.records(kind) == {}, kind


def test_the_stand_ins_are_in_the_catalog_once(lab):
    lab.plane.register_iaas()     # a second time: nothing is added
    url = config.keystone_url(lab.plane.ports)
    endpoints = lab.session.get(url + '/endpoints').json()['endpoints']
    wanted = bootstrap.iaas_endpoints(lab.plane.iaas_ports())
    for service_type, address in wanted.items():
        assert sorted(e['interface'] for e in endpoints
                      if e['url'] == address) == \
            ['admin', 'internal', 'public'], service_type


def test_a_request_without_a_valid_token_is_refused(lab):
    """Keystone, not the stand-in, decides: no token and a made-up one
    are both 401, and a real one reaches the service."""
    nova = lab.iaas.endpoints()['compute']
    assert requests.get(nova + '/servers', timeout=10).status_code == 401
    refused = requests.get(nova + '/servers', timeout=10,
                           headers={'X-Auth-Token': 'not-a-token'})
    assert refused.status_code == 401
    assert refused.json()['error']['code'] == 401
    assert 'not-a-token' not in refused.text
    token = lab.session.get_token()
    assert requests.get(nova + '/servers', timeout=10, headers={
        'X-Auth-Token': token}).json() == {'servers': []}
