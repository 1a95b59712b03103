#!/usr/bin/env bats
# Functions of configure_external_lb.sh, each on its own, and whole runs
# under -o (files under a test root, no packages, no services).

load helpers

SCRIPT_NAME=configure_external_lb.sh

setup() {
    load_script "$SCRIPT_NAME"
    ROOT=$BATS_TEST_TMPDIR/root
    CFG=$ROOT/etc/haproxy/haproxy.cfg
}

# args: parse and validate like main does.
args() {
    parse_args "$@"
    validate_args
}

# lb ARGS...: the script run whole under -o ROOT.
lb() {
    bash "$SCRIPTS_DIR/$SCRIPT_NAME" -o "$ROOT" "$@"
}

# server_lines: "NAME ADDRESS" of every server line of the rendered file.
server_lines() {
    awk '$1 == "server" { print $2, $3 }' "$CFG"
}

@test "parse_args and validate_args: values, defaults, both option forms" {
    args --api-port 8443 --masters m1=10.0.0.11,m2=10.0.0.12 --workers=w1=10.0.0.21
    [ "$API_PORT" = 8443 ]
    [ "$APISERVER_PORT" = 6443 ]
    [ "$NODEPORT_FROM" = 30000 ]
    [ "$NODEPORT_TO" = 32767 ]
    [ "${MASTER_NAMES[*]}" = 'm1 m2' ]
    [ "${MASTER_IPS[*]}" = '10.0.0.11 10.0.0.12' ]
    [ "${WORKER_NAMES[*]}" = w1 ]
    [ "${WORKER_IPS[*]}" = 10.0.0.21 ]
    [ "$DRY_RUN" = false ]
    [ -z "$ROOT_DIR" ]
}

@test "validate_args: every bad value is a usage error that names it" {
    local -a ok=(--masters m1=10.0.0.11)
    check() {
        local want=$1
        shift
        run --separate-stderr args "$@"
        [ "$status" -eq 2 ] || { echo "status $status for $*"; return 1; }
        [[ $stderr == *"$want"* ]] || { echo "got: $stderr"; return 1; }
    }
    check "missing --api-port" "${ok[@]}"
    check "bad --api-port '0'" --api-port 0 "${ok[@]}"
    check "bad --api-port '65536'" --api-port 65536 "${ok[@]}"
    check "bad --api-port 'x'" --api-port x "${ok[@]}"
    check "bad --apiserver-port '70000'" --api-port 8443 --apiserver-port 70000 "${ok[@]}"
    check "--api-port 30080 lies in --nodeports 30000-32767" --api-port 30080 "${ok[@]}"
    check "--api-port 9001 lies in --nodeports 9000-9100" --api-port 9001 --nodeports 9000-9100 "${ok[@]}"
    check "bad --nodeports '32767-30000'" --api-port 8443 --nodeports 32767-30000 "${ok[@]}"
    check "bad --nodeports '30000'" --api-port 8443 --nodeports 30000 "${ok[@]}"
    check "bad --nodeports '0-10'" --api-port 8443 --nodeports 0-10 "${ok[@]}"
    check "missing --masters" --api-port 8443
    check "no members in --masters" --api-port 8443 --masters ,
    check "bad --masters entry '10.0.0.11' (want NAME=IP)" --api-port 8443 --masters 10.0.0.11
    check "bad --masters address '10.0.0.256' for m1" --api-port 8443 --masters m1=10.0.0.256
    check "bad --masters address 'host.example' for m1" --api-port 8443 --masters m1=host.example
    check "bad --workers name 'w 1'" --api-port 8443 "${ok[@]}" --workers 'w 1=10.0.0.21'
    check "bad --workers name '-w1'" --api-port 8443 "${ok[@]}" --workers '-w1=10.0.0.21'
    check "bad --workers name ''" --api-port 8443 "${ok[@]}" --workers '=10.0.0.21'
    check "--workers name 'w1' given twice" --api-port 8443 "${ok[@]}" --workers w1=10.0.0.21,w1=10.0.0.22
    check "--masters address '10.0.0.11' given twice (m1 and m2)" --api-port 8443 --masters m1=10.0.0.11,m2=10.0.0.11
    check "name 'm1' is master 10.0.0.11 and worker 10.0.0.21" --api-port 8443 "${ok[@]}" --workers m1=10.0.0.21
    check "option --workers needs a value" --api-port 8443 "${ok[@]}" --workers
    check "unknown option --worker" --api-port 8443 "${ok[@]}" --worker w1=10.0.0.21
    check "unknown option -x" -x
    check "unexpected argument: extra" extra
}

@test "a node that is master and worker with one address is fine" {
    args --api-port 8443 --masters n1=10.0.0.11 --workers n1=10.0.0.11,w2=10.0.0.22
    [ "${WORKER_NAMES[*]}" = 'n1 w2' ]
}

@test "parse_members: name order, empty entries skipped" {
    local -a names ips
    parse_members --workers 'w2=10.0.0.22,,w10=10.0.0.30,w1=10.0.0.21' names ips
    [ "${names[*]}" = 'w1 w10 w2' ]
    [ "${ips[*]}" = '10.0.0.21 10.0.0.30 10.0.0.22' ]
    parse_members --workers '' names ips
    [ "${#names[@]}" -eq 0 ]
}

@test "render_haproxy: API frontend and backend, NodePort frontend with kubelet checks" {
    args --api-port 8443 --apiserver-port 6444 --nodeports 31000-31999 \
        --masters m1=10.0.0.11,m2=10.0.0.12 --workers w1=10.0.0.21
    run -0 render_haproxy
    [ "${lines[0]}" = "$MANAGED_MARK" ]
    [[ $output == *$'frontend k8s-api\n    bind *:8443\n'* ]]
    [[ $output == *'option httpchk GET /readyz'* ]]
    [[ $output == *'default-server check check-ssl verify none inter 1s fall 2 rise 2 on-marked-down shutdown-sessions'* ]]
    [[ $output == *$'    server m1 10.0.0.11:6444\n    server m2 10.0.0.12:6444\n'* ]]
    [[ $output == *$'frontend k8s-nodeports\n    bind *:31000-31999\n'* ]]
    [[ $output == *'default-server check port 10250 '* ]]
    # No port on a worker: the client's port is kept.
    [[ $output == *$'    server w1 10.0.0.21\n'* || $output == *'    server w1 10.0.0.21' ]]
}

@test "render_haproxy: no workers, no NodePort frontend at all" {
    args --api-port 8443 --masters m1=10.0.0.11
    run -0 render_haproxy
    [[ $output != *k8s-nodeports* ]]
    [[ $output == *'# No workers: no NodePort frontend.'* ]]
}

@test "a run under -o writes the file, a second is unchanged, with the same bytes and mtime" {
    run -0 lb --api-port 8443 --masters m1=10.0.0.11 --workers w1=10.0.0.21
    [ "$output" = 'api: port 8443 to 1 master(s) on 6443
nodeports: 30000-32767 to 1 worker(s)
haproxy: start' ]
    [ "$(mode_of "$CFG")" = 644 ]
    local before
    before=$(mtime_of "$CFG")
    run -0 lb --api-port 8443 --masters m1=10.0.0.11 --workers w1=10.0.0.21
    [ "${lines[2]}" = 'haproxy: unchanged' ]
    [ "$(mtime_of "$CFG")" = "$before" ]
    # The same members in another order: the same file.
    run -0 lb --api-port 8443 --masters m1=10.0.0.11 --workers w2=10.0.0.22,w1=10.0.0.21
    [ "${lines[2]}" = 'haproxy: reload' ]
    run -0 lb --api-port 8443 --masters m1=10.0.0.11 --workers w1=10.0.0.21,w2=10.0.0.22
    [ "${lines[2]}" = 'haproxy: unchanged' ]
}

@test "removing worker1 leaves worker12 and worker10 alone, and the reverse" {
    run -0 lb --api-port 8443 --masters master1=10.0.0.1,master12=10.0.0.12 \
        --workers worker1=10.0.0.21,worker12=10.0.0.112,worker10=10.0.0.210
    run -0 lb --api-port 8443 --masters master1=10.0.0.1,master12=10.0.0.12 \
        --workers worker12=10.0.0.112,worker10=10.0.0.210
    [ "${lines[2]}" = 'haproxy: reload' ]
    [ "$(server_lines)" = 'master1 10.0.0.1:6443
master12 10.0.0.12:6443
worker10 10.0.0.210
worker12 10.0.0.112' ]
    run -0 lb --api-port 8443 --masters master1=10.0.0.1 --workers worker1=10.0.0.21
    [ "$(server_lines)" = 'master1 10.0.0.1:6443
worker1 10.0.0.21' ]
    # The last worker gone: the NodePort frontend goes with it.
    run -0 lb --api-port 8443 --masters master1=10.0.0.1
    [ "${lines[1]}" = 'nodeports: none (no workers, no NodePort frontend)' ]
    ! grep -q k8s-nodeports "$CFG"
}

@test "-n prints the diff and what it would do, and changes nothing" {
    run -0 lb -n --api-port 8443 --masters m1=10.0.0.11
    [ "${lines[-1]}" = 'haproxy: would start' ]
    [[ $output == *"+$MANAGED_MARK"* ]]
    [ ! -e "$ROOT" ]
    run -0 lb --api-port 8443 --masters m1=10.0.0.11 --workers w1=10.0.0.21,w12=10.0.0.22
    local before
    before=$(cat "$CFG")
    run -0 lb -n --api-port 8443 --masters m1=10.0.0.11 --workers w12=10.0.0.22
    [ "${lines[-1]}" = 'haproxy: would reload' ]
    [[ $output == *$'\n-    server w1 10.0.0.21\n'* ]]
    [[ $output == *$'\n     server w12 10.0.0.22'* ]]
    [ "$(cat "$CFG")" = "$before" ]
    run -0 lb -n --api-port 8443 --masters m1=10.0.0.11 --workers w1=10.0.0.21,w12=10.0.0.22
    [ "${lines[-1]}" = 'haproxy: unchanged' ]
}

@test "a config k8s-mgmt did not write is refused, untouched" {
    mkdir -p "$(dirname "$CFG")"
    printf 'global\n    maxconn 10\n# the operator'"'"'s own\n' >"$CFG"
    local before
    before=$(cat "$CFG")
    run -1 lb --api-port 8443 --masters m1=10.0.0.11
    [[ $output == *"haproxy: $CFG exists and is not managed by k8s-mgmt"* ]]
    [ "$(cat "$CFG")" = "$before" ]
    run -1 lb -n --api-port 8443 --masters m1=10.0.0.11
    [[ $output == *"not managed by k8s-mgmt"* ]]
    # Nor is a file whose mark is not the first line.
    { echo '# an operator note'; echo "$MANAGED_MARK"; } >"$CFG"
    run -1 lb --api-port 8443 --masters m1=10.0.0.11
}

@test "the distribution's untouched haproxy.cfg may be replaced, an edited one not" {
    dpkg-query() { printf ' /etc/haproxy/haproxy.cfg %s\n' "$PACKAGED_MD5"; }
    mkdir -p "$(dirname "$CFG")"
    printf 'global\n    log /dev/log local0\n' >"$CFG"
    PACKAGED_MD5=$(md5sum <"$CFG" | awk '{ print $1 }')
    is_packaged_default "$CFG"
    echo '# edited' >>"$CFG"
    run ! is_packaged_default "$CFG"
    PACKAGED_MD5=""
    run ! is_packaged_default "$CFG"
}

@test "bad input writes nothing" {
    run -2 lb --api-port 8443 --masters m1=10.0.0.11 --workers w1=10.0.0.300
    [ ! -e "$ROOT" ]
}

@test "outside -o: a running haproxy is reloaded, a stopped one started" {
    systemctl_do() {
        echo "$*" >>"$BATS_TEST_TMPDIR/called"
        [ "$1 $2" != "is-active --quiet" ] || [ -e "$BATS_TEST_TMPDIR/active" ]
    }
    [ "$(apply_haproxy true)" = 'haproxy: reload' ]
    [ "$(apply_haproxy false)" = 'haproxy: start' ]
    [ "$(cat "$BATS_TEST_TMPDIR/called")" = 'show --property=MainPID --value haproxy
reload haproxy
enable haproxy
restart haproxy' ]
    run ! haproxy_running /nowhere
    touch "$BATS_TEST_TMPDIR/active"
    haproxy_running /nowhere
}

@test "outside -o: an unchanged config of a stopped haproxy starts it" {
    HAPROXY_CFG=$BATS_TEST_TMPDIR/haproxy.cfg
    have() { [ "$1" != haproxy ]; }  # no config check here
    systemctl_do() {
        echo "$*" >>"$BATS_TEST_TMPDIR/called"
        [ "$1 $2" != "is-active --quiet" ]
    }
    args --api-port 8443 --masters m1=10.0.0.11
    render_haproxy >"$HAPROXY_CFG"
    [ "$(configure_haproxy 2>/dev/null)" = 'haproxy: start' ]
    [ "$(tail -n 1 "$BATS_TEST_TMPDIR/called")" = 'restart haproxy' ]
    cleanup
}

@test "a config haproxy -c rejects is not installed" {
    haproxy() { echo "[ALERT] bad config" >&2; return 1; }
    args --api-port 8443 --masters m1=10.0.0.11
    ROOT_DIR=$ROOT
    run -1 configure_haproxy
    [[ $output == *'haproxy -c rejected the rendered config'* ]]
    [ ! -e "$CFG" ]
    cleanup
}
