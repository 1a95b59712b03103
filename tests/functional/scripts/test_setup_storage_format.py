"""setup_storage.sh formats a volume only when it is provably empty, on
real block devices (see storage_vm for the namespace).

blkid -p reads only a filesystem's first superblock: the point of these
tests is a volume whose first 4 KiB were zeroed, which blkid calls empty
although e2fsck recovers every file from a backup superblock.
"""

import random
import shutil

import pytest

from tests.functional.scripts import storage_vm
from tests.functional.scripts.storage_vm import (
    FOREIGN_FSTAB, MIB, probe, run, sha256)

pytestmark = storage_vm.needs_loop_devices

MARKER = 'the only copy of this file\n'


@pytest.fixture
def vm(tmp_path):
    yield from storage_vm.storage_vm(tmp_path)


def ext4_image(source, size, block=None):
    """mkfs.ext4 of ``source`` into a sparse image of ``size`` bytes."""
    def prepare(path):
        with open(path, 'wb') as image:
            image.truncate(size)
        argv = ['mkfs.ext4', '-q', '-F', '-d', str(source)]
        if block:
            argv += ['-b', str(block)]
        made = run(argv + [str(path)])
        assert made.returncode == 0, made.stderr
    return prepare


def zero_first_4k(prepare):
    def wiped(path):
        prepare(path)
        with open(path, 'r+b') as image:
            image.write(bytes(4096))
    return wiped


def content(tmp_path):
    source = tmp_path / 'content'
    (source / 'pv1').mkdir(parents=True)
    (source / 'pv1' / 'marker').write_text(MARKER)
    return source


def run_refused(vm, volume_id, why):
    """The script refuses the volume at the filesystem step, with ``why``,
    and writes nothing: image, mounts and fstab as they were."""
    before = sha256(vm.image('vdb'))
    result = vm.run_script('--volume', '%s,,/srv/data' % volume_id,
                           '--export', '/srv/data/pv1,10.0.0.0/24')
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.splitlines()[-1] == (
        'setup_storage.sh: filesystem: refusing to format /dev/vdb: ' + why)
    assert 'formatted' not in result.stdout
    assert sha256(vm.image('vdb')) == before
    assert vm.mounts() == {}
    assert vm.file('fstab') == FOREIGN_FSTAB


@pytest.mark.parametrize('size, block, backup, recover', [
    # mke2fs's "small" type: 1 KiB blocks, group 1 starts at block 8193.
    (32 * MIB, None, 8 * MIB + 1024, ['-b', '8193', '-B', '1024']),
    # 4 KiB blocks: group 1 starts at block 32768, 128 MiB in.
    (160 * MIB, 4096, 128 * MIB, ['-b', '32768', '-B', '4096']),
], ids=['1k-blocks', '4k-blocks'])
def test_a_zeroed_first_superblock_is_refused_and_recoverable(
        vm, tmp_path, size, block, backup, recover):
    vm.add_volume('vdb', volume_id='wiped', prepare=zero_first_4k(
        ext4_image(content(tmp_path), size, block)))
    # What blkid -p alone would decide on: nothing there.
    assert probe(vm.image('vdb')) == {}
    vm.start()
    run_refused(vm, 'wiped', 'backup ext superblock at byte %d (run e2fsck '
                '%s /dev/vdb to recover its files)' % (backup,
                                                       ' '.join(recover)))
    # What the refusal saved: e2fsck from the backup brings the file back.
    copy = tmp_path / 'copy.img'
    shutil.copyfile(vm.image('vdb'), copy)
    fixed = run(['e2fsck', '-f', '-y'] + recover + [str(copy)])
    assert fixed.returncode in (0, 1), fixed.stdout + fixed.stderr
    read = run(['debugfs', '-R', 'cat /pv1/marker', str(copy)])
    assert read.stdout == MARKER, read.stderr


def test_a_partition_whose_table_was_wiped_is_refused(vm, tmp_path):
    def prepare(path):
        partition = tmp_path / 'partition.img'
        ext4_image(content(tmp_path), 31 * MIB)(partition)
        with open(path, 'wb') as image:
            image.seek(MIB)
            image.write(partition.read_bytes())
            image.truncate(storage_vm.VOLUME_BYTES)

    vm.add_volume('vdb', volume_id='wiped-table', prepare=prepare)
    assert probe(vm.image('vdb')) == {}
    vm.start()
    run_refused(vm, 'wiped-table', 'ext superblock at byte 1049600, as in a '
                'partition from byte 1048576 whose table is gone')


def test_random_data_is_refused(vm):
    def prepare(path):
        noise = random.Random(27).randbytes(2 * MIB)
        with open(path, 'wb') as image:
            image.write(noise)
            image.truncate(storage_vm.VOLUME_BYTES)

    vm.add_volume('vdb', volume_id='noise', prepare=prepare)
    assert probe(vm.image('vdb')) == {}
    vm.start()
    run_refused(vm, 'noise', 'its first MiB is not zero')


def test_an_all_zero_volume_is_formatted(vm):
    vm.add_volume('vdb', volume_id='fresh')
    vm.start()
    result = vm.run_script('--volume', 'fresh,,/srv/data',
                           '--export', '/srv/data/pv1,10.0.0.0/24')
    assert result.returncode == 0, result.stderr
    assert 'filesystem: no filesystem on /dev/vdb: formatted ext4' in \
        result.stdout.splitlines()
    assert probe(vm.image('vdb'))['TYPE'] == 'ext4'
