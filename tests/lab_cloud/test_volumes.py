"""Cinder volumes in the lab cloud's model, and through its Heat API as the
driver's topology reader, ``lab status`` and ``lab heal`` see them."""

import types

from heatclient import client as heat_client
import pytest

from k8s_mgmt_lab import api
from k8s_mgmt_lab import cloud as lab_cloud
from k8s_mgmt_lab.conductor import lcm_heal
from k8s_mgmt_lab.conductor import status
from k8s_mgmt.topology import heat as topology_heat
from k8s_mgmt.topology import model
from tests.lab_cloud import storage_hot

PASSWORD = 'lab-volume-pw'
ATTACHMENT_KEYS = {'server_id', 'attachment_id', 'volume_id', 'device',
                   'host_name', 'attached_at', 'id'}


def _cloud(tmp_path, **kwargs):
    cloud = lab_cloud.LabCloud(storage_hot.write_package(tmp_path, **kwargs))
    return cloud, cloud.create_stack('storage', {}, name='storage-stack')


def _shown(cloud, stack_id, name):
    return cloud.resource(stack_id, name)[2]


def test_attachment_reported_as_cinder_and_nova_report_it(tmp_path):
    # the template asks for vdc; Nova takes the next free disk: vdb
    cloud, stack_id = _cloud(tmp_path, device='vdc', extra=True)
    server = _shown(cloud, stack_id, 'storage_server')
    volume = _shown(cloud, stack_id, 'storage_server_volume')
    extra = _shown(cloud, stack_id, 'extra_volume')
    first, = volume['attachments']
    assert set(first) == ATTACHMENT_KEYS
    assert first['server_id'] == server['id']
    assert first['volume_id'] == first['id'] == volume['id']
    assert first['device'] == '/dev/vdb'
    assert first['host_name'] == server['OS-EXT-SRV-ATTR:host']
    assert volume['status'] == 'in-use' and volume['size'] == 1
    # OS::Cinder::VolumeAttachment: the next letter
    assert extra['attachments'][0]['device'] == '/dev/vdc'
    assert extra['size'] == 2
    assert sorted(v['id'] for v in server[
        'os-extended-volumes:volumes_attached']) == sorted(
            [volume['id'], extra['id']])


def _heal(cloud, stack_id, volume_too):
    cloud.mark_unhealthy(stack_id, 'storage_server')
    if volume_too:
        cloud.mark_unhealthy(stack_id, 'storage_server_volume')
    cloud.update_stack(stack_id)
    return (_shown(cloud, stack_id, 'storage_server'),
            _shown(cloud, stack_id, 'storage_server_volume'))


@pytest.mark.parametrize('volume_too', [False, True])
def test_update_replaces_an_unhealthy_volume_only(tmp_path, volume_too):
    cloud, stack_id = _cloud(tmp_path)
    old_server = _shown(cloud, stack_id, 'storage_server')
    old_volume = _shown(cloud, stack_id, 'storage_server_volume')
    server, volume = _heal(cloud, stack_id, volume_too)
    assert server['id'] != old_server['id']
    assert (volume['id'] != old_volume['id']) == volume_too
    att, = volume['attachments']
    assert att['server_id'] == server['id'] and att['device'] == '/dev/vdb'
    assert att['attachment_id'] != old_volume['attachments'][0][
        'attachment_id']
    assert server['os-extended-volumes:volumes_attached'] == [
        {'id': volume['id'], 'delete_on_termination': False}]
    assert cloud.resource(stack_id, 'storage_server_volume')[1][
        'status'] == 'CREATE_COMPLETE'


@pytest.fixture
def served(tmp_path):
    cloud, stack_id = _cloud(tmp_path)
    server, _ = api.serve(cloud, password=PASSWORD)
    record = {'stack_id': stack_id, 'heat': {
        'auth_url': server.auth_url, 'username': server.username,
        'password': PASSWORD, 'project_name': server.project_name}}
    yield cloud, stack_id, record
    server.stop()


def test_topology_reader_gets_the_volume_device(served):
    cloud, stack_id, record = served
    spec = model.TopologySpec(groups=(model.GroupSpec(
        role='storage', ssh_cp_name='storage_server_CP'),),
        volume_resource_ids=('storage_server_volume',))
    reader = topology_heat.HeatReader(status.lab_session(record))
    topology = reader.read_topology(spec, stack_id)
    node, = topology.storage
    assert topology.volumes == (model.Volume(
        resource_name='storage_server_volume',
        volume_id=_shown(cloud, stack_id, 'storage_server_volume')['id'],
        device='/dev/vdb', server_id=node.server_id),)


def test_lab_status_lists_volumes(served):
    cloud, stack_id, record = served
    volume = _shown(cloud, stack_id, 'storage_server_volume')
    assert status.read_volumes(record) == [{
        'id': volume['id'], 'resource': 'storage_server_volume',
        'device': '/dev/vdb', 'size': 1, 'status': 'in-use',
        'server': _shown(cloud, stack_id, 'storage_server')['id']}]


@pytest.mark.parametrize('include', [True, False])
def test_lab_heal_marks_the_volumes_unless_kept(served, include):
    cloud, stack_id, record = served
    client = heat_client.Client('1', session=status.lab_session(record))
    node = types.SimpleNamespace(stack_id=stack_id,
                                 resource_name='storage_server')
    ref = lcm_heal._stack_ref(client, stack_id)
    marked = lcm_heal.unhealthy_resources(client, ref, node, include)
    assert marked == [(ref, 'storage_server')] + (
        [(ref, 'storage_server_volume')] if include else [])
