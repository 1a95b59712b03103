"""The stand-in's shared state without HTTP or threads (jobs run inline):
a port and its server agree on MAC and address, an interface detach
takes both away at once, volumes follow Nova's attach and detach (one in
use is refused for another server's boot), a failed build is an ERROR
with a fault, and the state survives a save and a load."""

import json
import threading

import pytest

from k8s_mgmt_lab.openstack.iaas import compute
from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import network
from k8s_mgmt_lab.openstack.iaas import storage
from tests.unit.lab.iaas_cloud import CALLER, Cloud, Provisioner, ports_agree


def test_ports_take_addresses_from_ten_up_and_agree_with_the_server():
    cloud = Cloud()
    first, second = cloud.port(), cloud.port()
    assert first['fixed_ips'][0]['ip_address'] == '10.254.0.10'
    assert second['fixed_ips'][0]['ip_address'] == '10.254.0.11'
    assert cloud.state.port_status(first) == 'DOWN'
    server = cloud.server(networks=[{'port': first['id']},
                                    {'uuid': cloud.net}])
    assert server['status'] == 'ACTIVE'
    assert first['device_id'] == server['id']
    agree, bound = ports_agree(cloud.state, server['id'])
    assert agree and len(bound) == 2
    assert cloud.state.port_status(first) == 'ACTIVE'
    spec = cloud.provisioner.created[0]
    assert spec == compute.ServerSpec(server['id'], 'vdu', '10.254.0.10',
                                      'compute01')


def test_an_address_given_twice_is_a_conflict_and_a_bad_one_a_400():
    cloud = Cloud()
    cloud.port(fixed_ips=[{'ip_address': '10.254.0.50'}])
    with pytest.raises(model.Conflict) as twice:
        cloud.port(fixed_ips=[{'ip_address': '10.254.0.50'}])
    assert twice.value.kind == 'IpAddressAlreadyAllocated'
    with pytest.raises(model.BadRequest):
        cloud.port(fixed_ips=[{'ip_address': '10.9.9.9'}])
    with pytest.raises(model.BadRequest):
        cloud.port(fixed_ips=[{'ip_address': '10.254.0.1'}])


def test_interface_detach_clears_device_id_and_the_mac_at_once():
    cloud = Cloud()
    port = cloud.port()
    old = cloud.server(networks=[{'port': port['id']}])
    cloud.actions.detach_interface(old['id'], port['id'])
    assert port['device_id'] == ''
    assert cloud.state.addresses(old['id']) == {}
    assert ports_agree(cloud.state, old['id'])[0]
    # The heal: the same port on a new server, then the old one deleted.
    new = cloud.server(name='vdu', networks=[{'port': port['id']}])
    cloud.compute.delete(old['id'])
    assert cloud.provisioner.deleted == [old['id']]
    assert old['id'] not in cloud.state.records('servers')
    macs = [a['OS-EXT-IPS-MAC:mac_addr']
            for a in cloud.state.addresses(new['id'])['lab-net']]
    assert macs == [port['mac_address']]
    assert port['id'] in cloud.state.records('ports')


def test_a_bound_port_is_in_use_for_another_server():
    cloud = Cloud()
    port = cloud.port()
    cloud.server(networks=[{'port': port['id']}])
    with pytest.raises(model.Conflict):
        cloud.server(name='other', networks=[{'port': port['id']}])


def test_server_delete_removes_its_own_ports_and_unbinds_given_ones():
    cloud = Cloud()
    given = cloud.port()
    server = cloud.server(networks=[{'port': given['id']},
                                    {'uuid': cloud.net}])
    cloud.compute.delete(server['id'])
    assert list(cloud.state.records('ports')) == [given['id']]
    assert given['device_id'] == ''


def test_volume_attach_and_detach_follow_nova():
    cloud = Cloud()
    volume = cloud.volumes.create({'size': 1, 'name': 'data'})
    assert volume['status'] == 'available'
    assert volume['volume_type'] == 'lvmdriver-1'
    server = cloud.server()
    attachment = cloud.actions.attach_volume(server['id'], volume['id'])
    assert volume['status'] == 'in-use'
    assert attachment['device'] == '/dev/vdb'
    with pytest.raises(model.BadRequest):
        cloud.volumes.delete(volume['id'])
    with pytest.raises(model.BadRequest):
        cloud.actions.attach_volume(server['id'], volume['id'])
    cloud.actions.detach_volume(server['id'], volume['id'])
    assert volume['status'] == 'available' and volume['attachments'] == []
    cloud.volumes.delete(volume['id'])
    assert volume['id'] not in cloud.state.records('volumes')
    assert [c[0] for c in cloud.backend.calls] == [
        'ensure', 'attach', 'detach', 'delete']


def test_boot_volumes_are_in_use_and_a_server_delete_frees_them():
    cloud = Cloud()
    volume = cloud.volumes.create({'size': 2})
    server = cloud.server(block_device_mapping_v2=[
        {'uuid': 'image', 'source_type': 'image',
         'destination_type': 'local', 'boot_index': 0},
        {'uuid': volume['id'], 'source_type': 'volume',
         'destination_type': 'volume', 'boot_index': -1,
         'device_name': 'vdb'}])
    assert volume['status'] == 'in-use'
    assert cloud.state.attachments_of(server['id'])[0][1]['device'] == \
        '/dev/vdb'
    cloud.compute.delete(server['id'])
    assert volume['status'] == 'available' and volume['attachments'] == []
    # The guest went first (Nova destroys it, then ends the volume's
    # connection): the backend is not asked to take the disk from it.
    assert ('detach', volume['id'], None, None) in cloud.backend.calls


def test_a_failed_build_is_an_error_with_a_fault_and_frees_its_volume():
    cloud = Cloud(provisioner=Provisioner(fail=True))
    volume = cloud.volumes.create({'size': 1})
    server = cloud.server(block_device_mapping_v2=[
        {'uuid': volume['id'], 'source_type': 'volume',
         'destination_type': 'volume', 'boot_index': -1}])
    assert server['status'] == 'ERROR'
    assert server['fault']['code'] == 500
    assert 'no VM today' in server['fault']['message']
    assert volume['status'] == 'available'


def test_anti_affinity_spreads_and_fails_with_no_host_left():
    cloud = Cloud(hosts=2)
    group = cloud.actions.create_group('workers', 'anti-affinity', None,
                                       CALLER)
    hints = {'group': group['id']}
    hosts = [cloud.server('w%d' % n, hints=hints)['host'] for n in (1, 2)]
    assert sorted(hosts) == ['compute01', 'compute02']
    third = cloud.server('w3', hints=hints)
    assert third['status'] == 'ERROR'
    assert third['fault']['message'].startswith('No valid host was found')
    assert cloud.provisioner.created[-1].name == 'w2'


def test_affinity_and_the_soft_policies():
    cloud = Cloud(hosts=3)
    cloud.server('elsewhere')                      # compute01 has one
    together = cloud.actions.create_group('t', 'affinity', None, CALLER)
    hosts = {cloud.server('a%d' % n, hints={'group': together['id']})[
        'host'] for n in range(3)}
    assert hosts == {'compute02'}
    soft = cloud.actions.create_group('s', 'soft-anti-affinity', None,
                                      CALLER)
    placed = [cloud.server('s%d' % n, hints={'group': soft['id']})['host']
              for n in range(4)]
    assert sorted(placed[:3]) == ['compute01', 'compute02', 'compute03']
    assert placed[3] in placed[:3]         # no host left: shared, no error


def test_a_server_no_host_took_is_deleted_without_the_provisioner():
    cloud = Cloud(hosts=1)
    group = cloud.actions.create_group('g', 'anti-affinity', None, CALLER)
    cloud.server('w1', hints={'group': group['id']})
    lost = cloud.server('w2', hints={'group': group['id']})
    cloud.compute.delete(lost['id'])
    assert cloud.provisioner.deleted == []
    assert lost['id'] not in cloud.state.records('servers')


def test_a_delete_during_the_build_waits_for_it_and_stays_deleting():
    gate = threading.Event()

    class Slow(Provisioner):
        def create_servers(self, specs):
            assert gate.wait(5)
            super(Slow, self).create_servers(specs)

    cloud = Cloud(provisioner=Slow(), run=storage.in_thread)
    server = cloud.server()
    assert server['status'] == 'BUILD'
    job = cloud.compute.delete(server['id'])
    assert cloud.compute.delete(server['id']) is None    # already deleting
    gate.set()
    job.join(5)
    assert cloud.provisioner.created[0].server_id == server['id']
    assert cloud.provisioner.deleted == [server['id']]
    assert cloud.state.records('servers') == {}


def test_console_output_comes_from_the_provisioner():
    cloud = Cloud()
    server = cloud.server()
    assert cloud.actions.console_output(server['id']) == \
        'line 1\nline 2\nlogin: '
    assert cloud.actions.console_output(server['id'], 1) == 'login: '


def test_the_state_survives_a_save_and_a_load(tmp_path):
    cloud = Cloud(tmp_path)
    port = cloud.port()
    server = cloud.server(networks=[{'port': port['id']}])
    volume = cloud.volumes.create({'size': 1})
    cloud.actions.attach_volume(server['id'], volume['id'])
    with open(str(tmp_path / 'iaas.json')) as handle:
        assert json.load(handle)['servers'][server['id']]['status'] == \
            'ACTIVE'
    loaded = model.State.load(str(tmp_path / 'iaas.json'))
    assert loaded.data == cloud.state.data
    assert loaded.addresses(server['id']) == \
        cloud.state.addresses(server['id'])
    again = network.Ports(loaded).create({'network_id': cloud.net})
    assert again['fixed_ips'][0]['ip_address'] == '10.254.0.11'
    assert model.State.open(str(tmp_path / 'iaas.json')).data == loaded.data
    fresh = model.State.open(str(tmp_path / 'other.json'), '10.9.0.0/24', 1)
    assert fresh.subnet()['cidr'] == '10.9.0.0/24'
    assert fresh.hosts == ['compute01']


def test_a_resumed_state_makes_work_in_flight_an_error(tmp_path):
    gate = threading.Event()

    class Stuck(Provisioner):
        def create_servers(self, specs):
            gate.wait(5)

    cloud = Cloud(tmp_path, provisioner=Stuck(), run=storage.in_thread)
    server = cloud.server()
    resumed = model.State.open(str(tmp_path / 'iaas.json'))
    found = resumed.records('servers')[server['id']]
    assert (found['status'], found['task_state']) == ('ERROR', None)
    assert 'stopped while' in found['fault']['message']
    with open(str(tmp_path / 'iaas.json')) as handle:
        assert json.load(handle)['servers'][server['id']]['status'] == \
            'ERROR'
    gate.set()      # the old process's build, which a real restart ended


def test_the_network_takes_the_id_a_request_names(tmp_path):
    named = '1642ac54-642c-407c-9c7d-e94c55ba5d33'
    state = model.State.open(str(tmp_path / 'iaas.json'), network_id=named)
    assert state.network()['id'] == named
    assert state.subnet()['network_id'] == named
    port = network.Ports(state).create({'network_id': named})
    assert port['network_id'] == named
    assert model.State().network()['id'] != named


def test_the_state_file_is_its_owners_alone(tmp_path):
    """Servers' user_data can carry credentials."""
    path = tmp_path / 'iaas.json'
    path.with_suffix('.json.tmp').write_text('left by a crash')
    path.with_suffix('.json.tmp').chmod(0o644)
    model.State(path=str(path)).save()
    assert path.stat().st_mode & 0o777 == 0o600
    assert not path.with_suffix('.json.tmp').exists()


def test_a_volume_in_use_is_refused_for_another_servers_boot():
    """What Heat asks when it replaces a server whose volume is mapped at
    boot (the new server first, with the old one's volume): refused as
    Nova refuses it, nothing of the new server kept, the old one keeping
    its volume."""
    cloud = Cloud()
    volume = cloud.volumes.create({'size': 1})
    mapping = [{'uuid': volume['id'], 'source_type': 'volume',
                'destination_type': 'volume', 'boot_index': -1,
                'device_name': 'vdb'}]
    old = cloud.server(block_device_mapping_v2=mapping)
    port = cloud.port()
    with pytest.raises(model.BadRequest) as refused:
        cloud.server(networks=[{'port': port['id']}],
                     block_device_mapping_v2=mapping)
    assert refused.value.message == 'Invalid volume: volume %s is in-use.' \
        % volume['id']
    assert list(cloud.state.records('servers')) == [old['id']]
    assert port['device_id'] == ''
    assert [(a['server_id'], a['device']) for a in volume['attachments']] \
        == [(old['id'], '/dev/vdb')]
    assert volume['status'] == 'in-use'
