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
        --export /srv/nfs/pv1,10.10.0.0/24 --export=/srv/nfs/pv1,192.168.1.7 \
        --export /srv/two,fd00::/64 -o /tmp/render
    [ "$MODE" = server ]
    [ "${VOLUME_IDS[*]}" = 'vol-1 vol-2' ]
    [ "${VOLUME_DEVICES[0]}" = '' ]
    [ "${VOLUME_DEVICES[1]}" = /dev/vdc ]
    [ "${VOLUME_MOUNTS[*]}" = '/srv/nfs /srv/two' ]
    [ "${EXPORT_DIRS[*]}" = '/srv/nfs/pv1 /srv/nfs/pv1 /srv/two' ]
    [ "${EXPORT_CLIENTS[*]}" = '10.10.0.0/24 192.168.1.7 fd00::/64' ]
    # Each directory once, in the order given.
    [ "${EXPORT_DIR_LIST[*]}" = '/srv/nfs/pv1 /srv/two' ]
    [ "$ROOT_DIR" = /tmp/render ]
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
    check "bad export directory 'a'" server --volume v,,/srv/a --export a,10.0.0.1
    check "bad export directory '/srv/a/..'" server --volume v,,/srv/a --export /srv/a/..,10.0.0.1
    check "bad export clients '*' for /srv/a" server --volume v,,/srv/a --export '/srv/a,*'
    check "bad export clients '10.0.0.0/0'" server --volume v,,/srv/a --export /srv/a,10.0.0.0/0
    check "bad export clients '10.0.0.0/33'" server --volume v,,/srv/a --export /srv/a,10.0.0.0/33
    check "bad export clients '10.0.0.256'" server --volume v,,/srv/a --export /srv/a,10.0.0.256
    check "bad export clients 'host.example'" server --volume v,,/srv/a --export /srv/a,host.example
    check "bad export clients 'fd00::/129'" server --volume v,,/srv/a --export /srv/a,fd00::/129
    check "export '/srv/a,10.0.0.1' given twice" server --volume v,,/srv/a \
        --export /srv/a,10.0.0.1 --export /srv/a/,10.0.0.1
    check "bad -o directory 'render'" server --volume v,,/srv/a "${ok[@]}" -o render
    check "option --volume needs a value" server --volume
    check "unknown option --force" server --force
    check "unexpected argument: extra" server extra
    check "--volume is for server mode only" client --volume v,,/srv/a
    check "-o is for server mode only" client -o /tmp/x
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

@test "is_nfs_clients: an address or a network, never all addresses" {
    is_nfs_clients 10.0.0.5
    is_nfs_clients 10.10.0.0/16
    is_nfs_clients 10.0.0.5/32
    is_nfs_clients fd00::/8
    is_nfs_clients 2001:db8::7
    run -1 is_nfs_clients 0.0.0.0/0
    run -1 is_nfs_clients ::/0
    run -1 is_nfs_clients 10.0.0.0/
    run -1 is_nfs_clients 10.0.0.0/024
    run -1 is_nfs_clients '10.0.0.0/24(rw)'
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
    [ "$stderr" = 'setup_storage.sh: missing --export DIR,CLIENTS (see -h)' ]
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
