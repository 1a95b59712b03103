"""Cinder volumes of the lab as real block devices in real lab VMs.

Real Heat builds a small storage stack (one server, a volume mapped as
vdb) on the lab's stand-in Nova and Cinder: the VM sees the volume as
/dev/vdb with its by-id link, a real ext4 made on it survives a heal that
keeps the volume, a heal that does not gives an empty one, and no loop
device or file outlives the stack.
"""

import contextlib
import os
import uuid

import pytest

from k8s_mgmt import polling
from session_lab import SUBNET as TEST_SUBNET  # this worker's
import storage_hot


def _losetup_files():
    from k8s_mgmt_lab.machines.host import run
    return run(['losetup', '--list', '--noheadings', '--output',
                'BACK-FILE']).stdout


NETWORK_ID = '6b1f0c1e-3d4c-4a55-9d0e-6c1d2b7a9e01'   # a UUID, as Neutron's


@contextlib.contextmanager
def _region(state_dir, tag, subnet, vms):
    """The lab's stand-ins over ``vms`` in a region of the session's
    shared control plane; released when the block ends."""
    from k8s_mgmt_lab import manager
    from k8s_mgmt_lab.machines import volumes
    from k8s_mgmt_lab.openstack import lab_region
    from k8s_mgmt_lab.openstack import tenancy
    region = lab_region.LabRegion(state_dir, tag,
                                  lab_region.shared_plane_default())
    region.start_plane()
    try:
        region.serve(subnet, NETWORK_ID, 3, manager.VMProvisioner(vms),
                     volumes.LoopVolumes(state_dir, vms))
        yield region
    finally:
        region.stop_serving()
        tenancy.unregister(region.plane, region.name)


class Storage(object):
    """A storage stack built by real Heat, read through it."""

    def __init__(self, region, package_dir, name):
        self.heat = region.stacks()
        self.path = self.heat.create_flavour(name, package_dir, 'storage',
                                             {})
        self.heat.wait(self.path, 'CREATE')

    def ids(self):
        return tuple(self.heat.resource(self.path, name)[
            'physical_resource_id'] for name in ('storage_server',
                                                 'storage_server_volume'))

    def heal(self, keep):
        """Tacker's heal: the server (and, unless ``keep``, its volume)
        marked unhealthy, then an update. A kept volume is detached from
        the old server first, as the driver's heal_start does: Heat
        creates the new server before it deletes the old one, and Nova
        refuses a volume still in use."""
        stack = self.path
        if keep:
            self._detach(*self.ids())
        self.heat.mark_unhealthy(stack, 'storage_server', 'Healing')
        if not keep:
            self.heat.mark_unhealthy(stack, 'storage_server_volume',
                                     'Healing')
        self.heat.update(stack)
        self.heat.wait(stack, 'UPDATE')
        return self.ids()

    def _detach(self, server_id, volume_id):
        session, region = self.heat.session, self.heat.heat['region_name']
        session.delete('/servers/%s/os-volume_attachments/%s' % (
            server_id, volume_id), endpoint_filter={
                'service_type': 'compute', 'region_name': region})
        for _attempt in polling.Poll(60, first=0.1, maximum=1.0):
            shown = session.get('/volumes/%s' % volume_id, endpoint_filter={
                'service_type': 'volumev3', 'region_name': region}).json()
            if shown['volume']['status'] == 'available':
                return
        raise AssertionError('volume %s not available 60 s after its '
                             'detach' % volume_id)

    def delete(self):
        """Delete the stack unless it is gone (Heat shows a deleted stack
        by its id as DELETE_COMPLETE)."""
        shown = self.heat.show(self.path)
        if shown is not None and shown['stack_status'] != 'DELETE_COMPLETE':
            self.heat.delete_and_wait(self.path)


@pytest.fixture
def storage_stack(tmp_path, lab_network, vm_manager, lab_config):
    with _region(lab_config['state_dir'], lab_config['tag'] + 'v',
                 TEST_SUBNET, vm_manager) as region:
        stack = Storage(region, storage_hot.write_package(tmp_path),
                        'volume-test')
        try:
            yield stack
        finally:
            stack.delete()     # whatever the test's outcome


def _in_vm(vms, server_id, script):
    return vms.exec(server_id, ['sh', '-c', script], check=False)


def test_volume_is_vdb_and_heal_keeps_or_renews_it(storage_stack,
                                                   vm_manager, lab_config):
    from k8s_mgmt_lab.machines import volumes
    stack = storage_stack
    server_id, volume_id = stack.ids()
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
    # (unmounted first, as the driver's heal_start does: a guest does not
    # give up a disk it has mounted)
    assert _in_vm(vm_manager, server_id,
                  'umount /srv/data').returncode == 0
    kept_server, kept_volume = stack.heal(keep=True)
    assert kept_server != server_id and kept_volume == volume_id
    read = _in_vm(vm_manager, kept_server,
                  'set -e; blkid -p -s TYPE -o value /dev/vdb; mkdir -p '
                  '/srv/data; mount /dev/vdb /srv/data; cat /srv/data/marker')
    assert read.stdout.split() == ['ext4', 'kept'], read.stderr

    # default: a new, empty volume; the old one's file is gone
    new_server, new_volume = stack.heal(keep=False)
    assert new_volume != volume_id and not os.path.exists(path)
    assert path not in _losetup_files()
    assert _in_vm(vm_manager, new_server,
                  'blkid -p /dev/vdb').returncode == 2
    by_id = _in_vm(vm_manager, new_server, 'readlink /dev/disk/by-id/'
                   'virtio-%s' % new_volume[:20])
    assert by_id.stdout.strip() == '../../vdb'

    stack.delete()
    assert volumes.volumes_dir(lab_config['state_dir']) + '/' not in \
        _losetup_files()
    assert not os.listdir(volumes.volumes_dir(lab_config['state_dir']))


def test_teardown_releases_a_mounted_volume(tmp_path, lab_config,
                                            assert_lab_clean):
    """A lab left with a volume mounted in a VM (a failed run: its stack
    never deleted) is torn down: no loop device, no file, nothing
    else."""
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
        with _region(state_dir, tag, subnet, vms) as region:
            stack = Storage(region, storage_hot.write_package(tmp_path),
                            'volumes-%s' % uuid.uuid4())
            server_id, _ = stack.ids()
            busy = _in_vm(vms, server_id, 'set -e; mkfs.ext4 -q /dev/vdb; '
                          'mkdir -p /srv/data; mount /dev/vdb /srv/data')
            assert busy.returncode == 0, busy.stderr
            left = cleanup.find_leftovers(state_dir, tag, bridge)
            assert len(left['loop_devices']) == 1
    finally:
        cleanup.teardown(state_dir)
    assert_lab_clean(state_dir, tag, bridge)
    assert state_dir + '/' not in _losetup_files()
