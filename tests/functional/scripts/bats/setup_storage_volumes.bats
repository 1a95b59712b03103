#!/usr/bin/env bats
# setup_storage.sh: which device a volume is, and when it may be formatted.
# lsblk, blkid, wipefs, blockdev, dd, cmp and mkfs.ext4 are stand-in
# functions here; tests/scripts/test_setup_storage_real.py runs the real ones.

load helpers

setup() {
    load_script setup_storage.sh
    DIR=$BATS_TEST_TMPDIR
    BY_ID_DIR=$DIR/by-id
    mkdir -p "$BY_ID_DIR"
    # The disks' serials: none unless a test writes one (serial_of).
    SYS_BLOCK_DIR=$DIR/sys
    LSBLK_SERIAL=""
    MKFS_LOG=$DIR/mkfs.log
    : >"$MKFS_LOG"
    # An empty 32 MiB volume unless a test says otherwise.
    WIPEFS_OUTPUT=""
    DEVICE_BYTES=33554432
    MAGIC_AT=()
    SUPER_LOG_BLOCK=0
    HEAD_IS_ZERO=true
}

wipefs() {
    printf '%s' "$WIPEFS_OUTPUT"
}

blockdev() {
    echo "$DEVICE_BYTES"
}

# dd reads a superblock with the ext magic at the byte offsets in
# MAGIC_AT, recording the block size 1024 << SUPER_LOG_BLOCK; zeros
# elsewhere.
dd() {
    local word skip=""
    for word in "$@"; do
        [[ $word != skip=* ]] || skip=${word#skip=}
    done
    if [[ " ${MAGIC_AT[*]} " == *" $skip "* ]]; then
        head -c 24 /dev/zero
        printf '%b' "\\x0$SUPER_LOG_BLOCK"
        head -c 31 /dev/zero
        printf '\x53\xef'
        head -c 6 /dev/zero
    else
        head -c 64 /dev/zero
    fi
}

cmp() {
    "$HEAD_IS_ZERO"
}

# block_device NAME: a block device node in DIR (root only; any numbers:
# only the stand-ins look at it).
block_device() {
    [[ $EUID -eq 0 ]] || skip "mknod needs root"
    mknod "$DIR/$1" b 7 250
}

lsblk() {
    if [[ $* == *SERIAL* ]]; then
        printf '%s\n' "$LSBLK_SERIAL"
    else
        printf '%s\n' "${LSBLK_ROWS[@]}"
    fi
}

# serial_of NAME SERIAL: the disk DIR/NAME reports SERIAL, as a virtio
# disk does in sysfs.
serial_of() {
    mkdir -p "$SYS_BLOCK_DIR/$1"
    printf '%s\n' "$2" >"$SYS_BLOCK_DIR/$1/serial"
}

mkfs.ext4() {
    echo "mkfs.ext4 $*" >>"$MKFS_LOG"
}

# blkid answers in turn from PROBES: "STATUS|KEY=VALUE KEY=VALUE", the last
# one again once they run out; it counts its calls in a file, as probe
# calls it in a subshell.
blkid() {
    local count answer
    count=$(($(cat "$DIR/probes" 2>/dev/null || echo 0) + 1))
    echo "$count" >"$DIR/probes"
    answer=${PROBES[$((count <= ${#PROBES[@]} ? count - 1 : ${#PROBES[@]} - 1))]}
    [[ $* == *export* && -n ${answer#*|} ]] && printf '%s\n' ${answer#*|}
    return "${answer%%|*}"
}

@test "find_device: the by-id link wins over the device Cinder reports" {
    block_device vdb
    block_device vdc
    ln -s "$DIR/vdb" "$BY_ID_DIR/virtio-0f5e6c1a-57d4-4c1e-9"
    LSBLK_ROWS=('disk vdb')
    VOLUME_IDS=(0f5e6c1a-57d4-4c1e-9c2f-1d2e3f4a5b6c)
    VOLUME_DEVICES=("$DIR/vdc")
    run --separate-stderr -0 find_devices
    [ "$output" = "device: volume 0f5e6c1a-57d4-4c1e-9c2f-1d2e3f4a5b6c is $DIR/vdb, found by its link $BY_ID_DIR/virtio-0f5e6c1a-57d4-4c1e-9" ]
    [[ $stderr == *"Cinder reports $DIR/vdc, the link says $DIR/vdb: using $DIR/vdb"* ]]
}

@test "find_device: no link, the device Cinder reports; neither, a failure" {
    block_device vdc
    serial_of vdc vol-1
    LSBLK_ROWS=('disk vdc')
    VOLUME_IDS=(vol-1)
    VOLUME_DEVICES=("$DIR/vdc")
    find_devices >"$DIR/out"
    [ "${DEVICES[0]}" = "$DIR/vdc" ]
    grep -qF "found as reported by Cinder (no $BY_ID_DIR/virtio-vol-1; its serial is the volume's)" "$DIR/out"
    VOLUME_DEVICES=("")
    CURRENT_STEP=device
    run --separate-stderr -1 find_devices
    [ "$stderr" = "setup_storage.sh: device: volume vol-1: no $BY_ID_DIR/virtio-vol-1 and no device given" ]
    # A link to nothing counts as no link.
    ln -s "$DIR/gone" "$BY_ID_DIR/virtio-vol-1"
    VOLUME_DEVICES=("$DIR/vdc")
    find_devices >/dev/null
    [ "${DEVICES[0]}" = "$DIR/vdc" ]
}

@test "find_device: a file, a partition or a disk with partitions is refused" {
    block_device vdb
    VOLUME_IDS=(vol-1)
    : >"$DIR/plain"
    VOLUME_DEVICES=("$DIR/plain")
    run -1 find_devices
    [[ $output == *"volume vol-1: $DIR/plain is not a block device"* ]]
    VOLUME_DEVICES=("$DIR/vdb")
    LSBLK_ROWS=('part vdb1')
    run -1 find_devices
    [[ $output == *"$DIR/vdb is a 'part', not a whole disk"* ]]
    LSBLK_ROWS=('disk vdb' 'part vdb1' 'part vdb2')
    run -1 find_devices
    [[ $output == *"$DIR/vdb has partitions or holders (part vdb1 part vdb2)"* ]]
    LSBLK_ROWS=('loop loop3')
    serial_of vdb vol-1
    run -0 find_devices
}

@test "find_device: without a link, the disk must report the volume's serial before anything formats it" {
    local id=0f5e6c1a-57d4-4c1e-9c2f-1d2e3f4a5b6c
    block_device vdc
    LSBLK_ROWS=('disk vdc')
    VOLUME_IDS=("$id")
    VOLUME_DEVICES=("$DIR/vdc")
    CURRENT_STEP=device
    # No serial at all: not used.
    run --separate-stderr -1 find_devices
    [ "$stderr" = "setup_storage.sh: device: volume $id: no $BY_ID_DIR/virtio-${id:0:20}, and $DIR/vdc reports no serial: not using a disk not shown to be the volume (nothing formatted)" ]
    # Another volume's serial: not used.
    serial_of vdc b7c1d2e3-0000-4000-8
    run --separate-stderr -1 find_devices
    [ "$stderr" = "setup_storage.sh: device: volume $id: no $BY_ID_DIR/virtio-${id:0:20}, and $DIR/vdc reports serial 'b7c1d2e3-0000-4000-8', not '${id:0:20}': another disk, not used (nothing formatted)" ]
    # A serial that would forge or rewrite a line is shown defused.
    serial_of vdc $'x\e[1A\nsetup_storage.sh: ok'
    run --separate-stderr -1 find_devices
    [[ $stderr == *"reports serial 'x??1Asetup_storage.sh?ok', not"* ]]
    [ "$(printf '%s' "$stderr" | wc -l)" -eq 0 ]
    # The volume's serial, cut to 20 characters as virtio does: used.
    serial_of vdc "${id:0:20}"
    find_devices >"$DIR/out"
    [ "${DEVICES[0]}" = "$DIR/vdc" ]
    grep -qF "found as reported by Cinder (no $BY_ID_DIR/virtio-${id:0:20}; its serial is the volume's)" "$DIR/out"
    # Or read by lsblk when sysfs has none (virtio-scsi: the whole id).
    rm -r "$SYS_BLOCK_DIR"
    LSBLK_SERIAL=$id
    find_devices >/dev/null
    [ "${DEVICES[0]}" = "$DIR/vdc" ]
    [ ! -s "$MKFS_LOG" ]
}

@test "find_devices: two volumes on one device are refused" {
    block_device vdb
    LSBLK_ROWS=('disk vdb')
    # Ids alike in their first 20 characters: one serial for both.
    VOLUME_IDS=(0f5e6c1a-57d4-4c1e-9-one 0f5e6c1a-57d4-4c1e-9-two)
    serial_of vdb 0f5e6c1a-57d4-4c1e-9
    VOLUME_DEVICES=("$DIR/vdb" "$DIR/vdb")
    run -1 find_devices
    [[ $output == *"volumes 0f5e6c1a-57d4-4c1e-9-one and 0f5e6c1a-57d4-4c1e-9-two are both $DIR/vdb"* ]]
}

@test "check_filesystem: no signature at all: formatted ext4, once" {
    DEVICES=(/dev/vdb)
    PROBES=('2|' '2|' '0|UUID=new-uuid TYPE=ext4 USAGE=filesystem')
    check_filesystem 0 >"$DIR/out"
    [ "$(cat "$MKFS_LOG")" = 'mkfs.ext4 -q -- /dev/vdb' ]
    [ "$(cat "$DIR/out")" = 'filesystem: no filesystem on /dev/vdb: formatted ext4' ]
    [ "$FORMATTED" = 1 ]
    [ "$KEPT" = 0 ]
    [ "${FS_UUIDS[0]}" = new-uuid ]
    [ "${FS_TYPES[0]}" = ext4 ]
}

@test "check_filesystem: a filesystem is kept as it is" {
    DEVICES=(/dev/vdb)
    PROBES=('0|UUID=old-uuid TYPE=xfs USAGE=filesystem')
    check_filesystem 0 >"$DIR/out"
    [ "$(cat "$DIR/out")" = 'filesystem: /dev/vdb has xfs (UUID old-uuid): mounted as it is, not formatted' ]
    [ "$KEPT" = 1 ]
    [ "${FS_TYPES[0]}" = xfs ]
    [ ! -s "$MKFS_LOG" ]
}

@test "check_filesystem: anything else found or any blkid failure: refused" {
    DEVICES=(/dev/vdb)
    CURRENT_STEP=filesystem
    refused() {
        local want=$1
        shift
        PROBES=("$@")
        rm -f "$DIR/probes"
        run --separate-stderr check_filesystem 0
        [ "$status" -eq 1 ] || { echo "status $status for $*"; return 1; }
        [[ $stderr == *"$want"* ]] || { echo "got: $stderr"; return 1; }
    }
    refused 'not formatting: /dev/vdb holds a partition table (gpt)' '0|PTTYPE=gpt'
    refused 'not formatting: /dev/vdb holds a partition table (dos)' '0|PTTYPE=dos TYPE=ext4 USAGE=filesystem UUID=u'
    refused "holds a 'LVM2_member' signature (usage 'raid'), not a filesystem" '0|TYPE=LVM2_member USAGE=raid UUID=u'
    refused "holds a 'crypto_LUKS' signature (usage 'crypto')" '0|TYPE=crypto_LUKS USAGE=crypto UUID=u'
    refused "holds a 'swap' signature (usage 'other')" '0|TYPE=swap USAGE=other UUID=u'
    refused "holds a 'unknown' signature" '0|'
    refused 'has ext4 without a UUID' '0|TYPE=ext4 USAGE=filesystem'
    refused 'blkid -p /dev/vdb failed (exit 8)' '8|'
    refused 'blkid -p /dev/vdb failed (exit 4)' '4|'
    refused 'blkid finds no ext4 after mkfs.ext4 (exit 2)' '2|'
    # Only the last case got as far as mkfs.
    [ "$(wc -l <"$MKFS_LOG")" -eq 1 ]
    # No signature for blkid, but a backup superblock: no mkfs either.
    MAGIC_AT=($((8192 * 1024 + 1024)))
    SUPER_LOG_BLOCK=0
    refused 'refusing to format /dev/vdb: backup ext superblock at byte 8389632' '2|'
    [ "$(wc -l <"$MKFS_LOG")" -eq 1 ]
}

@test "format_ext4 probes again and refuses when anything is there now" {
    DEVICES=(/dev/vdb)
    CURRENT_STEP=filesystem
    # Empty at the first look, a filesystem at the second.
    PROBES=('2|' '0|UUID=u TYPE=ext4 USAGE=filesystem')
    run --separate-stderr -1 check_filesystem 0
    [ "$stderr" = 'setup_storage.sh: filesystem: refusing to format /dev/vdb: blkid -p finds a signature on it or fails (exit 0)' ]
    rm -f "$DIR/probes"
    PROBES=('8|')
    run -1 format_ext4 /dev/vdb
    [ ! -s "$MKFS_LOG" ]
}

@test "check_empty: a signature, an ext superblock copy or data at the start: refused" {
    CURRENT_STEP=filesystem
    refused() {
        run --separate-stderr check_empty /dev/vdb
        [ "$status" -eq 1 ] || { echo "status $status"; return 1; }
        [ "$stderr" = "setup_storage.sh: filesystem: refusing to format /dev/vdb: $1" ] || { echo "got: $stderr"; return 1; }
    }
    run -0 check_empty /dev/vdb
    WIPEFS_OUTPUT=$'0x200 gpt\n0x1fffe00 gpt\n0x1fe PMBR\n'
    refused 'wipefs finds gpt at 0x200, gpt at 0x1fffe00, PMBR at 0x1fe'
    WIPEFS_OUTPUT=""
    # 1 KiB blocks: group 1 starts at block 8193.
    MAGIC_AT=($((8192 * 1024 + 1024)))
    SUPER_LOG_BLOCK=0
    refused 'backup ext superblock at byte 8389632 (run e2fsck -b 8193 -B 1024 /dev/vdb to recover its files)'
    # 4 KiB blocks: group 3, on a volume of 4 groups.
    DEVICE_BYTES=$((4 * 128 * 1048576))
    MAGIC_AT=($((3 * 128 * 1048576)))
    SUPER_LOG_BLOCK=2
    refused 'backup ext superblock at byte 402653184 (run e2fsck -b 98304 -B 4096 /dev/vdb to recover its files)'
    # 2 KiB blocks, the last group only (sparse_super2): group 15 of 16.
    MAGIC_AT=($((15 * 32 * 1048576)))
    SUPER_LOG_BLOCK=1
    refused 'backup ext superblock at byte 503316480 (run e2fsck -b 245760 -B 2048 /dev/vdb to recover its files)'
    # The group before the last, when the last was too small to keep.
    MAGIC_AT=($((14 * 32 * 1048576)))
    refused 'backup ext superblock at byte 469762048 (run e2fsck -b 229376 -B 2048 /dev/vdb to recover its files)'
    # A partition at 1 MiB whose table was wiped: its own first superblock.
    MAGIC_AT=($((1048576 + 1024)))
    refused 'ext superblock at byte 1049600, as in a partition from byte 1048576 whose table is gone'
    # The hint takes the block size the superblock records: this copy of
    # a 4 KiB filesystem is found first where a 2 KiB one has its group 4.
    DEVICE_BYTES=$((160 * 1048576))
    MAGIC_AT=($((128 * 1048576)))
    SUPER_LOG_BLOCK=2
    refused 'backup ext superblock at byte 134217728 (run e2fsck -b 32768 -B 4096 /dev/vdb to recover its files)'
    # A block size out of range: the one looked for.
    SUPER_LOG_BLOCK=9
    refused 'backup ext superblock at byte 134217728 (run e2fsck -b 65536 -B 2048 /dev/vdb to recover its files)'
    # Copies past the end of the device are not read.
    DEVICE_BYTES=33554432
    MAGIC_AT=($((25 * 8 * 1048576 + 1024)))
    run -0 check_empty /dev/vdb
    MAGIC_AT=()
    HEAD_IS_ZERO=false
    refused 'its first MiB is not zero'
}

@test "backup_groups: 1, the powers of 3, 5 and 7, and the last two groups" {
    backup_groups 1
    [ "${GROUP_LIST[*]}" = '' ]
    backup_groups 2
    [ "${GROUP_LIST[*]}" = '1 0 1' ]
    backup_groups 100
    [ "${GROUP_LIST[*]}" = '1 3 9 27 81 5 25 7 49 98 99' ]
}

@test "mkfs runs in one place only, behind the probe" {
    local script=$SCRIPTS_DIR/setup_storage.sh
    # The one line that runs mkfs (as a command, not in a message) is in
    # format_ext4, which check_filesystem alone calls, for blkid's exit 2.
    [ "$(grep -Ec '^[^#"]*\bmkfs' "$script")" -eq 1 ]
    sed -n '/^format_ext4() {/,/^}/p' "$script" | grep -q '^    mkfs.ext4 -q -- "\$device" </dev/null'
    # The proof of emptiness runs right before it.
    sed -n '/^format_ext4() {/,/^}/p' "$script" | grep -B1 '^    mkfs.ext4' | grep -q '^    check_empty "\$device"$'
    [ "$(grep -c 'format_ext4 "' "$script")" -eq 1 ]
    sed -n '/^check_filesystem() {/,/^}/p' "$script" | grep -A1 '^        2)$' | grep -q 'format_ext4 "\$device"'
    # Never forced.
    run -1 grep -E 'mkfs[^ ]* .*-F' "$script"
}
