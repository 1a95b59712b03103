"""A storage server on real block devices, for setup_storage.sh's tests.

Each volume is a file-backed loop device. The script runs inside a private
mount namespace (``unshare --mount``) whose ``/dev`` is a small tmpfs
holding the volumes as ``/dev/vdb``, ``/dev/vdc`` and the
``/dev/disk/by-id/virtio-...`` links a KVM guest has, as in the lab's VMs,
and whose ``/srv`` is a tmpfs for the mount points (the script refuses
them under /tmp, where pytest's directories are); blkid, wipefs,
mkfs.ext4, mount and findmnt are the real ones, and every mount goes with
the namespace. Only the package and service tools are stand-ins (the host
gets no NFS server), and /etc/fstab and /etc/exports are written under
``-o DIR``.
"""

import hashlib
import os
import re
import shutil
import subprocess

import pytest

from tests.functional.scripts.script_helpers import REPO, write_tool

SCRIPT = REPO / 'k8s_mgmt' / 'scripts' / 'setup_storage.sh'
TOOLS = ['losetup', 'unshare', 'nsenter', 'mknod', 'blkid', 'mkfs.ext4',
         'mount', 'findmnt', 'lsblk', 'wipefs', 'blockdev', 'cmp', 'dd',
         'od', 'e2fsck', 'debugfs']
MIB = 1024 * 1024
VOLUME_BYTES = 32 * MIB
# The mount points' parent, a tmpfs of the namespace.
SRV = '/srv'
FOREIGN_FSTAB = 'LABEL=cloudimg-rootfs / ext4 discard,errors=remount-ro 0 1\n'

needs_loop_devices = [
    pytest.mark.skipif(os.geteuid() != 0, reason='needs root (loop devices)'),
    pytest.mark.skipif(
        any(shutil.which(tool) is None for tool in TOOLS),
        reason='needs %s' % ', '.join(TOOLS)),
]


def run(argv, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          check=False, **kwargs)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as image:
        for chunk in iter(lambda: image.read(MIB), b''):
            digest.update(chunk)
    return digest.hexdigest()


def probe(path):
    result = run(['blkid', '-p', '-o', 'export', str(path)])
    return dict(line.split('=', 1) for line in result.stdout.splitlines())


def managed_block(text):
    """The lines of the script's block in /etc/fstab or /etc/exports."""
    match = re.search(r'^# BEGIN k8s-mgmt storage\n(.*?)'
                      r'^# END k8s-mgmt storage\n', text, re.M | re.S)
    assert match, text
    return [line for line in match.group(1).splitlines()
            if not line.startswith('#')]


class StorageVM:
    """A mount namespace with volumes as /dev/vd* devices.

    ``add_volume`` attaches an image before ``start``; ``run_script`` runs
    setup_storage.sh in the namespace; ``close`` ends the namespace (its
    mounts go with it) and detaches every loop device, also after a failure.
    """

    def __init__(self, base):
        self.base = base
        self.images = base / 'images'
        self.images.mkdir()
        self.root = base / 'root'
        (self.root / 'etc').mkdir(parents=True)
        (self.root / 'etc' / 'fstab').write_text(FOREIGN_FSTAB)
        self.bin = base / 'bin'
        self.bin.mkdir()
        self.calls = base / 'calls.log'
        self._stand_ins()
        self.loops = []
        self.devices = []  # (name in the VM, loop device, by-id link name)
        self.holder = None

    def _stand_ins(self):
        record = 'echo "$(basename "$0") $*" >> %s\n' % self.calls
        write_tool(self.bin, 'dpkg-query',
                   record + 'printf "install ok installed"\n')
        write_tool(self.bin, 'systemctl', record + 'exit 0\n')
        write_tool(self.bin, 'exportfs', record + 'exit 0\n')
        write_tool(self.bin, 'apt-get', record + 'exit 1\n')

    def image(self, name):
        return self.images / (name + '.img')

    def add_volume(self, name, volume_id=None, prepare=None):
        """Attach images/NAME.img (made empty unless ``prepare`` made it)
        as /dev/NAME, linked from by-id when ``volume_id`` is given."""
        path = self.image(name)
        if prepare is not None:
            prepare(path)
        else:
            with open(path, 'wb') as image:
                image.truncate(VOLUME_BYTES)
        result = run(['losetup', '--find', '--show', str(path)])
        if result.returncode != 0:
            pytest.skip('no loop device: %s' % result.stderr.strip())
        loop = result.stdout.strip()
        self.loops.append(loop)
        link = 'virtio-' + volume_id[:20] if volume_id else None
        self.devices.append((name, loop, link))
        return '/dev/' + name

    def start(self):
        lines = ['set -e',
                 'mount -t tmpfs -o mode=755 k8s-mgmt-test-dev /dev',
                 'mknod -m 666 /dev/null c 1 3',
                 'mknod -m 666 /dev/zero c 1 5',
                 'ln -s /proc/self/fd /dev/fd',
                 'mkdir -p /dev/disk/by-id',
                 'mount -t tmpfs -o mode=755 k8s-mgmt-test-srv ' + SRV]
        for name, loop, link in self.devices:
            number = os.stat(loop).st_rdev
            lines.append('mknod -m 660 /dev/%s b %d %d' % (
                name, os.major(number), os.minor(number)))
            if link:
                lines.append('ln -s ../../%s /dev/disk/by-id/%s' % (name,
                                                                    link))
        # Ready once /dev is made; then it holds the namespace until its
        # stdin closes.
        lines += ['echo ready', 'exec cat']
        self.holder = subprocess.Popen(
            ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
             '\n'.join(lines)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        ready = self.holder.stdout.readline()
        assert ready == 'ready\n', self.holder.stderr.read()

    def inside(self, argv):
        return run(['nsenter', '--target', str(self.holder.pid), '--mount',
                    '--'] + list(argv),
                   env={'PATH': '%s:%s' % (self.bin, os.environ['PATH'])})

    def sh(self, command):
        """A shell command in the namespace, which must succeed."""
        done = self.inside(['sh', '-c', command])
        assert done.returncode == 0, done.stderr
        return done.stdout

    def run_script(self, *args, mode='server'):
        return self.inside(['bash', str(SCRIPT), mode, '-o',
                            str(self.root)] + list(args))

    def mounts(self):
        """The namespace's mounts under /srv: {target: MAJ:MIN}."""
        table = self.inside(['findmnt', '-rn', '-o', 'TARGET,MAJ:MIN'])
        assert table.returncode == 0, table.stderr
        return dict(line.split(' ', 1) for line in table.stdout.splitlines()
                    if line.startswith(SRV + '/'))

    def mount_options(self, target):
        return self.sh('findmnt -rn -o OPTIONS --mountpoint %s'
                       % target).strip().split(',')

    def owner(self, path):
        """'UID:GID MODE' of a path in the namespace."""
        return self.sh('stat -c "%%u:%%g %%a" %s' % path).strip()

    def device_number(self, name):
        number = os.stat(dict((n, loop) for n, loop, _ in self.devices)[
            name]).st_rdev
        return '%d:%d' % (os.major(number), os.minor(number))

    def file(self, name):
        return (self.root / 'etc' / name).read_text()

    def close(self):
        try:
            if self.holder is not None:
                self.holder.stdin.close()
                self.holder.wait(timeout=30)
                self.holder.stdout.close()
                self.holder.stderr.close()
        finally:
            for loop in self.loops:
                run(['losetup', '--detach', loop])


def storage_vm(tmp_path):
    """The body of a test module's ``vm`` fixture: a StorageVM in
    ``tmp_path``, closed after the test, no loop device left behind."""
    assert re.fullmatch(r'[A-Za-z0-9/._+-]+', str(tmp_path)), tmp_path
    made = StorageVM(tmp_path)
    try:
        yield made
    finally:
        made.close()
    listed = run(['losetup', '--list', '--noheadings', '-O', 'NAME,'
                  'BACK-FILE'])
    assert str(made.images) not in listed.stdout, listed.stdout
