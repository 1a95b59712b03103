"""Cinder volumes of the lab as real block devices in real lab VMs.

The lab's cloud builds a small storage stack (one server, a volume mapped
as vdb): the VM sees the volume as /dev/vdb with its by-id link, a real
ext4 made on it survives a heal that keeps the volume, a heal that does
not gives an empty one, and no loop device or file outlives the stack.
"""

import os
import uuid

import pytest

from tests.lab_cloud import storage_hot

from session_lab import SUBNET as TEST_SUBNET  # this worker's


def _losetup_files():
    from k8s_mgmt_lab.machines.host import run
    return run(['losetup', '--list', '--noheadings', '--output',
                'BACK-FILE']).stdout


def _cloud(tmp_path, state_dir, network, vms, subnet):
    from k8s_mgmt_lab import cloud as lab_cloud
    from k8s_mgmt_lab import manager
    from k8s_mgmt_lab.machines import volumes
    return lab_cloud.LabCloud(
        storage_hot.write_package(tmp_path), subnet,
        provisioner=manager.VMProvisioner(vms),
        volumes=volumes.LoopVolumes(state_dir, vms))


@pytest.fixture
def storage_stack(tmp_path, lab_network, vm_manager, lab_config):
    cloud = _cloud(tmp_path, lab_config['state_dir'], lab_network,
                   vm_manager, TEST_SUBNET)
    stack_id = cloud.create_stack('storage', {}, name='volume-test')
    yield cloud, stack_id
    if any(s['id'] == stack_id for s in cloud.top_stacks()):
        cloud.delete_stack(stack_id)   # whatever the test's outcome


def _ids(cloud, stack_id):
    server = cloud.resource(stack_id, 'storage_server')[2]
    volume = cloud.resource(stack_id, 'storage_server_volume')[2]
    return server['id'], volume['id']


def _in_vm(vms, server_id, script):
    return vms.exec(server_id, ['sh', '-c', script], check=False)


def _heal(cloud, stack_id, keep):
    cloud.mark_unhealthy(stack_id, 'storage_server')
    if not keep:
        cloud.mark_unhealthy(stack_id, 'storage_server_volume')
    cloud.update_stack(stack_id)
    return _ids(cloud, stack_id)


def test_volume_is_vdb_and_heal_keeps_or_renews_it(storage_stack,
                                                   vm_manager, lab_config):
    from k8s_mgmt_lab.machines import volumes
    cloud, stack_id = storage_stack
    server_id, volume_id = _ids(cloud, stack_id)
    path = volumes.LoopVolumes(lab_config['state_dir'], vm_manager).path(
        volume_id)
    assert os.path.getsize(path) == 1024 ** 3 and path in _losetup_files()
    listing = _in_vm(vm_manager, server_id, 'ls -l /dev/disk/by-id')
    assert 'virtio-%s -> ../../vdb' % volume_id[:20] in listing.stdout
    assert _in_vm(vm_manager, server_id, 'test -b /dev/vdb').returncode == 0
    # the driver's whole-disk check: one row, a disk the kernel calls loop
    rows = _in_vm(vm_manager, server_id, 'lsblk -n -r -o TYPE /dev/vdb')
    assert rows.stdout.split() == ['loop'], rows.stderr
    assert _in_vm(vm_manager, server_id,
                  'blkid -p /dev/vdb').returncode == 2   # nothing on it
    made = _in_vm(vm_manager, server_id,
                  'set -e; mkfs.ext4 -q /dev/vdb; mkdir -p /srv/data; '
                  'mount /dev/vdb /srv/data; echo kept > /srv/data/marker')
    assert made.returncode == 0, made.stderr

    # keep: the same volume, its ext4 and the marker on the new server
    kept_server, kept_volume = _heal(cloud, stack_id, keep=True)
    assert kept_server != server_id and kept_volume == volume_id
    read = _in_vm(vm_manager, kept_server,
                  'set -e; blkid -p -s TYPE -o value /dev/vdb; mkdir -p '
                  '/srv/data; mount /dev/vdb /srv/data; cat /srv/data/marker')
    assert read.stdout.split() == ['ext4', 'kept'], read.stderr

    # default: a new, empty volume; the old one's file is gone
    new_server, new_volume = _heal(cloud, stack_id, keep=False)
    assert new_volume != volume_id and not os.path.exists(path)
    assert path not in _losetup_files()
    assert _in_vm(vm_manager, new_server,
                  'blkid -p /dev/vdb').returncode == 2
    by_id = _in_vm(vm_manager, new_server, 'readlink /dev/disk/by-id/'
                   'virtio-%s' % new_volume[:20])
    assert by_id.stdout.strip() == '../../vdb'

    cloud.delete_stack(stack_id)
    assert volumes.volumes_dir(lab_config['state_dir']) + '/' not in \
        _losetup_files()
    assert not os.listdir(volumes.volumes_dir(lab_config['state_dir']))


def test_teardown_releases_a_mounted_volume(tmp_path, lab_config,
                                            assert_lab_clean):
    """A lab left with a volume mounted in a VM (a failed run) is torn
    down: no loop device, no file, nothing else."""
    from k8s_mgmt_lab.machines import cleanup
    from k8s_mgmt_lab.machines import net
    from k8s_mgmt_lab.machines import vm
    state_dir = lab_config['state_dir'] + '-volumes'
    subnet, bridge, tag = '10.254.208.0/24', 'k8slabv0', 'kvo'
    cleanup.teardown(state_dir, tag=tag, bridge=bridge)
    try:
        network = net.LabNetwork(state_dir, subnet=subnet, bridge=bridge,
                                 tag=tag)
        network.up()
        vms = vm.VMManager(network, state_dir)
        cloud = _cloud(tmp_path, state_dir, network, vms, subnet)
        stack_id = cloud.create_stack('storage', {}, name=str(uuid.uuid4()))
        server_id, _ = _ids(cloud, stack_id)
        busy = _in_vm(vms, server_id, 'set -e; mkfs.ext4 -q /dev/vdb; '
                      'mkdir -p /srv/data; mount /dev/vdb /srv/data')
        assert busy.returncode == 0, busy.stderr
        left = cleanup.find_leftovers(state_dir, tag, bridge)
        assert len(left['loop_devices']) == 1
    finally:
        cleanup.teardown(state_dir)
    assert_lab_clean(state_dir, tag, bridge)
    assert state_dir + '/' not in _losetup_files()
