#!/usr/bin/env bats
# setup_storage.sh: packages and the NFS service, with dpkg-query,
# apt-get, systemctl and exportfs as stand-ins on PATH that log their calls.

load helpers

setup() {
    load_script setup_storage.sh
    DIR=$BATS_TEST_TMPDIR
    CALLS=$DIR/calls.log
    : >"$CALLS"
    mkdir -p "$DIR/bin" "$DIR/state"
    stand_in dpkg-query '
        pkg=${*: -1}
        if [[ -e $STATE/installed-$pkg ]]; then printf "install ok installed"; else printf "unknown ok not-installed"; fi'
    stand_in apt-get '
        [[ -e $STATE/apt-fails ]] && exit 100
        [[ $* == *" install "* && ! -e $STATE/install-lies ]] && touch "$STATE/installed-${*: -1}"
        exit 0'
    stand_in systemctl '
        case $1 in
            is-active) [[ -e $STATE/active ]] ;;
            restart) [[ -e $STATE/restart-fails ]] || touch "$STATE/active" ;;
            enable) [[ ! -e $STATE/enable-fails ]] ;;
        esac'
    stand_in exportfs '[[ ! -e $STATE/exportfs-fails ]]'
    export STATE=$DIR/state CALLS
    # apt_get must set it itself.
    unset DEBIAN_FRONTEND
    export PATH=$DIR/bin:$PATH
}

# stand_in NAME BODY: an executable NAME that logs "NAME ARGS" (with
# DEBIAN_FRONTEND for apt-get), then runs BODY.
stand_in() {
    printf '#!/bin/bash\necho "${DEBIAN_FRONTEND:+DEBIAN_FRONTEND=$DEBIAN_FRONTEND }%s $*" >>"$CALLS"\n%s\n' \
        "$1" "$2" >"$DIR/bin/$1"
    chmod +x "$DIR/bin/$1"
}

@test "ensure_package: an installed package is left alone" {
    touch "$STATE/installed-nfs-common"
    ensure_package nfs-common
    [ "$REPLY" = 'already installed' ]
    [ "$(cat "$CALLS")" = 'dpkg-query -W -f=${Status} nfs-common' ]
}

@test "ensure_package: apt-get update, then install, non-interactive, old config kept" {
    ensure_package nfs-kernel-server
    [ "$REPLY" = installed ]
    grep -q '^DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Options::=--force-confold .* update$' "$CALLS"
    grep -q '^DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Options::=--force-confold .* install nfs-kernel-server$' "$CALLS"
    [ "$(grep -n 'apt-get' "$CALLS" | cut -d: -f1 | tr '\n' ' ')" = '2 3 ' ]
}

@test "ensure_package: apt-get failing, or not installing, is a failure" {
    CURRENT_STEP=packages
    touch "$STATE/apt-fails"
    run --separate-stderr -1 ensure_package nfs-common
    [ "$stderr" = 'setup_storage.sh: packages: apt-get update failed' ]
    rm "$STATE/apt-fails"
    touch "$STATE/install-lies"
    run --separate-stderr -1 ensure_package nfs-common
    [ "$stderr" = 'setup_storage.sh: packages: nfs-common is still not installed after apt-get install' ]
}

@test "start_nfs_server: running: enabled, exports re-read, no restart" {
    touch "$STATE/active"
    run -0 start_nfs_server
    [ "$output" = 'nfs server: running, exports re-read' ]
    [ "$(cat "$CALLS")" = 'systemctl enable nfs-kernel-server
systemctl is-active --quiet nfs-kernel-server
exportfs -ra
systemctl is-active --quiet nfs-kernel-server' ]
}

@test "start_nfs_server: stopped: restarted; enable failing is only a warning" {
    touch "$STATE/enable-fails"
    run --separate-stderr -0 start_nfs_server
    [ "$output" = 'nfs server: started' ]
    [[ $stderr == *'warning: systemctl enable nfs-kernel-server failed'* ]]
    grep -qx 'systemctl restart nfs-kernel-server' "$CALLS"
    run -1 grep -q exportfs "$CALLS"
}

@test "start_nfs_server: not active at the end, or exportfs failing: a failure" {
    CURRENT_STEP=service
    touch "$STATE/restart-fails"
    run --separate-stderr -1 start_nfs_server
    [ "$stderr" = 'setup_storage.sh: service: nfs-kernel-server is not active (after: started)' ]
    touch "$STATE/active" "$STATE/exportfs-fails"
    run --separate-stderr -1 start_nfs_server
    [ "$stderr" = 'setup_storage.sh: service: exportfs -ra failed' ]
}

@test "the script in client mode: nfs-common, installed once" {
    run --separate-stderr -0 bash "$SCRIPTS_DIR/setup_storage.sh" client
    [ "$output" = 'nfs client: installed' ]
    [[ $stderr == *'setup_storage.sh: ==> packages'* ]]
    grep -q 'install nfs-common$' "$CALLS"
    : >"$CALLS"
    run --separate-stderr -0 bash "$SCRIPTS_DIR/setup_storage.sh" client
    [ "$output" = 'nfs client: already installed' ]
    run -1 grep -q apt-get "$CALLS"
    touch "$STATE/apt-fails"
    rm "$STATE/installed-nfs-common"
    run --separate-stderr -1 bash "$SCRIPTS_DIR/setup_storage.sh" client
    [ "$stderr" = 'setup_storage.sh: ==> packages
setup_storage.sh: packages: apt-get update failed' ]
}
