#!/usr/bin/env bats
# setup_storage.sh: its arguments, their checks and the exit statuses.

load helpers

setup() {
    load_script setup_storage.sh
    SCRIPT=$SCRIPTS_DIR/setup_storage.sh
}

# args: parse and validate like main does.
args() {
    parse_args "$@"
    validate_args
}

@test "parse_args and validate_args: volumes, exports, cleaned paths" {
    args server --volume vol-1,,/srv/nfs/ --volume=vol-2,/dev/vdc,/srv//two/. \
        --export /srv/nfs/pv1,10.10.0.0/24 --export=/srv/nfs/pv1,192.168.1.7,no_root_squash \
        --export /srv/two,fd00::/64,root_squash -o /tmp/render
    [ "$MODE" = server ]
    [ "${VOLUME_IDS[*]}" = 'vol-1 vol-2' ]
    [ "${VOLUME_DEVICES[0]}" = '' ]
    [ "${VOLUME_DEVICES[1]}" = /dev/vdc ]
    [ "${VOLUME_MOUNTS[*]}" = '/srv/nfs /srv/two' ]
    [ "${EXPORT_DIRS[*]}" = '/srv/nfs/pv1 /srv/nfs/pv1 /srv/two' ]
    [ "${EXPORT_CLIENTS[*]}" = '10.10.0.0/24 192.168.1.7 fd00::/64' ]
    # root_squash unless asked otherwise, per export.
    [ "${EXPORT_SQUASH[*]}" = 'root_squash no_root_squash root_squash' ]
    [ "$ALLOW_WIDE_EXPORT" = false ]
    # Each directory once, in the order given.
    [ "${EXPORT_DIR_LIST[*]}" = '/srv/nfs/pv1 /srv/two' ]
    [ "$ROOT_DIR" = /tmp/render ]
}

@test "volumes: the volumes alone, checked as for a server, no export" {
    args volumes --volume reg-1,/dev/vdb,/srv/registry/ -o /tmp/render
    [ "$MODE" = volumes ]
    [ "${VOLUME_IDS[*]}" = reg-1 ]
    [ "${VOLUME_MOUNTS[*]}" = /srv/registry ]
    [ "${#EXPORT_DIRS[@]}" -eq 0 ]
    # Its run: find, check, mount, and a summary; no package, no service.
    find_devices() { DEVICES=(/dev/vdb); }
    check_filesystems() { KEPT=1; }
    mount_volumes() { :; }
    install_server_package() { echo "no package in volumes mode" >&2; return 1; }
    start_nfs_server() { echo "no NFS server in volumes mode" >&2; return 1; }
    run -0 volumes
    [ "${lines[-1]}" = 'storage: 1 volume(s) (0 formatted, 1 kept)' ]
}

@test "validate_args: every bad value is a usage error that names it" {
    local -a ok=(--export /srv/a,10.0.0.0/24)
    check() {
        local want=$1
        shift
        run --separate-stderr args "$@"
        [ "$status" -eq 2 ] || { echo "status $status for $*"; return 1; }
        [[ $stderr == *"$want"* ]] || { echo "got: $stderr"; return 1; }
    }
    check "missing mode" 
    check "unknown mode 'format'" format
    check "missing --volume" server "${ok[@]}"
    check "missing --export" server --volume v,,/srv/a
    check "bad --volume 'v,/srv/a'" server --volume v,/srv/a "${ok[@]}"
    check "bad --volume 'v,,/srv/a,x'" server --volume v,,/srv/a,x "${ok[@]}"
    check "bad volume id 'v 1'" server --volume 'v 1,,/srv/a' "${ok[@]}"
    check "bad volume id ''" server --volume ,,/srv/a "${ok[@]}"
    check "bad volume id '-v'" server --volume -v,,/srv/a "${ok[@]}"
    check "bad mount point of volume v 'srv/a'" server --volume v,,srv/a "${ok[@]}"
    check "bad mount point of volume v '/srv/../etc'" server --volume v,,/srv/../etc "${ok[@]}"
    check "bad mount point of volume v '/'" server --volume v,,/ "${ok[@]}"
    check "bad mount point of volume v '//.'" server --volume v,,//. "${ok[@]}"
    check "bad mount point of volume v '/srv/a b'" server --volume 'v,,/srv/a b' "${ok[@]}"
    check "bad mount point of volume v '/srv/\$(reboot)'" server --volume 'v,,/srv/$(reboot)' "${ok[@]}"
    check "bad device of volume v 'vdb'" server --volume v,vdb,/srv/a "${ok[@]}"
    check "bad device of volume v '/etc/passwd'" server --volume v,/etc/passwd,/srv/a "${ok[@]}"
    check "bad device of volume v '/dev/../etc/x'" server --volume v,/dev/../etc/x,/srv/a "${ok[@]}"
    check "volume 'v' given twice" server --volume v,,/srv/a --volume v,,/srv/b "${ok[@]}"
    check "mount point '/srv/a' given twice" server --volume v,,/srv/a --volume w,,/srv/a/ "${ok[@]}"
    check "mount points '/srv/a' and '/srv/a/b' are nested" server --volume v,,/srv/a --volume w,,/srv/a/b "${ok[@]}"
    check "bad --export '/srv/a'" server --volume v,,/srv/a --export /srv/a
    check "bad --export '/srv/a,10.0.0.1,root_squash,x'" server --volume v,,/srv/a --export /srv/a,10.0.0.1,root_squash,x
    check "bad squash 'all_squash' for /srv/a" server --volume v,,/srv/a --export /srv/a,10.0.0.1,all_squash
    check "bad squash 'no_root_squash ' for /srv/a" server --volume v,,/srv/a --export '/srv/a,10.0.0.1,no_root_squash '
    check "bad export directory 'a'" server --volume v,,/srv/a --export a,10.0.0.1
    check "bad export directory '/srv/a/..'" server --volume v,,/srv/a --export /srv/a/..,10.0.0.1
    check "bad export clients '*' for /srv/a" server --volume v,,/srv/a --export '/srv/a,*'
    check "refusing to export /srv/a to 10.0.0.0/0: it includes unspecified addresses (0.0.0.0/8)" \
        server --volume v,,/srv/a --export /srv/a,10.0.0.0/0
    check "refusing to export /srv/a to 10.0.0.0/8: wider than /16 (pass --allow-wide-export to allow it)" \
        server --volume v,,/srv/a --export /srv/a,10.0.0.0/8
    check "refusing to export /srv/a to 169.254.169.254: it includes link-local addresses (169.254.0.0/16)" \
        server --volume v,,/srv/a --export /srv/a,169.254.169.254 --allow-wide-export
    check "refusing to export /srv/a to fd00::/32: wider than /48" server --volume v,,/srv/a --export /srv/a,fd00::/32
    check "bad export clients '10.0.0.0/33'" server --volume v,,/srv/a --export /srv/a,10.0.0.0/33
    check "bad export clients '10.0.0.256'" server --volume v,,/srv/a --export /srv/a,10.0.0.256
    check "bad export clients 'host.example'" server --volume v,,/srv/a --export /srv/a,host.example
    check "bad export clients 'fd00::/129'" server --volume v,,/srv/a --export /srv/a,fd00::/129
    check "export '/srv/a,10.0.0.1' given twice" server --volume v,,/srv/a \
        --export /srv/a,10.0.0.1 --export /srv/a/,10.0.0.1
    check "bad mount point of volume v '/etc/nfs' (in the system directory /etc)" server --volume v,,/etc/nfs "${ok[@]}"
    check "bad mount point of volume v '/var' (holds the system directory /var/lib)" server --volume v,,/var "${ok[@]}"
    check "bad mount point of volume v '/lib64/x' (in the system directory /lib64)" server --volume v,,/lib64/x "${ok[@]}"
    check "bad mount point of volume v '/srv/u/.ssh' (has a .ssh component)" server --volume v,,/srv/u/.ssh "${ok[@]}"
    check "bad mount point of volume v '/home/u' (in the system directory /home)" server --volume v,,/home/u "${ok[@]}"
    check "bad export directory '/srv/a/.ssh/k' (has a .ssh component)" server --volume v,,/srv/a --export /srv/a/.ssh/k,10.0.0.1
    check "bad export directory '//tmp/x' (in the system directory /tmp)" server --volume v,,/srv/a --export //tmp/x,10.0.0.1
    check "bad -o directory 'render'" server --volume v,,/srv/a "${ok[@]}" -o render
    check "option --volume needs a value" server --volume
    check "unknown option --force" server --force
    check "unexpected argument: extra" server extra
    check "--volume is for server and volumes modes only" client --volume v,,/srv/a
    check "-o is for server and volumes modes only" client -o /tmp/x
    check "--export is for server mode only" volumes --volume v,,/srv/a --export /srv/a,10.0.0.0/24
    check "--allow-wide-export is for server mode only" volumes --allow-wide-export
    check "missing --volume" volumes
    check "bad mount point of volume v '/srv/../etc'" volumes --volume v,,/srv/../etc
    check "--allow-wide-export is for server mode only" client --allow-wide-export
}

@test "is_ipv6: the forms of RFC 4291 without an embedded IPv4" {
    local good bad
    for good in ::1 fd00:: fd00::1 2001:db8:0:0:0:0:0:1 2001:DB8::a:b:c:d:e 1::8 ::; do
        is_ipv6 "$good" || { echo "refused $good"; false; }
    done
    for bad in 1 : ::: 1:2:3:4:5:6:7 1:2:3:4:5:6:7:8:9 1::2::3 :1:2:3:4:5:6:7 1:2:3:4:5:6:7: \
        12345::1 g::1 1:2:3:4:5:6:7::8 ::ffff:10.0.0.1; do
        ! is_ipv6 "$bad" || { echo "accepted $bad"; false; }
    done
}

@test "is_nfs_clients: an address or a network, as written" {
    is_nfs_clients 10.0.0.5
    is_nfs_clients 10.10.0.0/16
    is_nfs_clients 10.0.0.5/32
    is_nfs_clients fd00::/8
    is_nfs_clients 2001:db8::7
    # Written right; clients_refused refuses them.
    is_nfs_clients 0.0.0.0/0
    is_nfs_clients ::/0
    run -1 is_nfs_clients 10.0.0.0/33
    run -1 is_nfs_clients 10.0.0.0/
    run -1 is_nfs_clients 10.0.0.0/024
    run -1 is_nfs_clients '10.0.0.0/24(rw)'
}

@test "clients_refused: never loopback, link-local, multicast, broadcast or unspecified; wide only when allowed" {
    refused() {
        clients_refused "$1" || { echo "allowed $1"; return 1; }
        [ "$REPLY" = "$2" ] || { echo "$1: $REPLY"; return 1; }
    }
    allowed() {
        ! clients_refused "$1" || { echo "refused $1: $REPLY"; return 1; }
    }
    allowed 10.254.0.0/24
    allowed 10.254.0.7
    allowed 172.16.0.0/16
    allowed 2001:db8:1::/48
    allowed fd00::7
    refused 0.0.0.0 'it includes unspecified addresses (0.0.0.0/8)'
    refused 0.0.0.0/32 'it includes unspecified addresses (0.0.0.0/8)'
    refused 127.0.0.1 'it includes loopback addresses (127.0.0.0/8)'
    refused 169.254.169.254 'it includes link-local addresses (169.254.0.0/16)'
    refused 224.0.0.251 'it includes multicast addresses (224.0.0.0/4)'
    refused 239.1.0.0/16 'it includes multicast addresses (224.0.0.0/4)'
    refused 255.255.255.255 'it includes broadcast addresses (255.255.255.255/32)'
    refused :: 'it includes unspecified addresses (::/128)'
    refused ::/64 'it includes unspecified addresses (::/128)'
    refused ::1 'it includes loopback addresses (::1/128)'
    refused ::ffff:a00:1 'it includes IPv4-mapped addresses (::ffff:0:0/96)'
    refused fe80::1 'it includes link-local addresses (fe80::/10)'
    refused febf:1::/64 'it includes link-local addresses (fe80::/10)'
    refused ff02::1 'it includes multicast addresses (ff00::/8)'
    refused 10.0.0.0/15 'wider than /16 (pass --allow-wide-export to allow it)'
    refused 2001:db8::/47 'wider than /48 (pass --allow-wide-export to allow it)'
    ALLOW_WIDE_EXPORT=true
    allowed 10.0.0.0/8
    allowed 2001:db8::/32
    # A wide network that takes in one of the refused ranges stays refused.
    refused 0.0.0.0/0 'it includes unspecified addresses (0.0.0.0/8)'
    refused 96.0.0.0/3 'it includes loopback addresses (127.0.0.0/8)'
    refused 128.0.0.0/1 'it includes link-local addresses (169.254.0.0/16)'
    refused ::/0 'it includes unspecified addresses (::/128)'
    refused fe00::/7 'it includes link-local addresses (fe80::/10)'
}

@test "address_bits: IPv4 and IPv6 as bits, :: filled" {
    address_bits 10.1.255.0
    [ "$REPLY" = 00001010000000011111111100000000 ]
    address_bits 2001:db8::ff
    [ "$REPLY" = 00100000000000010000110110111000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000011111111 ]
    address_bits ::
    [ "${#REPLY}" -eq 128 ]
    [ "${REPLY//0/}" = '' ]
}

@test "system_dir_of: in or holding a system directory, lib* at the top, .ssh anywhere" {
    local path
    for path in /srv/nfs /volume /var/tmp/x /srv/tmp /usrx /srv/u/.sshx /mnt/lib /data/pv /var/spool/nfs /homes; do
        ! system_dir_of "$path" || { echo "refused $path: $REPLY"; false; }
    done
    system_dir_of /usr/local/data && [ "$REPLY" = 'in the system directory /usr' ]
    system_dir_of /var && [ "$REPLY" = 'holds the system directory /var/lib' ]
    system_dir_of /var/lib/nfs && [ "$REPLY" = 'in the system directory /var/lib' ]
    system_dir_of /libx32 && [ "$REPLY" = 'in the system directory /libx32' ]
    system_dir_of /root && [ "$REPLY" = 'in the system directory /root' ]
    system_dir_of /srv/.ssh && [ "$REPLY" = 'has a .ssh component' ]
    system_dir_of /var/spool && [ "$REPLY" = 'holds the system directory /var/spool/cron' ]
    for path in /etc /bin /sbin /boot /proc /sys /dev /run /tmp /lib /home /opt /var/log /var/spool/cron /snap; do
        system_dir_of "$path/x" || { echo "allowed $path/x"; false; }
    done
}

@test "an export outside every volume stops the run before any step" {
    args server --volume v,,/srv/a --export /srv/a/pv,10.0.0.1 --export /srv/ab,10.0.0.1
    CURRENT_STEP=exports
    run --separate-stderr -1 check_exports_on_volumes
    [ "$stderr" = 'setup_storage.sh: exports: /srv/ab is on none of the volume mount points (/srv/a)' ]
}

@test "the script: -h, and exit 2 with the message for bad arguments" {
    run -0 bash "$SCRIPT" -h
    [[ $output == *'Usage: setup_storage.sh server --volume'* ]]
    [[ $output == *'-o DIR     for tests only'* ]]
    run --separate-stderr -2 bash "$SCRIPT" server --volume v,,/srv/a
    [ "$stderr" = 'setup_storage.sh: missing --export DIR,CLIENTS[,SQUASH] (see -h)' ]
    run -2 bash "$SCRIPT"
}

@test "-s: proxy URLs come from the secrets input into apt's environment" {
    args client -s -
    [ "$SECRETS_SOURCE" = - ]
    unset http_proxy https_proxy
    read_secret_lines - store_secret <<<$'http_proxy=http://u:pw@proxy:3128\nhttps_proxy=http://proxy:3129'
    [ "$http_proxy" = http://u:pw@proxy:3128 ]
    [ "$https_proxy" = http://proxy:3129 ]
    # Exported: apt-get, a child process, sees them.
    [ "$(bash -c 'echo $http_proxy')" = http://u:pw@proxy:3128 ]
    run --separate-stderr read_secret_lines - store_secret <<<'http_proxy=ftp://x'
    [ "$status" -eq 2 ]
    [[ $stderr == *"secret 'http_proxy' is not an http(s) URL"* ]]
    [[ $stderr != *ftp://x* ]]
    run --separate-stderr read_secret_lines - store_secret <<<'token=abc'
    [ "$status" -eq 2 ]
    [[ $stderr == *"unknown key in secrets input: 'token'"* ]]
}
