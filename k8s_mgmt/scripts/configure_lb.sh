#!/usr/bin/env bash
# configure_lb.sh: HAProxy + keepalived on one master of an HA Kubernetes
# cluster. HAProxy listens on a port of its own (default 16443) and forwards
# TCP to every master's API server (6443), health-checked on /readyz;
# keepalived keeps the VIP on a master whose HAProxy runs and whose local API
# server answers, and moves it within 3 s of HAProxy dying there.
#
# Usage: configure_lb.sh -v VIP/PREFIX -b BACKENDS -P PRIORITY -s FILE|- [options]
# -B (bootstrap) on the master about to run kubeadm init: keepalived takes
# the VIP at once and tracks HAProxy only, while the API server is still
# being built; a later run without -B adds the API server check.
# What this version offers beyond the first one; the driver reads this line
# before it passes the options (a VNF package may ship an older copy):
# k8s-mgmt-features: bootstrap apt-turn
# The VRRP password comes as "auth_pass=..." on stdin (-s -) or in a file
# only its owner can read; never on the command line.
# Prints one line per part: "haproxy: unchanged|reload|start",
# "keepalived: unchanged|reload|start", "check script: unchanged|installed".
set -Eeuo pipefail
umask 077

readonly PROG=configure_lb.sh
# The helpers shared with install_k8s_cluster.sh; the driver uploads them
# next to this script.
LIB=$(dirname -- "${BASH_SOURCE[0]}")/k8s_mgmt_lib.sh
[[ -f $LIB ]] || { printf '%s: %s is missing (it comes with this script)\n' "$PROG" "$LIB" >&2; exit 1; }
# shellcheck source-path=SCRIPTDIR source=k8s_mgmt_lib.sh
source "$LIB"

VIP=""
BACKENDS=""
PRIORITY=100
ROUTER_ID=""
INTERFACE=""
LOCAL_IP=""
FRONTEND_PORT=16443
APISERVER_PORT=6443
SECRETS_SOURCE=""
ROOT_DIR=""
BOOTSTRAP=false
AUTH_PASS=""
CURRENT_STEP="arguments"
SERVER_NAMES=()
SERVER_IPS=()

usage() {
    cat <<'EOF'
Usage: configure_lb.sh -v VIP/PREFIX -b BACKENDS -s FILE|- [options]

  -v VIP/PREFIX  the virtual IP with its prefix length, e.g. 10.0.0.100/24
  -b BACKENDS    comma-separated masters: NAME=IP or IP (NAME defaults to
                 master-<IP with dashes>)
  -P PRIORITY    VRRP priority of this master, 1-254, distinct per master
                 (default 100)
  -r ID          VRRP virtual_router_id, 1-255 (default: last octet of VIP)
  -i IFACE       interface for the VIP (default: the one holding the VIP or
                 routing to it)
  -l IP          this master's IP: VRRP goes unicast to the other backends
                 (default: multicast)
  -p PORT        HAProxy frontend port (default 16443)
  -a PORT        API server port on the masters (default 6443)
  -s FILE|-      secrets: a line "auth_pass=<1-8 characters>" (FILE must be
                 mode 0600 or stricter)
  -B             bootstrap, for the master about to run kubeadm init while
                 no other master runs an API server: keepalived takes the
                 VIP at once (state MASTER, priority 255) and tracks
                 HAProxy only; run again without -B once the API server
                 answers (a reload: the VIP stays)
  -o DIR         write the files under DIR (DIR/etc/haproxy/...) and report
                 what would happen; no packages, no services, no root
  -h             this help
EOF
}

# ---------------------------------------------------------------- helpers

# Installed paths; under ROOT_DIR when rendering (-o).
path_of() {
    printf '%s%s\n' "$ROOT_DIR" "$1"
}

# ------------------------------------------------------------ arguments

parse_args() {
    local opt OPTIND=1
    while getopts ':v:b:P:r:i:l:p:a:s:o:Bh' opt; do
        case $opt in
            v) VIP=$OPTARG ;;
            b) BACKENDS=$OPTARG ;;
            P) PRIORITY=$OPTARG ;;
            r) ROUTER_ID=$OPTARG ;;
            i) INTERFACE=$OPTARG ;;
            l) LOCAL_IP=$OPTARG ;;
            p) FRONTEND_PORT=$OPTARG ;;
            a) APISERVER_PORT=$OPTARG ;;
            s) SECRETS_SOURCE=$OPTARG ;;
            o) ROOT_DIR=$OPTARG ;;
            B) BOOTSTRAP=true ;;
            h) usage; exit 0 ;;
            :) usage_error "option -$OPTARG needs a value" ;;
            *) usage_error "unknown option -$OPTARG" ;;
        esac
    done
    shift $((OPTIND - 1))
    [[ $# -eq 0 ]] || usage_error "unexpected argument: $1"
}

validate_vip() {
    [[ -n $VIP ]] || usage_error "missing -v VIP/PREFIX"
    if ! is_ipv4 "${VIP%/*}" || ! in_range "${VIP#*/}" 1 32 || [[ $VIP != */* ]]; then
        usage_error "bad VIP '$VIP' (want an IPv4 address with a prefix, e.g. 10.0.0.100/24)"
    fi
    if [[ -z $ROUTER_ID ]]; then
        ROUTER_ID=${VIP%/*}
        ROUTER_ID=${ROUTER_ID##*.}
    fi
    in_range "$ROUTER_ID" 1 255 || usage_error "bad VRRP router id '$ROUTER_ID' (1-255)"
}

parse_backends() {
    local entry name ip
    local -a entries
    [[ -n $BACKENDS ]] || usage_error "missing -b BACKENDS"
    IFS=, read -r -a entries <<<"$BACKENDS"
    for entry in "${entries[@]}"; do
        [[ -n $entry ]] || continue
        if [[ $entry == *=* ]]; then name=${entry%%=*} ip=${entry#*=}; else name="" ip=$entry; fi
        is_ipv4 "$ip" || usage_error "bad backend address '$ip'"
        [[ -n $name ]] || name=master-${ip//./-}
        [[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$ ]] || usage_error "bad backend name '$name'"
        [[ " ${SERVER_NAMES[*]} " != *" $name "* ]] || usage_error "backend name '$name' given twice"
        [[ " ${SERVER_IPS[*]} " != *" $ip "* ]] || usage_error "backend address '$ip' given twice"
        SERVER_NAMES+=("$name")
        SERVER_IPS+=("$ip")
    done
    [[ ${#SERVER_IPS[@]} -gt 0 ]] || usage_error "no backends in -b"
}

validate_args() {
    validate_vip
    parse_backends
    in_range "$PRIORITY" 1 254 || usage_error "bad priority '$PRIORITY' (1-254)"
    is_port "$FRONTEND_PORT" || usage_error "bad frontend port '$FRONTEND_PORT'"
    is_port "$APISERVER_PORT" || usage_error "bad API server port '$APISERVER_PORT'"
    ((10#$FRONTEND_PORT != 10#$APISERVER_PORT)) ||
        usage_error "HAProxy port and API server port must differ (both $FRONTEND_PORT on the same host)"
    [[ -z $INTERFACE || $INTERFACE =~ ^[A-Za-z0-9._@-]{1,15}$ ]] || usage_error "bad interface '$INTERFACE'"
    [[ -z $LOCAL_IP ]] || is_ipv4 "$LOCAL_IP" || usage_error "bad local address '$LOCAL_IP'"
    [[ -n $SECRETS_SOURCE ]] || usage_error "missing -s FILE|- (the VRRP auth_pass)"
}

# ------------------------------------------------------------ secrets

store_secret() {
    case $1 in
        auth_pass) AUTH_PASS=$2 ;;
        *) usage_error "unknown key in secrets input: '$1'" ;;
    esac
}

read_secrets() {
    read_secret_lines "$SECRETS_SOURCE" store_secret "auth_pass=..."
    # keepalived cuts PASS authentication at 8 characters; refuse rather than
    # let two masters silently disagree. No quoting characters either.
    [[ $AUTH_PASS =~ ^[A-Za-z0-9._~+@%^*-]{1,8}$ ]] ||
        usage_error "auth_pass must be 1-8 characters of A-Z a-z 0-9 . _ ~ + @ % ^ * -"
}

# ------------------------------------------------------------ rendering

detect_interface() {
    local vip=${VIP%/*} out
    [[ -n $INTERFACE ]] && return 0
    # The interface that holds the VIP, else the one the route to it takes.
    # When the VIP is ours, "ip route get" answers "dev lo": it became ours
    # (keepalived moving it, as during an upgrade's hand-over) after the
    # addresses were read, so they are read again.
    for _ in 1 2 3; do
        out=$(ip -o -4 addr show 2>/dev/null | awk -v vip="$vip" '{ split($4, a, "/"); if (a[1] == vip) { print $2; exit } }')
        [[ -n $out ]] && break
        out=$(ip -o -4 route get "$vip" 2>/dev/null |
            awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
        [[ $out != lo ]] && break
        out=
    done
    [[ -n $out ]] || die "cannot find the interface for VIP $vip; pass -i"
    INTERFACE=$out
}

render_haproxy() {
    local i
    cat <<EOF
# Written by $PROG: TCP pass-through to the Kubernetes API servers.
global
    log /dev/log local0
    maxconn 4000
EOF
    haproxy_common
    cat <<EOF

frontend k8s-apiserver
    bind *:$FRONTEND_PORT
    default_backend k8s-apiserver

backend k8s-apiserver
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    # A crashed master answers nothing: two failed checks (the second 0.5 s
    # after the first) mark it down, and its sessions are cut then, so
    # clients reconnect to a live master at once instead of waiting out
    # their own timeouts. A down master is checked every 0.5 s and two
    # passes 0.5 s apart bring it back: a new API server takes traffic
    # within about 1 s. "timeout check" keeps a slow answer from failing
    # the shorter checks: 1 s to connect, 1 s more for the reply.
    timeout check 1s
    default-server check check-ssl verify none inter 1s fastinter 500ms downinter 500ms fall 2 rise 2 on-marked-down shutdown-sessions
EOF
    for i in "${!SERVER_IPS[@]}"; do
        printf '    server %s %s:%s\n' "${SERVER_NAMES[$i]}" "${SERVER_IPS[$i]}" "$APISERVER_PORT"
    done
}

render_check_script() {
    cat <<EOF
#!/bin/sh
# Written by $PROG. keepalived runs "check_apiserver.sh haproxy" and
# "check_apiserver.sh apiserver" every second, and gives the VIP up (FAULT)
# when either keeps failing. Without an argument: both checks.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
fail() { echo "check_apiserver: \$*" >&2; exit 1; }
haproxy_up() {
    # A process check: a few ms, and no connection that HAProxy would
    # forward to an API server, as a TCP probe of port $FRONTEND_PORT would.
    pidof haproxy >/dev/null || fail "HAProxy not running"
}
apiserver_up() {
    curl --silent --fail --insecure --max-time 2 --output /dev/null \\
        https://127.0.0.1:$APISERVER_PORT/readyz || fail "local API server down"
}
case \${1:-all} in
    haproxy) haproxy_up ;;
    apiserver) apiserver_up ;;
    all) haproxy_up; apiserver_up ;;
    *) fail "unknown check '\$1' (haproxy, apiserver, or none for both)" ;;
esac
EOF
}

render_unicast() {
    local ip
    [[ -n $LOCAL_IP ]] || return 0
    printf '    unicast_src_ip %s\n    unicast_peer {\n' "$LOCAL_IP"
    for ip in "${SERVER_IPS[@]}"; do
        [[ $ip == "$LOCAL_IP" ]] || printf '        %s\n' "$ip"
    done
    printf '    }\n'
}

render_keepalived() {
    cat <<EOF
# Written by $PROG.
global_defs {
    router_id k8s_api_$ROUTER_ID
    script_user root
    enable_script_security
}

# HAProxy dead on the VIP holder: the 2nd failed check, at most 2 s after
# the death, puts this instance into FAULT (weight 0: a weight would only
# lower the priority, which nopreempt backups ignore). Leaving MASTER it
# sends a priority-0 advert; a backup then waits only its skew time,
# (256 - priority) / 256 * advert_int (0.06 s at priority 240), and takes
# the VIP: within 2.5 s. See "VIP failover timing" in doc/source/scripts.rst.
vrrp_script check_haproxy {
    script "/etc/keepalived/check_apiserver.sh haproxy"
    interval 1
    timeout 1
    fall 2
    rise 2
    weight 0
}

# The local API server: 3 failures, as HAProxy routes around a dead one
# anyway; a single pass is enough to rise, so the first master's VIP comes
# up within a second of its API server (then the election's 3 adverts).
vrrp_script check_apiserver {
    script "/etc/keepalived/check_apiserver.sh apiserver"
    interval 1
    timeout 2
    fall 3
    rise 1
    weight 0
}

vrrp_instance k8s_api_vip {
EOF
    render_role
    cat <<EOF
    interface $INTERFACE
    virtual_router_id $ROUTER_ID
    advert_int 1
    authentication {
        auth_type PASS
        auth_pass $AUTH_PASS
    }
EOF
    render_unicast
    cat <<EOF
    virtual_ipaddress {
        $VIP dev $INTERFACE
    }
EOF
    render_tracking
    echo "}"
}

# Bootstrap (-B), on the master about to run kubeadm init, before any
# other master has an API server (their checks fail: FAULT): state MASTER
# with priority 255 takes the VIP at once, where a BACKUP waits out 3
# adverts (keepalived's rule: only 255 skips them). A client of the VIP
# that connects before it exists stalls for the ARP timeout (3 s), and
# kubeadm init's API check goes through the VIP. The run without -B
# (state BACKUP, its own priority, nopreempt) is a reload that keeps the
# VIP where it is.
render_role() {
    if "$BOOTSTRAP"; then
        printf '    # bootstrap (-B): MASTER at once; a run without -B makes it\n'
        printf '    # a nopreempt BACKUP with priority %s, keeping the VIP\n' "$PRIORITY"
        printf '    state MASTER\n    priority 255\n'
    else
        printf '    # All start as BACKUP; the highest priority whose checks pass wins the\n'
        printf '    # first election. nopreempt: a master whose HAProxy is back does not\n'
        printf '    # take the VIP back, which would cut every connection a second time.\n'
        printf '    state BACKUP\n    nopreempt\n    priority %s\n' "$PRIORITY"
    fi
}

# Bootstrap (-B): no API server yet on this master, so only HAProxy is
# tracked.
render_tracking() {
    printf '    track_script {\n        check_haproxy\n'
    if "$BOOTSTRAP"; then
        printf '        # bootstrap (-B): check_apiserver comes once the API server runs\n'
    else
        printf '        check_apiserver\n'
    fi
    printf '    }\n'
}

# ------------------------------------------------------ external effects

systemctl_do() {
    systemctl "$@"
}

# DPkg::Lock::Timeout: another install on the node (cloud-init's) holds
# dpkg's lock for a while; wait for it rather than fail. Our own scripts
# take turns (apt_turn).
apt_get() {
    apt_turn 300 env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Options::=--force-confold \
        -o DPkg::Lock::Timeout=300 "$@"
}

# Rendering under -o: a service "runs" when its config was installed before.
service_running() {
    local service=$1 config=$2
    if [[ -n $ROOT_DIR ]]; then
        [[ -f $config ]]
    else
        systemctl_do is-active --quiet "$service"
    fi
}

# Reload what runs (haproxy and keepalived both reload in place), start
# what does not, and print what was done. For haproxy, the servers its
# previous config had and the new one lacks follow (see reload_haproxy).
apply_service() {
    local service=$1 config=$2 was_running=$3 action
    shift 3
    if "$was_running"; then action=reload; else action=start; fi
    printf '%s: %s\n' "$service" "$action"
    [[ -z $ROOT_DIR ]] || return 0
    if [[ $action == reload ]]; then
        if [[ $service == haproxy ]]; then
            reload_haproxy "$@" || die "systemctl reload haproxy failed"
        else
            systemctl_do reload "$service" || die "systemctl reload $service failed"
        fi
    else
        systemctl_do enable "$service" >/dev/null 2>&1 || true
        systemctl_do restart "$service" || die "systemctl start $service failed"
    fi
}

# ------------------------------------------------------------------ steps

ensure_root() {
    [[ -n $ROOT_DIR ]] || become_root "${ORIGINAL_ARGS[@]}"
}

install_packages() {
    local -a missing=()
    [[ -z $ROOT_DIR ]] || return 0
    have haproxy || missing+=(haproxy)
    have keepalived || missing+=(keepalived)
    have curl || missing+=(curl)
    [[ ${#missing[@]} -eq 0 ]] && return 0
    apt_get update >&2
    apt_get install "${missing[@]}" >&2
}

validate_haproxy() {
    local file=$1
    if ! have haproxy; then
        [[ -n $ROOT_DIR ]] || die "haproxy is not installed"
        log "warning: haproxy not installed; config not validated"
        return 0
    fi
    haproxy -c -q -f "$file" >&2 || die "haproxy -c rejected the rendered config"
}

# configure_service SERVICE DEST MODE RENDER VALIDATE: what RENDER prints
# becomes DEST when it differs (VALIDATE checks it first), then SERVICE is
# reloaded or started.
configure_service() {
    local service=$1 dest=$2 mode=$3 render=$4 validate=$5 rendered was_running=false
    rendered=$(mktemp)
    TEMP_FILES+=("$rendered")
    "$render" >"$rendered"
    if same_content "$dest" <"$rendered"; then
        echo "$service: unchanged"
        return 0
    fi
    "$validate" "$rendered"
    service_running "$service" "$dest" && was_running=true
    local -a left_out=()
    [[ $service != haproxy ]] || mapfile -t left_out < <(servers_left_out "$dest" "$rendered")
    write_file "$dest" "$mode" <"$rendered"
    apply_service "$service" "$dest" "$was_running" "${left_out[@]}"
}

configure_haproxy() {
    configure_service haproxy "$(path_of /etc/haproxy/haproxy.cfg)" 0644 render_haproxy validate_haproxy
}

install_check_script() {
    local dest rendered
    dest=$(path_of /etc/keepalived/check_apiserver.sh)
    rendered=$(mktemp)
    TEMP_FILES+=("$rendered")
    render_check_script >"$rendered"
    if same_content "$dest" <"$rendered"; then
        echo "check script: unchanged"
        return 0
    fi
    write_file "$dest" 0755 <"$rendered"
    echo "check script: installed"
}

validate_keepalived() {
    local file=$1
    # -t also checks that the interface and the check script exist, which
    # holds on the master but not for files rendered elsewhere (-o).
    if [[ -n $ROOT_DIR ]] || ! have keepalived; then
        return 0
    fi
    local report
    report=$(mktemp)
    TEMP_FILES+=("$report")
    keepalived -t"$report" -f "$file" >/dev/null 2>&1 ||
        die "keepalived -t rejected the rendered config: $(head -n 3 "$report" | tr '\n' ' ')"
}

configure_keepalived() {
    configure_service keepalived "$(path_of /etc/keepalived/keepalived.conf)" 0600 \
        render_keepalived validate_keepalived
}

# ------------------------------------------------------------------ main

main() {
    ORIGINAL_ARGS=("$@")
    parse_args "$@"
    validate_args
    ensure_root
    read_secrets
    trap 'on_error $? $LINENO' ERR
    trap cleanup EXIT
    step packages install_packages
    step interface detect_interface
    step haproxy configure_haproxy
    # The check script comes before keepalived, which runs it right away.
    step "check script" install_check_script
    step keepalived configure_keepalived
    CURRENT_STEP=finished
}

# Sourced (by the bats tests) it only defines its functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
