#!/usr/bin/env bash
# setup_storage.sh: the storage server of a Kubernetes cluster VNF (Cinder
# volumes -> ext4 -> NFS exports), the NFS client on a cluster node, or
# only the volumes of another VM that keeps its data on them (a registry).
#
# Usage: setup_storage.sh server --volume ID,DEVICE,MOUNT_TO [--volume ...]
#                                --export DIR,CLIENTS[,SQUASH] [--export ...]
#                                [--allow-wide-export]
#        setup_storage.sh volumes --volume ID,DEVICE,MOUNT_TO [--volume ...]
#        setup_storage.sh client
# A volume is formatted only when it is provably empty (no signature, no
# backup ext superblock, a zero first MiB); one that holds a filesystem is
# mounted as it is, anything else is refused.
# Prints one line per step's result on stdout and, last, a summary such as
# "storage: 1 volume(s) (1 formatted, 0 kept), 2 export(s)".
set -Eeuo pipefail
# Directories made here (mount points, exports) are for every NFS user.
umask 022

readonly PROG=setup_storage.sh
# The helpers shared with the other node scripts; the driver uploads them
# next to this script.
LIB=$(dirname -- "${BASH_SOURCE[0]}")/k8s_mgmt_lib.sh
[[ -f $LIB ]] || { printf '%s: %s is missing (it comes with this script)\n' "$PROG" "$LIB" >&2; exit 1; }
# shellcheck source-path=SCRIPTDIR source=k8s_mgmt_lib.sh
source "$LIB"

# Where a KVM guest finds a virtio disk by the volume id (cut to 20
# characters, the length of a virtio serial).
BY_ID_DIR=/dev/disk/by-id
# Where the kernel shows a disk's serial (virtio: the first 20 characters
# of the Cinder volume id); lsblk's SERIAL when it has none there.
SYS_BLOCK_DIR=/sys/class/block
readonly BLOCK_BEGIN='# BEGIN k8s-mgmt storage'
readonly BLOCK_END='# END k8s-mgmt storage'
# Every export's options; root_squash or no_root_squash follows them.
readonly EXPORT_OPTIONS=rw,sync,no_subtree_check
# What knfsd maps a squashed root to (nobody, nogroup): an export directory
# this script makes belongs to it, so that root in a pod can write there.
readonly SQUASHED_OWNER=65534:65534
# The volumes hold data written by NFS clients, never programs to run.
readonly MOUNT_OPTIONS=nosuid,nodev
# The widest client networks allowed without --allow-wide-export.
readonly WIDEST_IPV4_PREFIX=16
readonly WIDEST_IPV6_PREFIX=48
# Never export to these (kept equal to k8s_mgmt/params/nfs_exports.py).
readonly -a REFUSED_CLIENTS=(
    '0.0.0.0/8 unspecified' '127.0.0.0/8 loopback' '169.254.0.0/16 link-local'
    '224.0.0.0/4 multicast' '255.255.255.255/32 broadcast'
    '::/128 unspecified' '::1/128 loopback' '::ffff:0:0/96 IPv4-mapped'
    'fe80::/10 link-local' 'ff00::/8 multicast'
)
# No mount point or export in, or holding, these; nor any lib* directory at
# the top or a .ssh component (kept equal to k8s_mgmt/params/nfs_exports.py).
readonly -a SYSTEM_DIRS=(/usr /etc /bin /sbin /boot /root /proc /sys /dev /run /tmp /var/lib
    /home /opt /var/log /var/spool/cron /snap)
# What check_empty reads: the first MiB must be zero, and the usual first
# partition starts there.
readonly ZERO_HEAD_BYTES=1048576
readonly PARTITION_START=1048576
readonly APT_FETCH_SECONDS=30
readonly DPKG_LOCK_SECONDS=300

MODE=""
ROOT_DIR=""
SECRETS_SOURCE=""
CURRENT_STEP="arguments"
# One entry per --volume, in the order given.
VOLUME_IDS=()
VOLUME_DEVICES=()
VOLUME_MOUNTS=()
# One entry per --export; EXPORT_DIR_LIST holds each directory once.
EXPORT_DIRS=()
EXPORT_CLIENTS=()
EXPORT_SQUASH=()
EXPORT_DIR_LIST=()
ALLOW_WIDE_EXPORT=false
# Found by the steps, per volume.
DEVICES=()
FS_TYPES=()
FS_UUIDS=()
FORMATTED=0
KEPT=0
GROUP_LIST=()
IPV6_GROUPS=()

usage() {
    cat <<'EOF'
Usage: setup_storage.sh server --volume ID,DEVICE,MOUNT_TO [--volume ...]
                               --export DIR,CLIENTS[,SQUASH] [--export ...]
                               [--allow-wide-export] [-o DIR]
       setup_storage.sh volumes --volume ID,DEVICE,MOUNT_TO [--volume ...] [-o DIR]
       setup_storage.sh client

server: each volume is found as /dev/disk/by-id/virtio-<first 20 characters
of ID>, else as DEVICE (the device Cinder reports; may be empty) when DEVICE
reports the volume's serial (else refused, nothing formatted), formatted
ext4 only when it is provably empty (no signature, no backup ext superblock,
a zero first MiB), mounted nosuid,nodev at MOUNT_TO with an /etc/fstab entry
by UUID (nofail); each DIR, on one of the mounts, is exported to CLIENTS (an
IPv4 or IPv6 address or network) through nfs-kernel-server; a DIR made here
belongs to 65534:65534, the user a squashed root becomes.
volumes: the volumes only, found, formatted and mounted as server does
them; no export, no NFS server.
client: installs nfs-common.

  --volume ID,DEVICE,MOUNT_TO  a Cinder volume and where to mount it
  --export DIR,CLIENTS[,SQUASH]
             a directory to export and who may mount it; SQUASH is
             root_squash (the default) or no_root_squash (root on a client
             is root on the share)
  --allow-wide-export
             allow CLIENTS wider than /16 (IPv4) or /48 (IPv6); loopback,
             link-local, multicast, broadcast and unspecified addresses are
             always refused
  -s FILE    KEY=VALUE lines (FILE mode 0600 or stricter, or - for stdin):
             http_proxy, https_proxy for apt; never on the command line
  -o DIR     for tests only: read and write /etc/fstab and /etc/exports as
             DIR/etc/fstab and DIR/etc/exports; devices, mounts, packages
             and services stay the real ones
  -h         this help

Paths are absolute, of A-Z a-z 0-9 / . _ + - only, without "..", and
neither in nor above a system directory (/usr /etc /bin /sbin /lib* /boot
/root /proc /sys /dev /run /tmp /var/lib /home /opt /var/log /var/spool/cron
/snap) nor through a .ssh directory.
Exit status: 0 done, 2 bad arguments, 1 a step failed (named on stderr).
EOF
}

# ------------------------------------------------------------ arguments

parse_args() {
    [[ $# -gt 0 ]] || usage_error "missing mode: server, volumes or client"
    case $1 in
        server | volumes | client) MODE=$1 ;;
        -h | --help) usage; exit 0 ;;
        *) usage_error "unknown mode '$1' (server, volumes or client)" ;;
    esac
    shift
    while [[ $# -gt 0 ]]; do
        case $1 in
            -s)
                [[ $# -ge 2 ]] || usage_error "option $1 needs a value"
                SECRETS_SOURCE=$2
                shift 2
                ;;
            --volume | --export | -o)
                [[ $# -ge 2 ]] || usage_error "option $1 needs a value"
                add_option "$1" "$2"
                shift 2
                ;;
            --volume=* | --export=*) add_option "${1%%=*}" "${1#*=}"; shift ;;
            --allow-wide-export)
                [[ $MODE == server ]] || usage_error "$1 is for server mode only"
                ALLOW_WIDE_EXPORT=true
                shift
                ;;
            -h | --help) usage; exit 0 ;;
            -*) usage_error "unknown option $1" ;;
            *) usage_error "unexpected argument: $1" ;;
        esac
    done
}

add_option() {
    local option=$1 value=$2 id device mount dir clients squash
    case $option in
        --export) [[ $MODE == server ]] || usage_error "$option is for server mode only" ;;
        *) [[ $MODE == server || $MODE == volumes ]] || usage_error "$option is for server and volumes modes only" ;;
    esac
    case $option in
        --volume)
            [[ $value =~ ^[^,]*,[^,]*,[^,]*$ ]] ||
                usage_error "bad --volume '$value' (want VOLUME_ID,DEVICE,MOUNT_TO; DEVICE may be empty)"
            IFS=, read -r id device mount <<<"$value"
            VOLUME_IDS+=("$id")
            VOLUME_DEVICES+=("$device")
            VOLUME_MOUNTS+=("$mount")
            ;;
        --export)
            [[ $value =~ ^[^,]*,[^,]*(,[^,]*)?$ ]] || usage_error "bad --export '$value' (want DIR,CLIENTS[,SQUASH])"
            IFS=, read -r dir clients squash <<<"$value"
            EXPORT_DIRS+=("$dir")
            EXPORT_CLIENTS+=("$clients")
            EXPORT_SQUASH+=("${squash:-root_squash}")
            ;;
        -o) ROOT_DIR=$value ;;
    esac
}

# clean_path VALUE: VALUE without empty or "." parts, in REPLY; non-zero
# when VALUE is not absolute, holds "..", a character outside
# A-Z a-z 0-9 / . _ + -, or is the root directory.
clean_path() {
    local part clean=""
    local -a parts
    [[ $1 == /* && $1 =~ ^[A-Za-z0-9/._+-]+$ ]] || return 1
    IFS=/ read -r -a parts <<<"$1"
    for part in "${parts[@]}"; do
        case $part in
            '' | .) ;;
            ..) return 1 ;;
            *) clean+=/$part ;;
        esac
    done
    [[ -n $clean ]] || return 1
    REPLY=$clean
}

# check_path WHAT VALUE: VALUE, cleaned, in REPLY, or a usage error.
check_path() {
    clean_path "$2" ||
        usage_error "bad $1 '$2' (want an absolute path of A-Z a-z 0-9 / . _ + -, without '..', not /)"
}

# check_data_path WHAT VALUE: as check_path, and refused in or above a
# system directory: a volume mounted there would hide the system's files,
# an export would hand them to the clients.
check_data_path() {
    local clean
    check_path "$1" "$2"
    clean=$REPLY
    ! system_dir_of "$clean" || usage_error "bad $1 '$2' ($REPLY)"
    REPLY=$clean
}

# system_dir_of PATH: REPLY says which system directory the clean absolute
# PATH is in or holds; non-zero when none.
system_dir_of() {
    local path=$1 top dir
    top=${path#/}
    top=${top%%/*}
    if [[ $top == lib* ]]; then
        REPLY="in the system directory /$top"
        return 0
    fi
    for dir in "${SYSTEM_DIRS[@]}"; do
        if [[ $path == "$dir" || $path == "$dir"/* ]]; then
            REPLY="in the system directory $dir"
            return 0
        fi
        if [[ $dir == "$path"/* ]]; then
            REPLY="holds the system directory $dir"
            return 0
        fi
    done
    if [[ $path/ == */.ssh/* ]]; then
        REPLY="has a .ssh component"
        return 0
    fi
    return 1
}

# An IPv6 address: 8 groups of 1-4 hex digits, or fewer with one "::".
is_ipv6() {
    local value=$1 group count=0
    local -a groups
    [[ $value =~ ^[0-9A-Fa-f:]{2,39}$ && $value != *:::* ]] || return 1
    [[ $value != *::*::* ]] || return 1
    [[ $value != :[^:]* && $value != *[^:]: ]] || return 1
    IFS=: read -r -a groups <<<"${value//::/:}"
    for group in "${groups[@]}"; do
        [[ -z $group ]] && continue
        [[ $group =~ ^[0-9A-Fa-f]{1,4}$ ]] || return 1
        count=$((count + 1))
    done
    if [[ $value == *::* ]]; then ((count <= 7)); else ((count == 8)); fi
}

# NFS clients: an address, or a network, in their written form; which ones
# are allowed is check_clients's to say.
is_nfs_clients() {
    local address=${1%/*} prefix=${1#*/}
    [[ $1 != */* || $prefix =~ ^(0|[1-9][0-9]{0,2})$ ]] || return 1
    if is_ipv4 "$address"; then
        [[ $1 != */* ]] || in_range "$prefix" 0 32
    elif is_ipv6 "$address"; then
        [[ $1 != */* ]] || in_range "$prefix" 0 128
    else
        return 1
    fi
}

# clients_refused CLIENTS: REPLY says why the export may not go to CLIENTS
# (a checked address or network); non-zero when it may.
clients_refused() {
    local address=${1%/*} prefix entry network what widest
    if [[ $1 == */* ]]; then prefix=$((10#${1#*/})); elif [[ $1 == *:* ]]; then prefix=128; else prefix=32; fi
    for entry in "${REFUSED_CLIENTS[@]}"; do
        network=${entry%% *}
        what=${entry#* }
        if networks_overlap "$address" "$prefix" "${network%/*}" "${network#*/}"; then
            REPLY="it includes $what addresses ($network)"
            return 0
        fi
    done
    if [[ $address == *:* ]]; then widest=$WIDEST_IPV6_PREFIX; else widest=$WIDEST_IPV4_PREFIX; fi
    if ! "$ALLOW_WIDE_EXPORT" && ((prefix < widest)); then
        REPLY="wider than /$widest (pass --allow-wide-export to allow it)"
        return 0
    fi
    return 1
}

# networks_overlap ADDRESS PREFIX ADDRESS PREFIX: the two networks share
# an address (same family, equal in the bits of the shorter prefix).
networks_overlap() {
    local first second shorter=$(($2 < $4 ? $2 : $4))
    [[ ${1//[^:]/} == "" && ${3//[^:]/} == "" || $1 == *:* && $3 == *:* ]] || return 1
    address_bits "$1"
    first=$REPLY
    address_bits "$3"
    second=$REPLY
    [[ ${first:0:shorter} == "${second:0:shorter}" ]]
}

# address_bits ADDRESS: a checked IPv4 or IPv6 address as 32 or 128 "0"
# and "1" characters, in REPLY.
address_bits() {
    local part width=8 i bits=""
    local -a parts
    if [[ $1 == *:* ]]; then
        ipv6_groups "$1"
        parts=("${IPV6_GROUPS[@]}")
        width=16
    else
        IFS=. read -r -a parts <<<"$1"
    fi
    for part in "${parts[@]}"; do
        if ((width == 16)); then part=$((16#$part)); else part=$((10#$part)); fi
        for ((i = width - 1; i >= 0; i--)); do
            bits+=$(((part >> i) & 1))
        done
    done
    REPLY=$bits
}

# ipv6_groups ADDRESS: its 8 groups of hex digits in IPV6_GROUPS, "::"
# filled with zero groups.
ipv6_groups() {
    local -a head=() tail=()
    IPV6_GROUPS=()
    if [[ $1 == *::* ]]; then
        IFS=: read -r -a head <<<"${1%%::*}"
        IFS=: read -r -a tail <<<"${1#*::}"
        IPV6_GROUPS=("${head[@]}")
        while ((${#IPV6_GROUPS[@]} + ${#tail[@]} < 8)); do IPV6_GROUPS+=(0); done
        IPV6_GROUPS+=("${tail[@]}")
    else
        IFS=: read -r -a IPV6_GROUPS <<<"$1"
    fi
}

validate_volumes() {
    local i j id
    [[ ${#VOLUME_IDS[@]} -gt 0 ]] || usage_error "missing --volume VOLUME_ID,DEVICE,MOUNT_TO"
    for i in "${!VOLUME_IDS[@]}"; do
        id=${VOLUME_IDS[$i]}
        [[ $id =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$ ]] ||
            usage_error "bad volume id '$id' in --volume (want A-Z a-z 0-9 . _ -)"
        if [[ -n ${VOLUME_DEVICES[$i]} ]]; then
            check_path "device of volume $id" "${VOLUME_DEVICES[$i]}"
            [[ $REPLY == /dev/* ]] || usage_error "bad device of volume $id '${VOLUME_DEVICES[$i]}' (want /dev/...)"
            VOLUME_DEVICES[i]=$REPLY
        fi
        check_data_path "mount point of volume $id" "${VOLUME_MOUNTS[$i]}"
        VOLUME_MOUNTS[i]=$REPLY
        for ((j = 0; j < i; j++)); do
            [[ ${VOLUME_IDS[$j]} != "$id" ]] || usage_error "volume '$id' given twice"
            [[ ${VOLUME_MOUNTS[$j]} != "${VOLUME_MOUNTS[$i]}" ]] ||
                usage_error "mount point '${VOLUME_MOUNTS[$i]}' given twice"
            if [[ ${VOLUME_MOUNTS[$i]} == "${VOLUME_MOUNTS[$j]}"/* ||
                ${VOLUME_MOUNTS[$j]} == "${VOLUME_MOUNTS[$i]}"/* ]]; then
                usage_error "mount points '${VOLUME_MOUNTS[$j]}' and '${VOLUME_MOUNTS[$i]}' are nested"
            fi
        done
    done
}

validate_exports() {
    local i j dir
    [[ ${#EXPORT_DIRS[@]} -gt 0 ]] || usage_error "missing --export DIR,CLIENTS[,SQUASH]"
    for i in "${!EXPORT_DIRS[@]}"; do
        check_data_path "export directory" "${EXPORT_DIRS[$i]}"
        EXPORT_DIRS[i]=$REPLY
        is_nfs_clients "${EXPORT_CLIENTS[$i]}" ||
            usage_error "bad export clients '${EXPORT_CLIENTS[$i]}' for ${EXPORT_DIRS[$i]} (want an IPv4 or IPv6 address or network)"
        ! clients_refused "${EXPORT_CLIENTS[$i]}" ||
            usage_error "refusing to export ${EXPORT_DIRS[$i]} to ${EXPORT_CLIENTS[$i]}: $REPLY"
        [[ ${EXPORT_SQUASH[$i]} == root_squash || ${EXPORT_SQUASH[$i]} == no_root_squash ]] ||
            usage_error "bad squash '${EXPORT_SQUASH[$i]}' for ${EXPORT_DIRS[$i]} (want root_squash or no_root_squash)"
        for ((j = 0; j < i; j++)); do
            if [[ ${EXPORT_DIRS[$j]} == "${EXPORT_DIRS[$i]}" && ${EXPORT_CLIENTS[$j]} == "${EXPORT_CLIENTS[$i]}" ]]; then
                usage_error "export '${EXPORT_DIRS[$i]},${EXPORT_CLIENTS[$i]}' given twice"
            fi
        done
    done
    for dir in "${EXPORT_DIRS[@]}"; do
        [[ " ${EXPORT_DIR_LIST[*]} " == *" $dir "* ]] || EXPORT_DIR_LIST+=("$dir")
    done
}

# Proxy URLs may carry a password: exported to apt-get's environment,
# never put on a command line.
store_secret() {
    local key=$1 value=$2
    case $key in
        http_proxy | https_proxy)
            [[ $value =~ ^https?://[^[:space:]]+$ ]] || usage_error "secret '$key' is not an http(s) URL"
            export "$key=$value" ;;
        *) usage_error "unknown key in secrets input: '$key'" ;;
    esac
}

validate_args() {
    if [[ -n $ROOT_DIR ]]; then
        check_path "-o directory" "$ROOT_DIR"
        ROOT_DIR=$REPLY
    fi
    [[ $MODE == server || $MODE == volumes ]] || return 0
    validate_volumes
    [[ $MODE == volumes ]] || validate_exports
}

# ---------------------------------------------------------------- helpers

# Installed paths; under ROOT_DIR in tests (-o).
path_of() {
    printf '%s%s\n' "$ROOT_DIR" "$1"
}

# The volume whose mount point holds PATH (lexically), in REPLY.
mount_holding() {
    local mount
    for mount in "${VOLUME_MOUNTS[@]}"; do
        if [[ $1 == "$mount" || $1 == "$mount"/* ]]; then
            REPLY=$mount
            return 0
        fi
    done
    return 1
}

# MAJOR:MINOR of a block device, as findmnt shows it.
device_number() {
    local numbers
    numbers=$(stat -L -c '%t %T' -- "$1") || return 1
    printf '%d:%d\n' "0x${numbers% *}" "0x${numbers#* }"
}

# with_block FILE BLOCK: FILE's lines with its managed block replaced by
# BLOCK (the whole block, markers included), or BLOCK appended when FILE has
# none; a missing FILE is empty. Fails on a broken block.
with_block() {
    local file=$1 block=$2 line state=before
    if [[ -f $file ]]; then
        while IFS= read -r line || [[ -n $line ]]; do
            case $state:$line in
                before:"$BLOCK_BEGIN") state=inside ;;
                inside:"$BLOCK_END") printf '%s' "$block"; state=after ;;
                inside:"$BLOCK_BEGIN") log "$file has '$BLOCK_BEGIN' twice without '$BLOCK_END'"; return 1 ;;
                inside:*) ;;
                *:"$BLOCK_BEGIN") log "$file has two '$BLOCK_BEGIN' lines"; return 1 ;;
                *:"$BLOCK_END") log "$file has '$BLOCK_END' without '$BLOCK_BEGIN'"; return 1 ;;
                *) printf '%s\n' "$line" ;;
            esac
        done <"$file"
    fi
    case $state in
        inside) log "$file has '$BLOCK_BEGIN' without '$BLOCK_END'"; return 1 ;;
        before) printf '%s' "$block" ;;
    esac
}

# foreign_lines FILE: the lines of FILE outside the managed block.
foreign_lines() {
    local line inside=false
    [[ -f $1 ]] || return 0
    while IFS= read -r line || [[ -n $line ]]; do
        case $line in
            "$BLOCK_BEGIN") inside=true ;;
            "$BLOCK_END") inside=false ;;
            *) "$inside" || printf '%s\n' "$line" ;;
        esac
    done <"$1"
}

# refuse_foreign FILE FIELD PATH...: stop when a line of FILE outside the
# managed block has one of PATHs as its FIELD-th word (1 or 2): two
# entries for one path would fight over it.
refuse_foreign() {
    local file=$1 field=$2 line first second word path
    shift 2
    foreign_lines "$file" | while IFS= read -r line; do
        read -r first second _ <<<"$line" || true
        [[ -n $first && $first != \#* ]] || continue
        if [[ $field == 1 ]]; then word=$first; else word=$second; fi
        word=${word//\"/}
        for path in "$@"; do
            [[ $word == "$path" ]] || continue
            die "$file has a line for $path outside the '$BLOCK_BEGIN' block: '$line'; remove it, this script manages $path"
        done
    done
}

# install_block FILE BLOCK: FILE with BLOCK as its managed block (mode
# 0644); WRITE_FILE_CHANGED says whether it changed.
install_block() {
    local file=$1 block=$2 rendered
    rendered=$(mktemp)
    TEMP_FILES+=("$rendered")
    with_block "$file" "$block" >"$rendered" || die "not changing $file: its managed block is broken; fix it by hand"
    write_file "$file" 0644 <"$rendered" || die "cannot write $file"
}

changed_word() {
    if "$WRITE_FILE_CHANGED"; then echo updated; else echo unchanged; fi
}

# ------------------------------------------------------ external effects


package_installed() {
    [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == "install ok installed" ]]
}

# ensure_package PKG: installs PKG unless dpkg has it; REPLY says
# "installed" or "already installed".
ensure_package() {
    local package=$1
    REPLY="already installed"
    package_installed "$package" && return 0
    apt_get update || die "apt-get update failed"
    apt_get install "$package" || die "apt-get install $package failed"
    package_installed "$package" || die "$package is still not installed after apt-get install"
    REPLY=installed
}

# probe DEVICE: blkid -p's view of DEVICE: PROBE_STATUS (0 found, 2 no
# signature, else an error) and PROBE_TYPE, PROBE_UUID, PROBE_USAGE,
# PROBE_PTTYPE.
probe() {
    local output key value
    PROBE_STATUS=0 PROBE_TYPE="" PROBE_UUID="" PROBE_USAGE="" PROBE_PTTYPE=""
    output=$(blkid -p -o export -- "$1" 2>/dev/null) || PROBE_STATUS=$?
    while IFS='=' read -r key value; do
        case $key in
            TYPE) PROBE_TYPE=$value ;;
            UUID) PROBE_UUID=$value ;;
            USAGE) PROBE_USAGE=$value ;;
            PTTYPE) PROBE_PTTYPE=$value ;;
        esac
    done <<<"$output"
}

# The only way this script formats: blkid probes DEVICE once more right
# before, and anything but "no signature at all" (exit 2) stops it; then
# check_empty must prove there is nothing to recover on it. mkfs.ext4
# itself would overwrite a filesystem without asking when stdin is no
# terminal.
format_ext4() {
    local device=$1 status=0
    blkid -p -- "$device" >/dev/null 2>&1 || status=$?
    ((status == 2)) || die "refusing to format $device: blkid -p finds a signature on it or fails (exit $status)"
    check_empty "$device"
    mkfs.ext4 -q -- "$device" </dev/null >&2 || die "mkfs.ext4 $device failed"
}

# check_empty DEVICE: stops unless DEVICE is provably empty. blkid -p
# reads only the first superblock: a volume whose first blocks were
# overwritten looks empty to it, although e2fsck -b still recovers every
# file from a backup superblock.
check_empty() {
    local device=$1 found size head
    found=$(wipefs --no-act --noheadings -O OFFSET,TYPE "$device" 2>&1) ||
        die "refusing to format $device: wipefs fails: $found"
    [[ -z $found ]] || die "refusing to format $device: wipefs finds $(signature_list "$found")"
    size=$(blockdev --getsize64 "$device") || die "refusing to format $device: blockdev cannot read its size"
    ! ext_superblock_on "$device" "$size" || die "refusing to format $device: $REPLY"
    head=$((size < ZERO_HEAD_BYTES ? size : ZERO_HEAD_BYTES))
    cmp -s -n "$head" -- "$device" /dev/zero || die "refusing to format $device: its first MiB is not zero"
}

# signature_list LINES: wipefs's "OFFSET TYPE" lines as "TYPE at OFFSET, ...".
signature_list() {
    local offset type list=""
    while read -r offset type; do
        list+="${list:+, }$type at $offset"
    done <<<"$1"
    printf '%s\n' "$list"
}

# ext_superblock_on DEVICE SIZE: REPLY describes the first ext2/3/4
# superblock found where mke2fs puts its backups (1, 2 or 4 KiB blocks,
# default group size), on the whole DEVICE or in a partition that began at
# 1 MiB before its table was wiped; non-zero when there is none.
ext_superblock_on() {
    local device=$1 size=$2 start block group first offset number bytes
    for start in 0 "$PARTITION_START"; do
        for block in 1024 2048 4096; do
            # Block 0 of a 1 KiB filesystem is its boot block.
            first=$((block == 1024 ? 1024 : 0))
            bytes=$((8 * block * block))
            backup_groups $(((size - start - first + bytes - 1) / bytes))
            ((start == 0)) || GROUP_LIST=(0 "${GROUP_LIST[@]}")
            for group in "${GROUP_LIST[@]}"; do
                offset=$((start + first + group * bytes))
                ((offset + 1024 <= size)) || continue
                ext_superblock_at "$device" "$offset" "$block" || continue
                # Its own block size: a copy of a 4 KiB filesystem can lie
                # where a 2 KiB one would have one too.
                number=$(((offset - start) / REPLY))
                if ((start == 0)); then
                    REPLY="backup ext superblock at byte $offset (run e2fsck -b $number -B $REPLY $device to recover its files)"
                else
                    REPLY="ext superblock at byte $offset, as in a partition from byte $start whose table is gone"
                fi
                return 0
            done
        done
    done
    return 1
}

# backup_groups COUNT: in GROUP_LIST, the groups below COUNT that may hold
# a superblock copy: 1 and the powers of 3, 5 and 7 (sparse_super), and the
# last group (sparse_super2), or the one before when mke2fs left out a last
# group too small for its own metadata.
backup_groups() {
    local count=$1 base power
    GROUP_LIST=()
    ((count > 1)) || return 0
    GROUP_LIST=(1)
    for base in 3 5 7; do
        for ((power = base; power < count; power *= base)); do
            GROUP_LIST+=("$power")
        done
    done
    GROUP_LIST+=($((count - 2)) $((count - 1)))
}

# ext_superblock_at DEVICE OFFSET BLOCK: the ext magic 0xEF53
# (little-endian, at byte 56) in the superblock at OFFSET; REPLY is the
# block size it records (byte 24, log2 of size/1024), or BLOCK when that
# is out of range. An unreadable device stops the run.
ext_superblock_at() {
    local text
    local -a bytes
    text=$(dd if="$1" bs=64 count=1 skip="$2" iflag=skip_bytes status=none | od -An -v -tx1) ||
        die "refusing to format $1: cannot read it at byte $2"
    read -r -a bytes <<<"${text//$'\n'/ }"
    [[ ${#bytes[@]} -eq 64 && ${bytes[56]}${bytes[57]} == 53ef ]] || return 1
    REPLY=$3
    if [[ ${bytes[25]}${bytes[26]}${bytes[27]} == 000000 && ${bytes[24]} =~ ^0[0-6]$ ]]; then
        REPLY=$((1024 << 10#${bytes[24]}))
    fi
}

# ------------------------------------------------------------ the steps

# device: the block device of each volume, a whole disk without partitions.
find_devices() {
    local i j
    for i in "${!VOLUME_IDS[@]}"; do
        find_device "$i"
        for ((j = 0; j < i; j++)); do
            [[ ${DEVICES[$j]} != "${DEVICES[$i]}" ]] ||
                die "volumes ${VOLUME_IDS[$j]} and ${VOLUME_IDS[$i]} are both ${DEVICES[$i]}"
        done
    done
}

find_device() {
    local i=$1 id=${VOLUME_IDS[$1]} given=${VOLUME_DEVICES[$1]} link device how
    link=$BY_ID_DIR/virtio-${id:0:20}
    if [[ -e $link ]]; then
        device=$(readlink -f -- "$link")
        how="by its link $link"
        if [[ -n $given && $(readlink -f -- "$given") != "$device" ]]; then
            log "volume $id: Cinder reports $given, the link says $device: using $device"
        fi
    elif [[ -n $given ]]; then
        device=$(readlink -f -- "$given")
        how="as reported by Cinder (no $link; its serial is the volume's)"
    else
        die "volume $id: no $link and no device given"
    fi
    [[ -b $device ]] || die "volume $id: $device is not a block device"
    check_whole_disk "$id" "$device"
    [[ -e $link ]] || check_serial "$id" "$device" "$link"
    DEVICES[i]=$device
    echo "device: volume $id is $device, found $how"
}

# check_serial ID DEVICE LINK: DEVICE, named by Cinder without LINK, is
# used (and may be formatted) only when it reports the volume's serial:
# device names follow attach order, and a wrong guess would format
# another disk.
check_serial() {
    local id=$1 device=$2 link=$3
    device_serial "$device" ||
        die "volume $id: no $link, and $device reports no serial: not using a disk not shown to be the volume (nothing formatted)"
    [[ $REPLY == "${id:0:20}" || $REPLY == "$id" ]] ||
        die "volume $id: no $link, and $device reports serial '${REPLY//[^A-Za-z0-9._-]/?}', not '${id:0:20}': another disk, not used (nothing formatted)"
}

# device_serial DEVICE: REPLY the serial DEVICE reports, without blanks;
# non-zero when it reports none.
device_serial() {
    local file=$SYS_BLOCK_DIR/${1##*/}/serial serial=""
    if [[ -r $file ]]; then
        serial=$(<"$file") || serial=""
    fi
    if [[ -z ${serial//[[:space:]]/} ]]; then
        serial=$(lsblk -d -n -r -o SERIAL -- "$1" 2>/dev/null) || serial=""
    fi
    REPLY=${serial//[[:space:]]/}
    [[ -n $REPLY ]]
}

check_whole_disk() {
    local id=$1 device=$2 listing type
    local -a rows
    listing=$(lsblk -n -r -o TYPE,NAME -- "$device" 2>&1) || die "volume $id: lsblk $device failed: $listing"
    mapfile -t rows <<<"$listing"
    type=${rows[0]%% *}
    [[ $type == disk || $type == loop ]] ||
        die "volume $id: $device is a '$type', not a whole disk"
    [[ ${#rows[@]} -eq 1 ]] ||
        die "volume $id: $device has partitions or holders (${rows[*]:1}); not using it"
}

# filesystem: keep a filesystem, format an empty volume, refuse the rest.
check_filesystems() {
    local i
    for i in "${!DEVICES[@]}"; do
        check_filesystem "$i"
    done
}

check_filesystem() {
    local i=$1 device=${DEVICES[$1]}
    probe "$device"
    case $PROBE_STATUS in
        2)
            format_ext4 "$device"
            probe "$device"
            [[ $PROBE_STATUS == 0 && $PROBE_TYPE == ext4 ]] ||
                die "$device: blkid finds no ext4 after mkfs.ext4 (exit $PROBE_STATUS)"
            FORMATTED=$((FORMATTED + 1))
            echo "filesystem: no filesystem on $device: formatted ext4"
            ;;
        0)
            [[ -z $PROBE_PTTYPE ]] ||
                die "not formatting: $device holds a partition table ($PROBE_PTTYPE); give a whole volume without partitions"
            [[ $PROBE_USAGE == filesystem && -n $PROBE_TYPE ]] ||
                die "not formatting: $device holds a '${PROBE_TYPE:-unknown}' signature (usage '${PROBE_USAGE:-unknown}'), not a filesystem"
            [[ -n $PROBE_UUID ]] || die "$device has $PROBE_TYPE without a UUID for /etc/fstab"
            KEPT=$((KEPT + 1))
            echo "filesystem: $device has $PROBE_TYPE (UUID $PROBE_UUID): mounted as it is, not formatted"
            ;;
        *) die "blkid -p $device failed (exit $PROBE_STATUS)" ;;
    esac
    FS_TYPES[i]=$PROBE_TYPE
    FS_UUIDS[i]=$PROBE_UUID
}

render_fstab_block() {
    local i
    printf '%s\n' "$BLOCK_BEGIN" "# Rebuilt by $PROG on every run; edit outside this block."
    for i in "${!VOLUME_MOUNTS[@]}"; do
        printf 'UUID=%s %s %s defaults,nofail,%s 0 2\n' "${FS_UUIDS[$i]}" "${VOLUME_MOUNTS[$i]}" "${FS_TYPES[$i]}" \
            "$MOUNT_OPTIONS"
    done
    printf '%s\n' "$BLOCK_END"
}

# mount_state I: REPLY "mounted" when the volume's device is mounted at
# its mount point, "free" when neither is in use; stops on any other mount.
mount_state() {
    local i=$1 device=${DEVICES[$1]} mount=${VOLUME_MOUNTS[$1]} number target here elsewhere
    number=$(device_number "$device") || die "cannot stat $device"
    target=$(realpath -e -- "$mount") || die "cannot resolve $mount"
    # The path was checked as written; a symlink on it could lead elsewhere.
    ! system_dir_of "$target" || die "$mount resolves to $target, $REPLY"
    here=$(findmnt -rn -o MAJ:MIN,SOURCE --mountpoint "$target" | tail -n 1) || here=""
    if [[ -n $here ]]; then
        [[ ${here%% *} == "$number" ]] ||
            die "$mount already has ${here#* } mounted, not $device"
        REPLY=mounted
        return 0
    fi
    elsewhere=$(findmnt -rn -o MAJ:MIN,TARGET | awk -v n="$number" '$1 == n && !found { print $2; found = 1 }')
    [[ -z $elsewhere ]] || die "$device is already mounted at $elsewhere, not at $mount"
    # A volume that did not mount at boot (nofail) leaves files written
    # into the bare directory; mounting over them would hide them.
    [[ -z $(ls -A -- "$target") ]] || die "$mount is not empty: mounting $device there would hide its files"
    REPLY=free
}

mount_volumes() {
    local i fstab number
    local -a states=()
    fstab=$(path_of /etc/fstab)
    refuse_foreign "$fstab" 2 "${VOLUME_MOUNTS[@]}"
    for i in "${!VOLUME_MOUNTS[@]}"; do
        mkdir -p -- "${VOLUME_MOUNTS[$i]}" || die "cannot create ${VOLUME_MOUNTS[$i]}"
        mount_state "$i"
        states[i]=$REPLY
    done
    install_block "$fstab" "$(render_fstab_block)"$'\n'
    echo "fstab: $(changed_word)"
    for i in "${!VOLUME_MOUNTS[@]}"; do
        if [[ ${states[$i]} == mounted ]]; then
            ensure_mount_options "$i"
            echo "mount: ${DEVICES[$i]} already at ${VOLUME_MOUNTS[$i]}$REPLY"
            continue
        fi
        mount -t "${FS_TYPES[$i]}" -o "$MOUNT_OPTIONS" -- "${DEVICES[$i]}" "${VOLUME_MOUNTS[$i]}" ||
            die "mount ${DEVICES[$i]} ${VOLUME_MOUNTS[$i]} failed"
        number=$(device_number "${DEVICES[$i]}")
        [[ $(findmnt -rn -o MAJ:MIN --mountpoint "$(realpath -e -- "${VOLUME_MOUNTS[$i]}")" | tail -n 1) == "$number" ]] ||
            die "findmnt shows no ${DEVICES[$i]} at ${VOLUME_MOUNTS[$i]} after mount"
        ensure_mount_options "$i"
        echo "mount: ${DEVICES[$i]} at ${VOLUME_MOUNTS[$i]}, $MOUNT_OPTIONS$REPLY"
    done
}

# ensure_mount_options I: the volume's mount has MOUNT_OPTIONS; one mounted
# without them (by an older run, or by hand) is remounted with them, and
# REPLY says so.
ensure_mount_options() {
    local mount=${VOLUME_MOUNTS[$1]} target options
    REPLY=""
    target=$(realpath -e -- "$mount")
    options=$(findmnt -rn -o OPTIONS --mountpoint "$target" | tail -n 1)
    has_mount_options "$options" && return 0
    mount -o "remount,$MOUNT_OPTIONS" -- "$target" || die "mount -o remount,$MOUNT_OPTIONS $mount failed"
    options=$(findmnt -rn -o OPTIONS --mountpoint "$target" | tail -n 1)
    has_mount_options "$options" || die "$mount is mounted with '$options', without $MOUNT_OPTIONS"
    REPLY=", remounted $MOUNT_OPTIONS"
}

has_mount_options() {
    [[ ,$1, == *,nosuid,* && ,$1, == *,nodev,* ]]
}

# Checked before any step: an export must live on a volume, not on the
# VM's root disk, which a heal replaces.
check_exports_on_volumes() {
    local dir
    for dir in "${EXPORT_DIR_LIST[@]}"; do
        mount_holding "$dir" ||
            die "$dir is on none of the volume mount points (${VOLUME_MOUNTS[*]})"
    done
}

render_exports_block() {
    local dir i line
    printf '%s\n' "$BLOCK_BEGIN" "# Rebuilt by $PROG on every run; edit outside this block."
    for dir in "${EXPORT_DIR_LIST[@]}"; do
        line=$dir
        for i in "${!EXPORT_DIRS[@]}"; do
            [[ ${EXPORT_DIRS[$i]} == "$dir" ]] || continue
            line+=" ${EXPORT_CLIENTS[$i]}($EXPORT_OPTIONS,${EXPORT_SQUASH[$i]})"
        done
        printf '%s\n' "$line"
    done
    printf '%s\n' "$BLOCK_END"
}

# A directory set up before root_squash was the default (or by hand) may be
# root's alone: say so, since clients' root can no longer write there.
warn_unwritable_when_squashed() {
    local dir=$1 i owner mode
    for i in "${!EXPORT_DIRS[@]}"; do
        [[ ${EXPORT_DIRS[$i]} == "$dir" && ${EXPORT_SQUASH[$i]} == root_squash ]] || continue
        read -r owner mode < <(stat -c '%u %a' -- "$dir") || return 0
        if [[ $owner == 0 && $((8#$mode & 8#002)) == 0 ]]; then
            log "warning: $dir belongs to root and is exported with root_squash: root on a client becomes $SQUASHED_OWNER and cannot write there; give the directory to the pods' user (chown $SQUASHED_OWNER $dir for pods running as root) or set no_root_squash for this export"
            echo "export directory: $dir kept as it is (root's; see the warning)"
        fi
        return 0
    done
}

# exports: each directory made on its mounted volume, one managed block.
# A directory made here belongs to the user root_squash maps root to;
# existing ones, and what they hold, keep their owner.
configure_exports() {
    local dir target on exports made
    for dir in "${EXPORT_DIR_LIST[@]}"; do
        mount_holding "$dir"
        made=false
        [[ -e $dir ]] || made=true
        mkdir -p -- "$dir" || die "cannot create $dir"
        # Lexically under the mount point is not enough: a symlink on the
        # way could lead elsewhere.
        target=$(realpath -e -- "$REPLY")
        on=$(findmnt -rn -o TARGET --target "$dir") || on=""
        [[ $on == "$target" ]] || die "$dir is on ${on:-no mount}, not on the volume at $REPLY"
        if "$made"; then
            chown -h -- "$SQUASHED_OWNER" "$dir" || die "cannot give $dir to $SQUASHED_OWNER"
            echo "export directory: made $dir, owned by $SQUASHED_OWNER"
        else
            warn_unwritable_when_squashed "$dir"
        fi
    done
    exports=$(path_of /etc/exports)
    refuse_foreign "$exports" 1 "${EXPORT_DIR_LIST[@]}"
    install_block "$exports" "$(render_exports_block)"$'\n'
    echo "exports: $(changed_word)"
}

install_server_package() {
    ensure_package nfs-kernel-server
    echo "packages: nfs-kernel-server $REPLY"
}

install_client_package() {
    ensure_package nfs-common
    echo "nfs client: $REPLY"
}

# service: running, and serving what /etc/exports says now. exportfs -ra
# runs on every pass, not only when the file changed, so that a run that
# wrote the file and then failed is made good by the next.
start_nfs_server() {
    local outcome
    systemctl enable nfs-kernel-server >/dev/null 2>&1 || log "warning: systemctl enable nfs-kernel-server failed"
    if systemctl is-active --quiet nfs-kernel-server; then
        exportfs -ra >&2 || die "exportfs -ra failed"
        outcome="running, exports re-read"
    else
        systemctl restart nfs-kernel-server >&2 || die "systemctl restart nfs-kernel-server failed"
        outcome=started
    fi
    systemctl is-active --quiet nfs-kernel-server || die "nfs-kernel-server is not active (after: $outcome)"
    echo "nfs server: $outcome"
}

# ------------------------------------------------------------------ main

step() {
    CURRENT_STEP=$1
    shift
    log "==> $CURRENT_STEP"
    "$@"
}

server() {
    CURRENT_STEP=exports
    check_exports_on_volumes
    step device find_devices
    step filesystem check_filesystems
    step mount mount_volumes
    step exports configure_exports
    step packages install_server_package
    step service start_nfs_server
    CURRENT_STEP=finished
    echo "storage: ${#VOLUME_IDS[@]} volume(s) ($FORMATTED formatted, $KEPT kept), ${#EXPORT_DIRS[@]} export(s)"
}

volumes() {
    step device find_devices
    step filesystem check_filesystems
    step mount mount_volumes
    CURRENT_STEP=finished
    echo "storage: ${#VOLUME_IDS[@]} volume(s) ($FORMATTED formatted, $KEPT kept)"
}

client() {
    step packages install_client_package
    CURRENT_STEP=finished
}

main() {
    ORIGINAL_ARGS=("$@")
    parse_args "$@"
    validate_args
    become_root "${ORIGINAL_ARGS[@]}"
    [[ -z $SECRETS_SOURCE ]] || read_secret_lines "$SECRETS_SOURCE" store_secret
    trap 'on_error $? $LINENO' ERR
    trap cleanup EXIT
    "$MODE"
}

# Sourced (by the bats tests) it only defines its functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
