#!/usr/bin/env bats
# install_k8s_cluster.sh's upgrade modes (k8s_mgmt_upgrade.sh), each
# function on its own, with fakes for apt, kubeadm and the node's tools.

load helpers

setup() {
    export K8S_MGMT_STATE_DIR=$BATS_TEST_TMPDIR/state
    export K8S_MGMT_KUBERNETES_DIR=$BATS_TEST_TMPDIR/kubernetes
    mkdir -p "$K8S_MGMT_KUBERNETES_DIR/manifests" "$BATS_TEST_TMPDIR/bin"
    load_script install_k8s_cluster.sh
    # What changes the node is recorded, not run.
    run() { printf '%s\n' "$*" >>"$BATS_TEST_TMPDIR/ran"; }
}

manifest() {
    printf 'apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: %s\n    image: registry.k8s.io/%s:%s\n' \
        "$1" "$1" "$2" >"$K8S_MGMT_KUBERNETES_DIR/manifests/$1.yaml"
}

@test "the upgrade modes and what each needs" {
    parse_args upgrade-check -k 1.36
    validate_args
    [ "$MODE" = upgrade-check ]
    parse_args upgrade-apply -k 1.36 -V 1.36.1 -a 10.0.0.11 -H master-1
    validate_args
    for args in "upgrade-apply -k 1.36 -a 10.0.0.11 -H m" "upgrade-node -k 1.36 -V 1.36.1" \
        "upgrade-apply -k 1.36 -V 1.36.1 -H m" "upgrade-node -k 1.36 -V 1.36.1 -H w -p" \
        "upgrade-node -k 1.36 -V 1.35.1 -H w"; do
        K8S_VERSION='' NODE_NAME='' ADVERTISE_ADDRESS='' PREPARED=false
        # shellcheck disable=SC2086 # the words of one case
        bats_run --separate-stderr eval "parse_args $args && validate_args"
        [ "$status" -eq 2 ]
    done
    K8S_VERSION='' NODE_NAME='' ADVERTISE_ADDRESS=''
    bats_run --separate-stderr eval 'parse_args upgrade-node -k 1.36 -V 1.36.1 && validate_args'
    [[ $stderr == *"upgrade-node needs -H"* ]]
    K8S_VERSION='' NODE_NAME='' ADVERTISE_ADDRESS=''
    bats_run --separate-stderr eval 'parse_args upgrade-apply -k 1.36 -H m -a 10.0.0.1 && validate_args'
    [[ $stderr == *"upgrade-apply needs -V VERSION"* ]]
}

@test "control_plane_version: the oldest static pod's tag; none on a worker" {
    [ -z "$(control_plane_version)" ]
    manifest kube-apiserver v1.36.1
    manifest kube-controller-manager v1.35.2
    manifest kube-scheduler v1.36.1
    [ "$(control_plane_version)" = v1.35.2 ]
    # A manifest without a tag: not a version anyone can trust.
    printf 'spec: {}\n' >"$K8S_MGMT_KUBERNETES_DIR/manifests/kube-scheduler.yaml"
    [ -z "$(control_plane_version)" ]
}

fake_apt() {
    # apt-get update succeeds; apt-cache madison lists kubeadm's versions.
    printf '#!/bin/sh\necho "$*" >>%s/apt-args\nexit %s\n' "$BATS_TEST_TMPDIR" "${1:-0}" \
        >"$BATS_TEST_TMPDIR/bin/apt-get"
    printf '#!/bin/sh\nprintf "   kubeadm | 1.36.1-1.1 | http://repo/v1.36/deb  Packages\\n   kubeadm | 1.36.0-1.1 | http://repo/v1.36/deb  Packages\\n"\n' \
        >"$BATS_TEST_TMPDIR/bin/apt-cache"
    chmod +x "$BATS_TEST_TMPDIR/bin/apt-get" "$BATS_TEST_TMPDIR/bin/apt-cache"
    PATH=$BATS_TEST_TMPDIR/bin:$PATH
    printf 'binary key\n' >"$BATS_TEST_TMPDIR/key.gpg"
}

@test "offered_versions: a throwaway apt configuration, the node's left alone" {
    fake_apt
    parse_args upgrade-check -k 1.36 -r http://repo/ -K "$BATS_TEST_TMPDIR/key.gpg"
    validate_args
    offered_versions
    [ "${OFFERED_VERSIONS[*]}" = "1.36.0 1.36.1" ]
    [ -z "$UPGRADE_APT_ERROR" ]
    # Its own sources, lists and cache; not the node's.
    grep -q 'Dir::Etc::SourceList=/tmp/k8s-mgmt-upgrade-apt\.' "$BATS_TEST_TMPDIR/apt-args"
    grep -q 'Dir::State::Lists=/tmp/k8s-mgmt-upgrade-apt\.' "$BATS_TEST_TMPDIR/apt-args"
    [ "${#TEMP_DIRS[@]}" -eq 0 ] || cleanup
}

@test "upgrade-check: one JSON object, and an unreadable repository said in it" {
    fake_apt 100
    parse_args upgrade-check -k 1.36 -r http://repo/ -K "$BATS_TEST_TMPDIR/key.gpg"
    validate_args
    installed_version() { [ "$1" = kubectl ] || echo v1.35.2; }
    manifest kube-apiserver v1.35.2
    bats_run --separate-stderr upgrade_check
    [ "$status" -eq 0 ]
    python3 -c '
import json, sys
found = json.loads(sys.argv[1])
assert found["kubeadm"] == found["kubelet"] == "v1.35.2", found
assert found["kubectl"] == "" and found["control_plane"] == "v1.35.2", found
assert found["offered"] == [] and found["apt_error"].startswith(
    "cannot read the Kubernetes package repository http://repo/v1.36/deb/"), found
' "$output"
}

@test "upgrade_kubeadm: apply on the first master unless done; node elsewhere" {
    K8S_VERSION=1.36.1
    MODE=upgrade-apply
    manifest kube-apiserver v1.35.2
    upgrade_kubeadm
    [ "$UPGRADE_KUBEADM" = applied ]
    [ "$(cat "$BATS_TEST_TMPDIR/ran")" = "kubeadm upgrade apply v1.36.1 --yes" ]
    # Applied before (a re-run): the manifests and kubeadm-config say so.
    rm "$BATS_TEST_TMPDIR/ran"
    manifest kube-apiserver v1.36.1
    kubeadm_config_at_target() { return 0; }
    upgrade_kubeadm 2>/dev/null
    [ "$UPGRADE_KUBEADM" = already ]
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    # Manifests at target but kubeadm-config not: apply again.
    kubeadm_config_at_target() { return 1; }
    upgrade_kubeadm
    [ "$UPGRADE_KUBEADM" = applied ]
    # Another master at the target: nothing; one behind: upgrade node.
    rm "$BATS_TEST_TMPDIR/ran"
    MODE=upgrade-node
    upgrade_kubeadm 2>/dev/null
    [ "$UPGRADE_KUBEADM" = already ]
    manifest kube-apiserver v1.35.2
    upgrade_kubeadm
    [ "$(cat "$BATS_TEST_TMPDIR/ran")" = "kubeadm upgrade node" ]
}

@test "upgrade_packages: only the tools not at the target, held after" {
    K8S_VERSION=1.36.1 K8S_MINOR=1.36 WAIT_SECONDS=5
    installed_version() { if [ "$1" = kubelet ]; then echo v1.36.1; else echo v1.35.2; fi; }
    pick_version() { echo 1.36.1-1.1; }
    hold_k8s_packages() { echo held >>"$BATS_TEST_TMPDIR/ran"; }
    apt_turn() { shift; "$@"; }
    upgrade_packages kubelet kubectl
    [ "$UPGRADE_PACKAGES" = installed ]
    grep -q 'install --allow-change-held-packages kubectl=1.36.1-1.1$' "$BATS_TEST_TMPDIR/ran"
    ! grep -q 'kubelet=' "$BATS_TEST_TMPDIR/ran"
    [ "$(tail -n 1 "$BATS_TEST_TMPDIR/ran")" = held ]
    installed_version() { echo v1.36.1; }
    rm "$BATS_TEST_TMPDIR/ran"
    upgrade_packages kubelet kubectl 2>/dev/null
    [ "$UPGRADE_PACKAGES" = kept ]
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "certs_renew: renew all, each running static pod restarted, then the tables" {
    touch "$K8S_MGMT_KUBERNETES_DIR/admin.conf"
    WAIT_SECONDS=5
    # Containers as the runtime lists them: a stop makes the kubelet
    # start another (a new id).
    printf 'etcd=e1\nkube-apiserver=a1\n' >"$BATS_TEST_TMPDIR/containers"
    crictl() {
        local all="$*" name
        case " $all " in
            *" ps "*)
                name=${all##*--name }
                name=${name%% *}
                sed -n "s/^$name=//p" "$BATS_TEST_TMPDIR/containers" ;;
        esac
    }
    run() {
        printf '%s\n' "$*" >>"$BATS_TEST_TMPDIR/ran"
        if [[ $1 == crictl && " $* " == *" stop "* ]]; then
            sed -i "s/=${*: -1}\$/=${*: -1}x/" "$BATS_TEST_TMPDIR/containers"
        fi
    }
    api_answers() { return 0; }
    install_user_kubeconfig() { :; }
    certs_check() { echo TABLES; }
    bats_run --separate-stderr certs_renew
    [ "$status" -eq 0 ]
    [ "$output" = TABLES ]
    [ "$(sed -n 1p "$BATS_TEST_TMPDIR/ran")" = "kubeadm certs renew all" ]
    grep -q "stop e1$" "$BATS_TEST_TMPDIR/ran"
    grep -q "stop a1$" "$BATS_TEST_TMPDIR/ran"
    [[ $stderr == *"skipped: no running kube-scheduler container to restart"* ]]
    [ "$(cat "$BATS_TEST_TMPDIR/containers")" = "etcd=e1x
kube-apiserver=a1x" ]
}
