"""The stand-in's state when work overlaps or fails half-way: a server
deleted while its volume attaches or detaches, a build that fails during
a delete, a deletion that fails, a port for no server, a detach during
a delete. Jobs run inline or one by one, in the order a test needs."""

import pytest

from k8s_mgmt_lab.openstack.iaas import model
from tests.unit.lab.iaas_cloud import CALLER, Cloud, Jobs, Provisioner
from tests.unit.lab.iaas_cloud import inline
from tests.unit.lab.iaas_cloud import ports_agree


def test_a_server_deleted_while_its_volume_attaches_leaves_it_available():
    """The server is deleted while the backend shows the volume to its
    VM: the attach job then finds its attachment released, so the volume
    stays available with none, and the backend takes back what it
    showed the gone VM."""
    cloud = Cloud()
    volume = cloud.volumes.create({'size': 1})
    server = cloud.server()
    attach = cloud.backend.attach

    def attach_during_the_delete(volume_id, server_id, device):
        attach(volume_id, server_id, device)
        cloud.compute.delete(server_id)

    cloud.backend.attach = attach_during_the_delete
    cloud.actions.attach_volume(server['id'], volume['id'])
    assert server['id'] not in cloud.state.records('servers')
    assert (volume['status'], volume['attachments']) == ('available', [])
    assert [c[0] for c in cloud.backend.calls] == [
        'ensure', 'attach', 'detach']
    cloud.volumes.delete(volume['id'])


def test_a_failed_detach_of_a_volume_already_released_stays_available():
    cloud = Cloud()
    volume = cloud.volumes.create({'size': 1})
    server = cloud.server()
    cloud.actions.attach_volume(server['id'], volume['id'])
    jobs = []
    cloud.compute.run = lambda work, name: jobs.append((name, work))
    cloud.actions.detach_volume(server['id'], volume['id'])
    assert volume['status'] == 'detaching'
    cloud.compute.run = inline
    cloud.compute.delete(server['id'])
    [(name, disconnect)] = jobs
    disconnect()
    assert (volume['status'], volume['attachments']) == ('available', [])


def test_a_port_for_a_server_that_does_not_exist_is_not_kept():
    cloud = Cloud()
    with pytest.raises(model.NotFound):
        cloud.port(device_id='no-such-server')
    assert cloud.state.records('ports') == {}
    port = cloud.port()
    server = cloud.server(networks=[{'port': port['id']}])
    with pytest.raises(model.NotFound):
        cloud.ports.update(port['id'], {'device_id': 'no-such-server',
                                        'name': 'renamed'})
    assert (port['device_id'], port['name']) == (server['id'], '')
    assert ports_agree(cloud.state, server['id']) == (
        True, {(port['mac_address'], '10.254.0.10')})


def test_a_build_that_fails_during_a_delete_stays_deleting():
    jobs = Jobs()
    cloud = Cloud(provisioner=Provisioner(fail=True), run=jobs)
    server = cloud.server()
    cloud.compute.delete(server['id'])
    jobs.run_next()                                 # the build fails
    assert (server['status'], server['task_state']) == ('ERROR', 'deleting')
    assert cloud.compute.delete(server['id']) is None
    assert len(jobs.waiting) == 1
    jobs.run_next()
    assert cloud.state.records('servers') == {}


def test_a_deletion_that_fails_can_be_asked_again():
    class Stubborn(Provisioner):
        def delete_servers(self, server_ids):
            raise RuntimeError('the VM will not go')

    cloud = Cloud(provisioner=Stubborn())
    server = cloud.server()
    cloud.compute.delete(server['id'])
    assert (server['status'], server['task_state']) == ('ERROR', None)
    assert 'will not go' in server['fault']['message']
    cloud.provisioner.delete_servers = lambda server_ids: None
    cloud.compute.delete(server['id'])
    assert cloud.state.records('servers') == {}


def test_a_volume_of_a_server_being_deleted_is_not_detached_twice():
    jobs = Jobs()
    cloud = Cloud(run=jobs)
    volume = cloud.volumes.create({'size': 1})
    server = cloud.server()
    jobs.run_next()                                 # the build
    cloud.actions.attach_volume(server['id'], volume['id'])
    jobs.run_next()                                 # the attach
    cloud.compute.delete(server['id'])
    with pytest.raises(model.Conflict):
        cloud.actions.detach_volume(server['id'], volume['id'])
    jobs.run_next()                                 # the deletion
    assert [c[0] for c in cloud.backend.calls] == [
        'ensure', 'attach', 'detach']
    assert (volume['status'], volume['attachments']) == ('available', [])


def test_an_interface_the_provisioner_cannot_plug_is_not_left_bound():
    class NoHotPlug(Provisioner):
        def attach_interface(self, server_id, port_id, mac):
            raise RuntimeError('no free PCI slot')

    cloud = Cloud(provisioner=NoHotPlug())
    server = cloud.server()
    given = cloud.port()
    with pytest.raises(RuntimeError):
        cloud.actions.attach_interface(server['id'], {'port_id': given['id']},
                                       CALLER)
    with pytest.raises(RuntimeError):
        cloud.actions.attach_interface(server['id'], {}, CALLER)
    assert given['device_id'] == '' and server['port_ids'] == []
    assert list(cloud.state.records('ports')) == [given['id']]


def test_a_port_bound_already_is_in_use_for_an_interface_attach():
    class HotPlug(Provisioner):
        def attach_interface(self, server_id, port_id, mac):
            pass

    cloud = Cloud(provisioner=HotPlug())
    given = cloud.port()
    server = cloud.server(networks=[{'port': given['id']}])
    with pytest.raises(model.Conflict):
        cloud.actions.attach_interface(server['id'], {'port_id': given['id']},
                                       CALLER)
    assert given['device_id'] == server['id']
