"""Cinder volumes of the lab as real block devices: loop devices on files.

A volume is a sparse file of its size under ``<state_dir>/volumes``, named
by the volume id. Attached to a server, the file is set up as a loop device
on the host (``losetup --find --show``) and the server's VM gets a block
node for it in its private ``/dev`` under the name Nova gave the attachment
(``/dev/vdb``, ``/dev/vdc``, ...), with the link a KVM guest has for a
virtio disk: ``/dev/disk/by-id/virtio-<first 20 chars of the volume id>``.

A VM's mounts live in its own mount namespace, so they end with the VM; the
loop device is then released. ``losetup -d`` of a loop device that is still
open only marks it for release when it is closed, so a release waits until
no loop device is backed by the volume's file any more.
"""

import glob
import os
import re

from oslo_log import log as logging

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines.host import run

LOG = logging.getLogger(__name__)

SUBDIR = 'volumes'
SUFFIX = '.img'
GIB = 1024 ** 3
RELEASE_DEADLINE = 30.0    # s for a loop device to be free after its VM
BY_ID_CHARS = 20           # virtio serial: the volume id cut to 20 chars
_VOLUME_ID = re.compile(r'^[A-Za-z0-9-]+$')
_DEVICE = re.compile(r'^/dev/vd[a-z]$')

# Runs inside the VM (its mounts and root): the block node and its link.
ATTACH_SCRIPT = """set -eu
mknod -m 660 "$1" b "$2" "$3"
chgrp disk "$1" 2>/dev/null || true
mkdir -p /dev/disk/by-id
ln -sfn "../../${1#/dev/}" "/dev/disk/by-id/$4"
"""
DETACH_SCRIPT = 'rm -f "$1" "/dev/disk/by-id/$2"\n'


def volumes_dir(state_dir):
    return os.path.join(os.path.abspath(state_dir), SUBDIR)


def by_id_name(volume_id):
    """The name udev gives a virtio disk whose serial is the volume id."""
    return 'virtio-' + volume_id[:BY_ID_CHARS]


def loop_devices(state_dir):
    """{loop device: backing file} of every loop device whose file is in
    the lab's volume directory (also when that file was deleted)."""
    folder = volumes_dir(state_dir) + '/'
    found = {}
    for path in glob.glob('/sys/block/loop*/loop/backing_file'):
        try:
            with open(path) as handle:
                backing = handle.read().strip()
        except OSError:
            continue   # released meanwhile
        if backing.endswith(' (deleted)'):
            backing = backing[:-len(' (deleted)')]
        if backing.startswith(folder):
            found['/dev/' + path.split('/')[3]] = backing
    return found


def release(state_dir, backing_files=None, deadline=RELEASE_DEADLINE):
    """Detach the lab's loop devices (those of ``backing_files`` only,
    when given) and wait until the kernel has let every one go."""
    wanted = None if backing_files is None else set(backing_files)
    poll = Poll(deadline, first=0.005, maximum=0.2)
    for _ in poll:
        loops = {dev: path for dev, path in loop_devices(state_dir).items()
                 if wanted is None or path in wanted}
        if not loops:
            return
        for device in loops:
            # Fails while busy on old kernels; marks it for release on new.
            run(['losetup', '-d', device], check=False)
    raise LabError('loop devices still in use %.0f s after their VMs went: '
                   '%s' % (deadline, ', '.join(
                       '%s (%s)' % item for item in sorted(loops.items()))))


class LoopVolumes(object):
    """The lab cloud's volume backend: files, loop devices, VM nodes.

    ``vms`` runs commands inside a VM: ``vms.exec(server_id, argv)``
    (:class:`k8s_mgmt_lab.machines.vm.VMManager`).
    """

    def __init__(self, state_dir, vms):
        self.state_dir = os.path.abspath(state_dir)
        self.vms = vms

    def path(self, volume_id):
        if not _VOLUME_ID.match(volume_id or ''):
            raise LabError('invalid volume id %r' % volume_id)
        return os.path.join(volumes_dir(self.state_dir), volume_id + SUFFIX)

    def volume_ids(self):
        """Ids of the volumes that have a file."""
        try:
            names = os.listdir(volumes_dir(self.state_dir))
        except FileNotFoundError:
            return set()
        return {n[:-len(SUFFIX)] for n in names if n.endswith(SUFFIX)}

    def ensure(self, volume_id, size_gib):
        """A sparse file of ``size_gib`` GiB for the volume, once."""
        path = self.path(volume_id)
        if os.path.exists(path):
            return
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path, 'xb') as handle:
            handle.truncate(int(size_gib) * GIB)
        LOG.info('lab volume %s: %s GiB file %s', volume_id, size_gib, path)

    def attach(self, volume_id, server_id, device):
        """Set the volume's file up as a loop device and show it to the
        server's VM as ``device`` (``/dev/vdX``); the loop device."""
        if not _DEVICE.match(device or ''):
            raise LabError('volume %s: device %r is not a virtio disk name'
                           % (volume_id, device))
        path = self.path(volume_id)
        held = [dev for dev, backing in loop_devices(self.state_dir).items()
                if backing == path]
        if held:   # one writer per volume: never a second loop device
            raise LabError('volume %s is still attached elsewhere as %s'
                           % (volume_id, ', '.join(held)))
        loop = run(['losetup', '--find', '--show', path]).stdout.strip()
        rdev = os.stat(loop).st_rdev
        try:
            self.vms.exec(server_id, [
                'sh', '-c', ATTACH_SCRIPT, 'attach-volume', device,
                str(os.major(rdev)), str(os.minor(rdev)),
                by_id_name(volume_id)])
        except BaseException:
            release(self.state_dir, [path])
            raise
        LOG.info('lab volume %s: %s is %s in VM %s', volume_id, loop,
                 device, server_id)
        return loop

    def detach(self, volume_id, server_id=None, device=None):
        """Take the volume away: its node from a VM that still runs, then
        its loop device (waits until the kernel released it)."""
        if server_id and device:
            self.vms.exec(server_id, ['sh', '-c', DETACH_SCRIPT,
                                      'detach-volume', device,
                                      by_id_name(volume_id)], check=False)
        release(self.state_dir, [self.path(volume_id)])

    def delete(self, volume_id):
        """Release the volume's loop device and remove its file."""
        self.detach(volume_id)
        try:
            os.unlink(self.path(volume_id))
        except FileNotFoundError:
            pass
        LOG.info('lab volume %s deleted', volume_id)
