#!/usr/bin/env bats
# Functions of configure_lb.sh, each on its own.

load helpers

setup() {
    load_script configure_lb.sh
}

# args: parse and validate like main does.
args() {
    parse_args "$@"
    validate_args
}

@test "parse_args and validate_args: values and defaults" {
    args -v 10.0.0.100/24 -b m1=10.0.0.11,10.0.0.12 -P 150 -s - -l 10.0.0.11
    [ "$VIP" = 10.0.0.100/24 ]
    [ "$PRIORITY" = 150 ]
    [ "$LOCAL_IP" = 10.0.0.11 ]
    [ "$SECRETS_SOURCE" = - ]
    # The router id defaults to the VIP's last octet.
    [ "$ROUTER_ID" = 100 ]
    [ "$FRONTEND_PORT" = 16443 ]
    [ "$APISERVER_PORT" = 6443 ]
    [ "${SERVER_NAMES[*]}" = 'm1 master-10-0-0-12' ]
    [ "${SERVER_IPS[*]}" = '10.0.0.11 10.0.0.12' ]
}

@test "validate_args: every bad value is a usage error that names it" {
    local -a ok=(-b 10.0.0.11 -s -)
    check() {
        local want=$1
        shift
        run --separate-stderr args "$@"
        [ "$status" -eq 2 ] || { echo "status $status for $*"; return 1; }
        [[ $stderr == *"$want"* ]] || { echo "got: $stderr"; return 1; }
    }
    check "missing -v" "${ok[@]}"
    check "bad VIP '10.0.0.100'" -v 10.0.0.100 "${ok[@]}"
    check "bad VIP '10.0.0.256/24'" -v 10.0.0.256/24 "${ok[@]}"
    check "bad VIP '10.0.0.100/33'" -v 10.0.0.100/33 "${ok[@]}"
    check "bad VRRP router id '0'" -v 10.0.0.0/24 "${ok[@]}"
    check "bad VRRP router id '256'" -v 10.0.0.100/24 -r 256 "${ok[@]}"
    check "missing -b" -v 10.0.0.100/24 -s -
    check "bad priority '255'" -v 10.0.0.100/24 -P 255 "${ok[@]}"
    check "bad frontend port '0'" -v 10.0.0.100/24 -p 0 "${ok[@]}"
    check "must differ" -v 10.0.0.100/24 -p 6443 "${ok[@]}"
    check "bad interface" -v 10.0.0.100/24 -i 'eth 0' "${ok[@]}"
    check "bad local address '10.0.0'" -v 10.0.0.100/24 -l 10.0.0 "${ok[@]}"
    check "missing -s" -v 10.0.0.100/24 -b 10.0.0.11
    check "unknown option -z" -z
    check "option -v needs a value" -v
}

@test "parse_backends: names default from the address, repeats refused" {
    BACKENDS=m1=10.0.0.11,,10.0.0.12
    parse_backends
    [ "${SERVER_NAMES[*]}" = 'm1 master-10-0-0-12' ]
    SERVER_NAMES=() SERVER_IPS=() BACKENDS=a=10.0.0.11,a=10.0.0.12
    run -2 parse_backends
    [[ $output == *"backend name 'a' given twice"* ]]
    SERVER_NAMES=() SERVER_IPS=() BACKENDS=a=10.0.0.11,b=10.0.0.11
    run -2 parse_backends
    [[ $output == *"backend address '10.0.0.11' given twice"* ]]
    SERVER_NAMES=() SERVER_IPS=() BACKENDS='bad name=10.0.0.11'
    run -2 parse_backends
    SERVER_NAMES=() SERVER_IPS=() BACKENDS=m1=10.0.0.311
    run -2 parse_backends
    SERVER_NAMES=() SERVER_IPS=() BACKENDS=,
    run -2 parse_backends
    [[ $output == *"no backends in -b"* ]]
}

@test "detect_interface: a VIP that became ours between the reads is found on its interface, never lo" {
    args -v 10.0.0.100/24 -b 10.0.0.11 -s -
    # The first read of the addresses misses the VIP; keepalived adds it
    # before the route is read ("dev lo"); the second read finds it. (ip
    # runs in a command substitution: it counts its reads in a file.)
    reads=$BATS_TEST_TMPDIR/reads
    ip() {
        case "$*" in
        '-o -4 addr show')
            echo x >>"$reads"
            echo '1: lo    inet 127.0.0.1/8 scope host lo'
            echo '2: eth1    inet 10.0.0.11/24 brd 10.0.0.255 scope global eth1'
            (($(wc -l <"$reads") < 2)) ||
                echo '2: eth1    inet 10.0.0.100/24 scope global secondary eth1'
            ;;
        '-o -4 route get 10.0.0.100')
            echo 'local 10.0.0.100 dev lo table local src 10.0.0.100 uid 0'
            ;;
        *) return 1 ;;
        esac
    }
    detect_interface
    [ "$INTERFACE" = eth1 ]
    [ "$(wc -l <"$reads")" -eq 2 ]
}

@test "detect_interface: a VIP not held here takes the route's interface; only lo, ever, is refused" {
    args -v 10.0.0.100/24 -b 10.0.0.11 -s -
    ip() {
        case "$*" in
        '-o -4 addr show') echo '2: eth1    inet 10.0.0.11/24 scope global eth1' ;;
        '-o -4 route get 10.0.0.100') echo '10.0.0.100 dev eth1 src 10.0.0.11 uid 0' ;;
        esac
    }
    detect_interface
    [ "$INTERFACE" = eth1 ]
    INTERFACE=
    ip() {
        case "$*" in
        '-o -4 route get 10.0.0.100') echo 'local 10.0.0.100 dev lo table local' ;;
        esac
    }
    run --separate-stderr detect_interface
    [ "$status" -ne 0 ]
    [[ $stderr == *"cannot find the interface for VIP 10.0.0.100; pass -i"* ]]
}

@test "render_haproxy: the frontend port and one server line per master" {
    args -v 10.0.0.100/24 -b m1=10.0.0.11,m2=10.0.0.12 -p 8443 -a 6444 -s -
    run -0 render_haproxy
    [[ $output == *$'frontend k8s-apiserver\n    bind *:8443\n'* ]]
    [[ $output == *'option httpchk GET /readyz'* ]]
    [ "$(grep -c '^    server ' <<<"$output")" -eq 2 ]
    [[ $output == *$'    server m1 10.0.0.11:6444\n    server m2 10.0.0.12:6444' ]]
}

@test "render_unicast: only with -l, and never the local address as a peer" {
    args -v 10.0.0.100/24 -b 10.0.0.11,10.0.0.12,10.0.0.13 -s -
    [ -z "$(render_unicast)" ]
    LOCAL_IP=10.0.0.12
    [ "$(render_unicast)" = '    unicast_src_ip 10.0.0.12
    unicast_peer {
        10.0.0.11
        10.0.0.13
    }' ]
}

@test "render_keepalived: the instance with its VIP, priority and password" {
    args -v 10.0.0.100/24 -b 10.0.0.11,10.0.0.12 -P 240 -r 51 -i eth1 -l 10.0.0.11 -s -
    AUTH_PASS=Vr7p_x
    run -0 render_keepalived
    local want
    for want in '    router_id k8s_api_51' '    interface eth1' '    virtual_router_id 51' \
        '    priority 240' '        auth_pass Vr7p_x' '    unicast_src_ip 10.0.0.11' \
        '        10.0.0.100/24 dev eth1' '    nopreempt'; do
        grep -qxF -- "$want" <<<"$output" || { echo "no line '$want'"; false; }
    done
    # Every brace closes.
    [ "$(tr -cd '{' <<<"$output" | wc -c)" -eq "$(tr -cd '}' <<<"$output" | wc -c)" ]
}

@test "render_check_script: valid sh that checks the right ports" {
    args -v 10.0.0.100/24 -b 10.0.0.11 -p 8443 -a 6444 -s -
    render_check_script >"$BATS_TEST_TMPDIR/check.sh"
    sh -n "$BATS_TEST_TMPDIR/check.sh"
    grep -qF 'https://127.0.0.1:6444/readyz' "$BATS_TEST_TMPDIR/check.sh"
    run -1 sh "$BATS_TEST_TMPDIR/check.sh" bogus
    [[ $output == *"unknown check 'bogus'"* ]]
}

@test "store_secret: auth_pass only" {
    store_secret auth_pass abc
    [ "$AUTH_PASS" = abc ]
    run -2 store_secret password abc
    [[ $output == *"unknown key in secrets input: 'password'"* ]]
}

@test "read_secrets: at most 8 plain characters, never echoed" {
    SECRETS_SOURCE=-
    run -2 read_secrets <<<'auth_pass=toolong123'
    [[ $output == *"auth_pass must be 1-8 characters"* && $output != *toolong* ]]
    run -2 read_secrets <<<'auth_pass'
    [[ $output == *"(want auth_pass=...)"* ]]
    read_secrets <<<'auth_pass=Ok_8.ch~'
    [ "$AUTH_PASS" = Ok_8.ch~ ]
}

@test "under -o, services 'run' when their config was there; none is touched" {
    ROOT_DIR=$BATS_TEST_TMPDIR/root
    systemctl_do() { echo "systemctl $*" >>"$BATS_TEST_TMPDIR/called"; }
    run ! service_running haproxy "$ROOT_DIR/etc/haproxy/haproxy.cfg"
    mkdir -p "$ROOT_DIR/etc/haproxy"
    touch "$ROOT_DIR/etc/haproxy/haproxy.cfg"
    service_running haproxy "$ROOT_DIR/etc/haproxy/haproxy.cfg"
    [ "$(apply_service haproxy x true)" = 'haproxy: reload' ]
    [ "$(apply_service keepalived x false)" = 'keepalived: start' ]
    [ ! -e "$BATS_TEST_TMPDIR/called" ]
}

@test "outside -o, a running service is reloaded, a stopped one started" {
    systemctl_do() { echo "$*" >>"$BATS_TEST_TMPDIR/called"; }
    [ "$(apply_service haproxy x true)" = 'haproxy: reload' ]
    [ "$(apply_service keepalived x false)" = 'keepalived: start' ]
    [ "$(cat "$BATS_TEST_TMPDIR/called")" = 'show --property=MainPID --value haproxy
reload haproxy
enable keepalived
restart keepalived' ]
}

@test "reload_haproxy with no server left out waits for nothing" {
    sleep 30 &
    OLD_WORKER=$!
    systemctl_do() {
        echo "$*" >>"$BATS_TEST_TMPDIR/called"
        [ "$1" != show ] || echo 4242
    }
    pgrep() { [ "$*" = "-P 4242 -x haproxy" ] && echo "$OLD_WORKER"; }
    cut_connections() { echo "cut $*" >>"$BATS_TEST_TMPDIR/called"; }
    reload_haproxy
    # The previous worker finishes its connections on its own.
    [ -e "/proc/$OLD_WORKER" ]
    kill "$OLD_WORKER"
    [ "$(cat "$BATS_TEST_TMPDIR/called")" = 'show --property=MainPID --value haproxy
reload haproxy' ]
}

@test "reload_haproxy cuts the previous workers' connections to a server left out, then returns" {
    sleep 30 &
    OLD_WORKER=$!
    systemctl_do() { [ "$1" != show ] || echo 4242; }
    pgrep() { echo "$OLD_WORKER"; }
    # One connection to the server left out, until it is cut.
    connections_to() {
        [ "$1" = "$OLD_WORKER" ] && [ "$2" = 10.0.0.12:6443 ] || return 0
        [ -e "$BATS_TEST_TMPDIR/cut" ] || echo '10.0.0.11:40000 10.0.0.12:6443'
    }
    ss() { echo "ss $*" >>"$BATS_TEST_TMPDIR/cut"; }
    reload_haproxy 10.0.0.12:6443
    # Back while the worker still carries what goes to the other servers.
    [ -e "/proc/$OLD_WORKER" ]
    kill "$OLD_WORKER"
    [ "$(cat "$BATS_TEST_TMPDIR/cut")" = 'ss -K -tnH state established src 10.0.0.11 sport = :40000 dst 10.0.0.12 dport = :6443' ]
}

@test "reload_haproxy returns once the previous workers are gone, connections or not" {
    sleep 0.6 &
    OLD_WORKER=$!
    systemctl_do() { [ "$1" != show ] || echo 4242; }
    pgrep() { echo "$OLD_WORKER"; }
    connections_to() { echo 'a kernel that cannot cut them'; }
    cut_connections() { :; }
    reload_haproxy 10.0.0.12:6443
    [ ! -e "/proc/$OLD_WORKER" ]
}

@test "reload_haproxy warns, and goes on, when an old worker still reaches a server left out past the deadline" {
    sleep 30 &
    OLD_WORKER=$!
    systemctl_do() { [ "$1" != show ] || echo 4242; }
    pgrep() { echo "$OLD_WORKER"; }
    connections_to() { echo 'still there'; }
    cut_connections() { :; }
    HAPROXY_HARD_STOP_SECONDS=0 HAPROXY_EXIT_SECONDS=1
    run --separate-stderr reload_haproxy 10.0.0.12:6443
    kill "$OLD_WORKER"
    [ "$status" -eq 0 ]
    [[ $stderr == *"haproxy's previous workers ($OLD_WORKER) still reach 10.0.0.12:6443 1 s after the reload"* ]]
}

@test "servers_left_out: the servers of the old config the new one lacks" {
    printf 'backend b\n    server m1 10.0.0.11:6443\n    server m2 10.0.0.12:6443\n    server w1 10.0.0.21\n' >"$BATS_TEST_TMPDIR/old"
    printf 'backend b\n    server m1 10.0.0.11:6443\n    server m3 10.0.0.13:6443\n' >"$BATS_TEST_TMPDIR/new"
    [ "$(servers_left_out "$BATS_TEST_TMPDIR/old" "$BATS_TEST_TMPDIR/new")" = '10.0.0.12:6443
10.0.0.21' ]
    # A first config leaves nothing out.
    [ -z "$(servers_left_out "$BATS_TEST_TMPDIR/none" "$BATS_TEST_TMPDIR/new")" ]
}

@test "connections_to and cut_connections on a real connection" {
    [ "$(id -u)" -eq 0 ] || skip "ss -K needs root"
    local port_file=$BATS_TEST_TMPDIR/port
    python3 -c '
import socket, sys, time
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen()
open(sys.argv[1], "w").write(str(server.getsockname()[1]))
conn, _ = server.accept(); time.sleep(30)' "$port_file" &
    local server=$!
    for _ in $(seq 50); do [ -s "$port_file" ] && break; sleep 0.1; done
    local port
    port=$(cat "$port_file")
    python3 -c '
import socket, sys, time
client = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
try:
    client.recv(1)
except OSError:
    pass
time.sleep(30)' "$port" &
    local client=$!
    for _ in $(seq 50); do [ -n "$(connections_to "$client" "127.0.0.1:$port")" ] && break; sleep 0.1; done
    [[ $(connections_to "$client" "127.0.0.1:$port") == "127.0.0.1:"*" 127.0.0.1:$port" ]]
    # Another process's connections are not its.
    [ -z "$(connections_to "$server" "127.0.0.1:$port")" ]
    cut_connections "$client" "127.0.0.1:$port"
    [ -z "$(connections_to "$client" "127.0.0.1:$port")" ]
    kill "$client" "$server" 2>/dev/null || true
}

@test "reload_haproxy without a main pid (haproxy unknown to systemd) only reloads" {
    systemctl_do() { echo "$*" >>"$BATS_TEST_TMPDIR/called"; [ "$1" != show ] || echo 0; }
    pgrep() { echo "pgrep must not run" >&2; return 1; }
    reload_haproxy
    [ "$(tail -n 1 "$BATS_TEST_TMPDIR/called")" = 'reload haproxy' ]
}

@test "a failed reload fails reload_haproxy" {
    systemctl_do() { [ "$1" != reload ]; }
    run ! reload_haproxy
}

@test "configure_haproxy writes once, then finds it unchanged, then reloads" {
    ROOT_DIR=$BATS_TEST_TMPDIR/root
    have() { [ "$1" != haproxy ]; }  # no config check here
    args -v 10.0.0.100/24 -b 10.0.0.11 -s -
    [ "$(configure_haproxy 2>/dev/null)" = 'haproxy: start' ]
    local cfg=$ROOT_DIR/etc/haproxy/haproxy.cfg
    [ "$(mode_of "$cfg")" = 644 ]
    [ "$(configure_haproxy)" = 'haproxy: unchanged' ]
    SERVER_NAMES=() SERVER_IPS=()
    BACKENDS=10.0.0.11,10.0.0.12
    parse_backends
    [ "$(configure_haproxy 2>/dev/null)" = 'haproxy: reload' ]
    grep -q 'server master-10-0-0-12 10.0.0.12:6443' "$cfg"
    cleanup
}
