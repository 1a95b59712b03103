"""setup_storage.sh server on real block devices.

Each volume is a file-backed loop device. The script runs inside a private
mount namespace (``unshare --mount``) whose ``/dev`` is a small tmpfs
holding the volumes as ``/dev/vdb``, ``/dev/vdc`` and the
``/dev/disk/by-id/virtio-...`` links a KVM guest has, as in the lab's VMs;
blkid, mkfs.ext4, mount and findmnt are the real ones, and every mount goes
with the namespace. Only the package and service tools are stand-ins (the
host gets no NFS server), and /etc/fstab and /etc/exports are written under
``-o DIR``.
"""

import hashlib
import os
import re
import shutil
import struct
import subprocess

import pytest

from tests.scripts.script_helpers import REPO, write_tool

SCRIPT = REPO / 'k8s_mgmt' / 'scripts' / 'setup_storage.sh'
TOOLS = ['losetup', 'unshare', 'nsenter', 'mknod', 'blkid', 'mkfs.ext4',
         'mount', 'findmnt', 'lsblk']
VOLUME_BYTES = 32 * 1024 * 1024
FOREIGN_FSTAB = 'LABEL=cloudimg-rootfs / ext4 discard,errors=remount-ro 0 1\n'

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason='needs root (loop devices)'),
    pytest.mark.skipif(
        any(shutil.which(tool) is None for tool in TOOLS),
        reason='needs %s' % ', '.join(TOOLS)),
]


def run(argv, **kwargs):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60,
                          check=False, **kwargs)


def sha256(path):
    with open(path, 'rb') as image:
        return hashlib.sha256(image.read()).hexdigest()


def partition_table_image(path):
    """An image whose first sector is a DOS partition table with one
    partition, and data behind it."""
    mbr = bytearray(512)
    mbr[446:462] = bytes([0, 0x20, 0x21, 0, 0x83, 0xfe, 0xff, 0xff]) + \
        struct.pack('<II', 2048, 20480)
    mbr[510:512] = b'\x55\xaa'
    with open(path, 'wb') as image:
        image.write(bytes(mbr))
        image.seek(2048 * 512)
        image.write(b'data of someone else\n' * 100)
        image.truncate(VOLUME_BYTES)


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
                 'mkdir -p /dev/disk/by-id']
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

    def run_script(self, *args):
        return self.inside(['bash', str(SCRIPT), 'server', '-o',
                            str(self.root)] + list(args))

    def mounts(self):
        """The namespace's mounts under base: {target: MAJ:MIN}."""
        table = self.inside(['findmnt', '-rn', '-o', 'TARGET,MAJ:MIN'])
        assert table.returncode == 0, table.stderr
        return dict(line.split(' ', 1) for line in table.stdout.splitlines()
                    if line.startswith(str(self.base)))

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


@pytest.fixture
def vm(tmp_path):
    assert re.fullmatch(r'[A-Za-z0-9/._+-]+', str(tmp_path)), tmp_path
    storage_vm = StorageVM(tmp_path)
    try:
        yield storage_vm
    finally:
        storage_vm.close()
    for loop in storage_vm.loops:
        listed = run(['losetup', '--list', '--noheadings', '-O', 'NAME,'
                      'BACK-FILE'])
        assert str(storage_vm.images) not in listed.stdout, listed.stdout


def probe(path):
    result = run(['blkid', '-p', '-o', 'export', str(path)])
    return dict(line.split('=', 1) for line in result.stdout.splitlines())


def fstab_block(text):
    match = re.search(r'^# BEGIN k8s-mgmt storage\n(.*?)'
                      r'^# END k8s-mgmt storage\n', text, re.M | re.S)
    assert match, text
    return [line for line in match.group(1).splitlines()
            if not line.startswith('#')]


def test_empty_volumes_are_formatted_mounted_and_exported(vm):
    base = vm.base
    vm.add_volume('vdb', volume_id='0f5e6c1a-57d4-4c1e-9c2f-1d2e3f4a5b6c')
    # No by-id link: found as the device Cinder reports.
    vm.add_volume('vdc')
    vm.start()
    result = vm.run_script(
        '--volume', '0f5e6c1a-57d4-4c1e-9c2f-1d2e3f4a5b6c,,%s/srv/one' % base,
        '--volume', 'b7c1d2e3-0000-4000-8000-000000000002,/dev/vdc,'
        '%s/srv/two' % base,
        '--export', '%s/srv/one/pv1,10.10.0.0/24' % base,
        '--export', '%s/srv/two,10.10.0.0/24' % base)
    assert result.returncode == 0, result.stderr
    assert ('device: volume 0f5e6c1a-57d4-4c1e-9c2f-1d2e3f4a5b6c is '
            '/dev/vdb, found by its link /dev/disk/by-id/virtio-0f5e6c1a-'
            '57d4-4c1e-9') in result.stdout
    assert 'is /dev/vdc, found as reported by Cinder' in result.stdout
    assert result.stdout.count(': formatted ext4') == 2
    assert result.stdout.splitlines()[-1] == (
        'storage: 2 volume(s) (2 formatted, 0 kept), 2 export(s)')
    one, two = probe(vm.image('vdb')), probe(vm.image('vdc'))
    assert one['TYPE'] == two['TYPE'] == 'ext4'
    assert vm.mounts() == {'%s/srv/one' % base: vm.device_number('vdb'),
                           '%s/srv/two' % base: vm.device_number('vdc')}
    fstab = vm.file('fstab')
    assert fstab.startswith(FOREIGN_FSTAB)
    assert fstab_block(fstab) == [
        'UUID=%s %s/srv/one ext4 defaults,nofail 0 2' % (one['UUID'], base),
        'UUID=%s %s/srv/two ext4 defaults,nofail 0 2' % (two['UUID'], base)]
    assert fstab_block(vm.file('exports')) == [
        '%s/srv/one/pv1 10.10.0.0/24(rw,sync,no_subtree_check,'
        'no_root_squash)' % base,
        '%s/srv/two 10.10.0.0/24(rw,sync,no_subtree_check,'
        'no_root_squash)' % base]
    # The export directory is on the volume, not on the root disk.
    where = vm.inside(['findmnt', '-rn', '-o', 'TARGET', '--target',
                       '%s/srv/one/pv1' % base])
    assert where.stdout.strip() == '%s/srv/one' % base
    assert 'exportfs -ra' in vm.calls.read_text()


def ext4_with_marker(source):
    def prepare(path):
        with open(path, 'wb') as image:
            image.truncate(VOLUME_BYTES)
        made = run(['mkfs.ext4', '-q', '-F', '-d', str(source), str(path)])
        assert made.returncode == 0, made.stderr
    return prepare


def test_a_volume_with_ext4_is_mounted_as_it_is(vm, tmp_path):
    source = tmp_path / 'content'
    (source / 'pv1').mkdir(parents=True)
    (source / 'pv1' / 'marker').write_text('written before the heal\n')
    vm.add_volume('vdb', volume_id='kept-volume',
                  prepare=ext4_with_marker(source))
    before = probe(vm.image('vdb'))
    vm.start()
    result = vm.run_script('--volume', 'kept-volume,,%s/data' % tmp_path,
                           '--export', '%s/data/pv1,10.0.0.5' % tmp_path)
    assert result.returncode == 0, result.stderr
    assert ('filesystem: /dev/vdb has ext4 (UUID %s): mounted as it is, '
            'not formatted' % before['UUID']) in result.stdout
    assert 'formatted ext4' not in result.stdout
    assert result.stdout.splitlines()[-1] == (
        'storage: 1 volume(s) (0 formatted, 1 kept), 1 export(s)')
    assert probe(vm.image('vdb'))['UUID'] == before['UUID']
    marker = vm.inside(['cat', '%s/data/pv1/marker' % tmp_path])
    assert marker.stdout == 'written before the heal\n', marker.stderr


def test_a_volume_with_a_partition_table_is_refused(vm, tmp_path):
    vm.add_volume('vdb', volume_id='partitioned',
                  prepare=partition_table_image)
    before = sha256(vm.image('vdb'))
    vm.start()
    result = vm.run_script('--volume', 'partitioned,,%s/data' % tmp_path,
                           '--export', '%s/data,10.0.0.0/8' % tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert ('setup_storage.sh: filesystem: not formatting: /dev/vdb holds a '
            'partition table (dos)') in result.stderr
    assert sha256(vm.image('vdb')) == before
    assert vm.mounts() == {}
    assert vm.file('fstab') == FOREIGN_FSTAB


def test_a_second_run_changes_nothing(vm, tmp_path):
    vm.add_volume('vdb', volume_id='again')
    vm.start()
    args = ['--volume', 'again,,%s/data' % tmp_path,
            '--export', '%s/data/a,10.0.0.0/8' % tmp_path,
            '--export', '%s/data/a,192.168.1.7' % tmp_path]
    first = vm.run_script(*args)
    assert first.returncode == 0, first.stderr
    files = [vm.root / 'etc' / name for name in ('fstab', 'exports')]
    state = ([(p.read_text(), p.stat().st_ino, p.stat().st_mtime_ns)
              for p in files], vm.mounts(), probe(vm.image('vdb')))
    second = vm.run_script(*args)
    assert second.returncode == 0, second.stderr
    for line in ['fstab: unchanged',
                 'mount: /dev/vdb already at %s/data' % tmp_path,
                 'exports: unchanged',
                 'storage: 1 volume(s) (0 formatted, 1 kept), 2 export(s)']:
        assert line in second.stdout.splitlines(), second.stdout
    assert ([(p.read_text(), p.stat().st_ino, p.stat().st_mtime_ns)
             for p in files], vm.mounts(), probe(vm.image('vdb'))) == state
    # One directory, both client ranges on its line.
    assert fstab_block(vm.file('exports')) == [
        '%s/data/a 10.0.0.0/8(rw,sync,no_subtree_check,no_root_squash) '
        '192.168.1.7(rw,sync,no_subtree_check,no_root_squash)' % tmp_path]


def test_mounts_in_the_way_are_refused(vm, tmp_path):
    (tmp_path / 'content').mkdir()
    vm.add_volume('vdb', volume_id='busy', prepare=ext4_with_marker(
        tmp_path / 'content'))
    vm.start()
    args = ['--volume', 'busy,,%s/data' % tmp_path,
            '--export', '%s/data,10.0.0.0/8' % tmp_path]

    def refused(why):
        result = vm.run_script(*args)
        assert result.returncode == 1, result.stdout + result.stderr
        assert 'setup_storage.sh: mount: ' + why in result.stderr
        assert vm.file('fstab') == FOREIGN_FSTAB

    # Files in the bare mount point would be hidden by the volume.
    (tmp_path / 'data').mkdir()
    (tmp_path / 'data' / 'written-while-unmounted').write_text('x')
    refused('%s/data is not empty: mounting /dev/vdb there would hide its '
            'files' % tmp_path)
    (tmp_path / 'data' / 'written-while-unmounted').unlink()
    # Another file system at the mount point.
    mounted = vm.inside(['mount', '-t', 'tmpfs', 'other-fs',
                         '%s/data' % tmp_path])
    assert mounted.returncode == 0, mounted.stderr
    refused('%s/data already has other-fs mounted, not /dev/vdb' % tmp_path)
    assert vm.inside(['umount', '%s/data' % tmp_path]).returncode == 0
    # The volume mounted somewhere else.
    (tmp_path / 'elsewhere').mkdir()
    mounted = vm.inside(['mount', '-t', 'ext4', '/dev/vdb',
                         '%s/elsewhere' % tmp_path])
    assert mounted.returncode == 0, mounted.stderr
    refused('/dev/vdb is already mounted at %s/elsewhere, not at %s/data'
            % (tmp_path, tmp_path))
    assert vm.mounts() == {'%s/elsewhere' % tmp_path:
                           vm.device_number('vdb')}
