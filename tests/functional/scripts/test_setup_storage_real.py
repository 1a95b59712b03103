"""setup_storage.sh server on real block devices: which volumes it mounts
and how, what it exports and to whom (see storage_vm for the namespace).
test_setup_storage_format.py covers when it formats."""

import pytest

from tests.functional.scripts import storage_vm
from tests.functional.scripts.storage_vm import (
    FOREIGN_FSTAB, managed_block, probe, run, sha256)

pytestmark = storage_vm.needs_loop_devices

ROOT_SQUASH = 'rw,sync,no_subtree_check,root_squash'
NO_ROOT_SQUASH = 'rw,sync,no_subtree_check,no_root_squash'
SQUASHED_ROOT = '65534:65534'


@pytest.fixture
def vm(tmp_path):
    yield from storage_vm.storage_vm(tmp_path)


def partition_table_image(path):
    """An image whose first sector is a DOS partition table with one
    partition, and data behind it."""
    mbr = bytearray(512)
    mbr[446:462] = bytes([0, 0x20, 0x21, 0, 0x83, 0xfe, 0xff, 0xff]) + \
        (2048).to_bytes(4, 'little') + (20480).to_bytes(4, 'little')
    mbr[510:512] = b'\x55\xaa'
    with open(path, 'wb') as image:
        image.write(bytes(mbr))
        image.seek(2048 * 512)
        image.write(b'data of someone else\n' * 100)
        image.truncate(storage_vm.VOLUME_BYTES)


def ext4_with_marker(source):
    def prepare(path):
        with open(path, 'wb') as image:
            image.truncate(storage_vm.VOLUME_BYTES)
        made = run(['mkfs.ext4', '-q', '-F', '-d', str(source), str(path)])
        assert made.returncode == 0, made.stderr
    return prepare


def test_empty_volumes_are_formatted_mounted_and_exported(vm):
    vm.add_volume('vdb', volume_id='0f5e6c1a-57d4-4c1e-9c2f-1d2e3f4a5b6c')
    vm.add_volume('vdc', volume_id='b7c1d2e3-0000-4000-8000-000000000002')
    vm.start()
    result = vm.run_script(
        '--volume', '0f5e6c1a-57d4-4c1e-9c2f-1d2e3f4a5b6c,,/srv/one',
        '--volume', 'b7c1d2e3-0000-4000-8000-000000000002,/dev/vdc,/srv/two',
        '--export', '/srv/one/pv1,10.10.0.0/24',
        '--export', '/srv/two/pv2,10.10.0.0/24,no_root_squash')
    assert result.returncode == 0, result.stderr
    assert ('device: volume 0f5e6c1a-57d4-4c1e-9c2f-1d2e3f4a5b6c is '
            '/dev/vdb, found by its link /dev/disk/by-id/virtio-0f5e6c1a-'
            '57d4-4c1e-9') in result.stdout
    # The link wins over the device Cinder reports (/dev/vdc, the same).
    assert 'is /dev/vdc, found by its link' in result.stdout
    assert result.stdout.count(': formatted ext4') == 2
    # Mounted with the options at once, not fixed by a remount after.
    assert 'mount: /dev/vdb at /srv/one, nosuid,nodev' in \
        result.stdout.splitlines()
    assert result.stdout.splitlines()[-1] == (
        'storage: 2 volume(s) (2 formatted, 0 kept), 2 export(s)')
    one, two = probe(vm.image('vdb')), probe(vm.image('vdc'))
    assert one['TYPE'] == two['TYPE'] == 'ext4'
    assert vm.mounts() == {'/srv/one': vm.device_number('vdb'),
                           '/srv/two': vm.device_number('vdc')}
    for target in ('/srv/one', '/srv/two'):
        options = vm.mount_options(target)
        assert 'nosuid' in options and 'nodev' in options, options
    fstab = vm.file('fstab')
    assert fstab.startswith(FOREIGN_FSTAB)
    assert managed_block(fstab) == [
        'UUID=%s /srv/one ext4 defaults,nofail,nosuid,nodev 0 2'
        % one['UUID'],
        'UUID=%s /srv/two ext4 defaults,nofail,nosuid,nodev 0 2'
        % two['UUID']]
    assert managed_block(vm.file('exports')) == [
        '/srv/one/pv1 10.10.0.0/24(%s)' % ROOT_SQUASH,
        '/srv/two/pv2 10.10.0.0/24(%s)' % NO_ROOT_SQUASH]
    # The export directories the script made belong to the user a squashed
    # root becomes; the parents it made for them stay root's.
    assert vm.owner('/srv/one/pv1') == SQUASHED_ROOT + ' 755'
    assert vm.owner('/srv/two/pv2') == SQUASHED_ROOT + ' 755'
    assert vm.owner('/srv/one') == '0:0 755'
    assert 'export directory: made /srv/one/pv1, owned by 65534:65534' in \
        result.stdout.splitlines()
    # The export directory is on the volume, not on the root disk.
    where = vm.inside(['findmnt', '-rn', '-o', 'TARGET', '--target',
                       '/srv/one/pv1'])
    assert where.stdout.strip() == '/srv/one'
    assert 'exportfs -ra' in vm.calls.read_text()


def test_a_volume_with_ext4_is_mounted_as_it_is(vm, tmp_path):
    source = tmp_path / 'content'
    (source / 'pv1').mkdir(parents=True)
    (source / 'pv1' / 'marker').write_text('written before the heal\n')
    vm.add_volume('vdb', volume_id='kept-volume',
                  prepare=ext4_with_marker(source))
    before = probe(vm.image('vdb'))
    vm.start()
    result = vm.run_script('--volume', 'kept-volume,,/srv/data',
                           '--export', '/srv/data/pv1,10.0.0.5')
    assert result.returncode == 0, result.stderr
    assert ('filesystem: /dev/vdb has ext4 (UUID %s): mounted as it is, '
            'not formatted' % before['UUID']) in result.stdout
    assert 'formatted ext4' not in result.stdout
    assert result.stdout.splitlines()[-1] == (
        'storage: 1 volume(s) (0 formatted, 1 kept), 1 export(s)')
    assert probe(vm.image('vdb'))['UUID'] == before['UUID']
    marker = vm.inside(['cat', '/srv/data/pv1/marker'])
    assert marker.stdout == 'written before the heal\n', marker.stderr
    # An export directory that was there keeps its owner, and so does
    # what it holds: nothing is chowned after the fact.
    assert vm.owner('/srv/data/pv1').startswith('0:0 ')
    assert vm.owner('/srv/data/pv1/marker').startswith('0:0 ')
    # But root_squash leaves clients' root unable to write there: said.
    assert ('export directory: /srv/data/pv1 kept as it is (root\'s; see '
            'the warning)') in result.stdout.splitlines()
    assert ('warning: /srv/data/pv1 belongs to root and is exported with '
            'root_squash') in result.stderr
    assert 'export directory: made' not in result.stdout


def test_volumes_mode_mounts_a_kept_volume_and_exports_nothing(
        vm, tmp_path):
    """A registry's volume: formatted only when empty, mounted, no export
    and no NFS server; its data kept."""
    source = tmp_path / 'content'
    (source / 'data').mkdir(parents=True)
    (source / 'data' / 'blob').write_text('an image layer\n')
    vm.add_volume('vdb', volume_id='registry-volume',
                  prepare=ext4_with_marker(source))
    vm.add_volume('vdc', volume_id='registry-new')
    vm.start()
    result = vm.run_script('--volume', 'registry-volume,,/srv/registry',
                           '--volume', 'registry-new,,/srv/spare',
                           mode='volumes')
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == (
        'storage: 2 volume(s) (1 formatted, 1 kept)')
    assert vm.inside(['cat', '/srv/registry/data/blob']).stdout == \
        'an image layer\n'
    assert set(vm.mounts()) == {'/srv/registry', '/srv/spare'}
    # No /etc/exports written; no stand-in (apt-get, systemctl, exportfs)
    # called at all.
    assert not (vm.root / 'etc' / 'exports').exists()
    assert not vm.calls.exists(), vm.calls.read_text()


def test_a_volume_with_a_partition_table_is_refused(vm):
    vm.add_volume('vdb', volume_id='partitioned',
                  prepare=partition_table_image)
    before = sha256(vm.image('vdb'))
    vm.start()
    result = vm.run_script('--volume', 'partitioned,,/srv/data',
                           '--export', '/srv/data,10.0.0.0/16')
    assert result.returncode == 1, result.stdout + result.stderr
    assert ('setup_storage.sh: filesystem: not formatting: /dev/vdb holds a '
            'partition table (dos)') in result.stderr
    assert sha256(vm.image('vdb')) == before
    assert vm.mounts() == {}
    assert vm.file('fstab') == FOREIGN_FSTAB


def test_a_device_without_link_or_serial_is_never_formatted(vm):
    # A loop device reports no serial: Cinder's device name alone could be
    # another disk (names follow attach order), so nothing is touched.
    vm.add_volume('vdc')
    vm.start()
    result = vm.run_script(
        '--volume', 'b7c1d2e3-0000-4000-8000-000000000002,/dev/vdc,/srv/two',
        '--export', '/srv/two/pv2,10.10.0.0/24')
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.splitlines()[-1] == (
        'setup_storage.sh: device: volume b7c1d2e3-0000-4000-8000-'
        '000000000002: no /dev/disk/by-id/virtio-b7c1d2e3-0000-4000-8, and '
        '/dev/vdc reports no serial: not using a disk not shown to be the '
        'volume (nothing formatted)')
    assert 'mkfs' not in result.stdout + result.stderr
    with open(vm.image('vdc'), 'rb') as image:
        assert image.read().count(0) == storage_vm.VOLUME_BYTES
    assert vm.mounts() == {}
    assert vm.file('fstab') == FOREIGN_FSTAB


def test_a_second_run_changes_nothing(vm):
    vm.add_volume('vdb', volume_id='again')
    vm.start()
    args = ['--volume', 'again,,/srv/data',
            '--export', '/srv/data/a,10.0.0.0/16',
            '--export', '/srv/data/a,192.168.1.7,no_root_squash']
    first = vm.run_script(*args)
    assert first.returncode == 0, first.stderr
    files = [vm.root / 'etc' / name for name in ('fstab', 'exports')]
    state = ([(p.read_text(), p.stat().st_ino, p.stat().st_mtime_ns)
              for p in files], vm.mounts(), probe(vm.image('vdb')),
             vm.owner('/srv/data/a'))
    second = vm.run_script(*args)
    assert second.returncode == 0, second.stderr
    for line in ['fstab: unchanged',
                 'mount: /dev/vdb already at /srv/data',
                 'exports: unchanged',
                 'storage: 1 volume(s) (0 formatted, 1 kept), 2 export(s)']:
        assert line in second.stdout.splitlines(), second.stdout
    assert ([(p.read_text(), p.stat().st_ino, p.stat().st_mtime_ns)
             for p in files], vm.mounts(), probe(vm.image('vdb')),
            vm.owner('/srv/data/a')) == state
    # One directory, both client ranges on its line, each with its squash.
    assert managed_block(vm.file('exports')) == [
        '/srv/data/a 10.0.0.0/16(%s) 192.168.1.7(%s)'
        % (ROOT_SQUASH, NO_ROOT_SQUASH)]


def test_a_volume_mounted_without_nosuid_nodev_is_remounted(vm, tmp_path):
    (tmp_path / 'content').mkdir()
    vm.add_volume('vdb', volume_id='older', prepare=ext4_with_marker(
        tmp_path / 'content'))
    vm.start()
    # As an older run of the script left it.
    vm.sh('mkdir /srv/data && mount -t ext4 /dev/vdb /srv/data')
    assert 'nosuid' not in vm.mount_options('/srv/data')
    result = vm.run_script('--volume', 'older,,/srv/data',
                           '--export', '/srv/data/pv1,10.0.0.0/24')
    assert result.returncode == 0, result.stderr
    assert ('mount: /dev/vdb already at /srv/data, remounted nosuid,nodev'
            in result.stdout.splitlines())
    options = vm.mount_options('/srv/data')
    assert 'nosuid' in options and 'nodev' in options, options


def test_mounts_in_the_way_are_refused(vm, tmp_path):
    (tmp_path / 'content').mkdir()
    vm.add_volume('vdb', volume_id='busy', prepare=ext4_with_marker(
        tmp_path / 'content'))
    vm.start()
    args = ['--volume', 'busy,,/srv/data',
            '--export', '/srv/data,10.0.0.0/16']

    def refused(why):
        result = vm.run_script(*args)
        assert result.returncode == 1, result.stdout + result.stderr
        assert 'setup_storage.sh: mount: ' + why in result.stderr
        assert vm.file('fstab') == FOREIGN_FSTAB

    # Files in the bare mount point would be hidden by the volume.
    vm.sh('mkdir /srv/data && touch /srv/data/written-while-unmounted')
    refused('/srv/data is not empty: mounting /dev/vdb there would hide its '
            'files')
    vm.sh('rm /srv/data/written-while-unmounted')
    # Another file system at the mount point.
    vm.sh('mount -t tmpfs other-fs /srv/data')
    refused('/srv/data already has other-fs mounted, not /dev/vdb')
    vm.sh('umount /srv/data')
    # The volume mounted somewhere else.
    vm.sh('mkdir /srv/elsewhere && mount -t ext4 /dev/vdb /srv/elsewhere')
    refused('/dev/vdb is already mounted at /srv/elsewhere, not at '
            '/srv/data')
    assert vm.mounts() == {'/srv/elsewhere': vm.device_number('vdb')}
    vm.sh('umount /srv/elsewhere')
    # A mount point that is a symlink into a system directory.
    vm.sh('rmdir /srv/data && ln -s /etc /srv/data')
    refused('/srv/data resolves to /etc, in the system directory /etc')
    assert vm.mounts() == {}
