#!/usr/bin/env bash
# configure_external_lb.sh: HAProxy on the external load-balancer VM of the
# kubespray mode. Two TCP frontends: the Kubernetes API (--api-port) to every
# master's API server, health-checked on /readyz over TLS, and the NodePort
# range to every worker on the port the client used, health-checked by a TCP
# connect to the kubelet port (10250).
#
# The whole config is rendered from the member lists on every run and kept
# as a file k8s-mgmt manages: same arguments, same bytes, no reload; a member
# left out of the lists is gone, whatever its name has in common with others.
#
# Usage: configure_external_lb.sh --api-port PORT --masters NAME=IP[,...]
#            [--workers NAME=IP[,...]] [--nodeports FROM-TO]
#            [--apiserver-port PORT] [-o ROOT] [-n]
# Prints one line per part: "api: ...", "nodeports: ...",
# "haproxy: unchanged|reload|start" ("would reload|would start" with -n).
set -Eeuo pipefail
umask 077

readonly PROG=configure_external_lb.sh
# The helpers shared with the other node scripts; the driver uploads them
# next to this script.
LIB=$(dirname -- "${BASH_SOURCE[0]}")/k8s_mgmt_lib.sh
[[ -f $LIB ]] || { printf '%s: %s is missing (it comes with this script)\n' "$PROG" "$LIB" >&2; exit 1; }
# shellcheck source-path=SCRIPTDIR source=k8s_mgmt_lib.sh
source "$LIB"

# The first line of every config this script writes: the mark that the file
# is ours to replace.
readonly MANAGED_MARK="# Managed by k8s-mgmt ($PROG): rewritten whole on every run."
readonly KUBELET_PORT=10250
HAPROXY_CFG=/etc/haproxy/haproxy.cfg

API_PORT=""
MASTERS=""
WORKERS=""
NODEPORTS=30000-32767
NODEPORT_FROM=""
NODEPORT_TO=""
APISERVER_PORT=6443
ROOT_DIR=""
DRY_RUN=false
CURRENT_STEP="arguments"
MASTER_NAMES=()
MASTER_IPS=()
WORKER_NAMES=()
WORKER_IPS=()

usage() {
    cat <<'EOF'
Usage: configure_external_lb.sh --api-port PORT --masters NAME=IP[,NAME=IP...]
           [--workers NAME=IP[,...]] [--nodeports FROM-TO]
           [--apiserver-port PORT] [-o ROOT] [-n]

  --api-port PORT        where the load balancer serves the Kubernetes API
  --masters LIST         the masters, NAME=IP comma-separated
  --workers LIST         the workers, NAME=IP comma-separated (none: no
                         NodePort frontend)
  --nodeports FROM-TO    the NodePort range (default 30000-32767)
  --apiserver-port PORT  the API servers' port on the masters (default 6443)
  -o ROOT                files under ROOT (ROOT/etc/haproxy/...); no
                         packages, no services, no root
  -n                     print what would change (a diff) and change nothing
  -h, --help             this help
EOF
}

# ------------------------------------------------------------ arguments

path_of() {
    printf '%s%s\n' "$ROOT_DIR" "$1"
}

parse_args() {
    local option value
    while [[ $# -gt 0 ]]; do
        option=$1
        case $option in
            -h | --help) usage; exit 0 ;;
            -n) DRY_RUN=true; shift; continue ;;
            --*=*) value=${option#*=} option=${option%%=*}; shift ;;
            --api-port | --masters | --workers | --nodeports | --apiserver-port | -o)
                [[ $# -ge 2 ]] || usage_error "option $option needs a value"
                value=$2
                shift 2
                ;;
            -*) usage_error "unknown option $option" ;;
            *) usage_error "unexpected argument: $option" ;;
        esac
        case $option in
            --api-port) API_PORT=$value ;;
            --masters) MASTERS=$value ;;
            --workers) WORKERS=$value ;;
            --nodeports) NODEPORTS=$value ;;
            --apiserver-port) APISERVER_PORT=$value ;;
            -o) ROOT_DIR=$value ;;
            *) usage_error "unknown option $option" ;;
        esac
    done
}

# parse_members OPTION LIST NAMES_VAR IPS_VAR: NAME=IP entries into the two
# arrays, in name order (so the same members in another order render the
# same file).
parse_members() {
    local option=$1 list=$2 entry name ip
    local -n names_out=$3 ips_out=$4
    local -a entries sorted
    local -A seen_name=() seen_ip=()
    IFS=, read -r -a entries <<<"$list"
    for entry in "${entries[@]}"; do
        [[ -n $entry ]] || continue
        [[ $entry == *=* ]] || usage_error "bad $option entry '$entry' (want NAME=IP)"
        name=${entry%%=*} ip=${entry#*=}
        # A host name label (what kubespray names nodes by); HAProxy takes
        # it as the server name as it is.
        [[ $name =~ ^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$ ]] ||
            usage_error "bad $option name '$name' (letters, digits, . _ -)"
        is_ipv4 "$ip" || usage_error "bad $option address '$ip' for $name"
        [[ -z ${seen_name[$name]:-} ]] || usage_error "$option name '$name' given twice"
        [[ -z ${seen_ip[$ip]:-} ]] || usage_error "$option address '$ip' given twice (${seen_ip[$ip]} and $name)"
        seen_name[$name]=$ip
        seen_ip[$ip]=$name
    done
    names_out=() ips_out=()
    [[ ${#seen_name[@]} -gt 0 ]] || return 0
    mapfile -t sorted < <(printf '%s\n' "${!seen_name[@]}" | LC_ALL=C sort)
    for name in "${sorted[@]}"; do
        names_out+=("$name")
        ips_out+=("${seen_name[$name]}")
    done
}

# A node both master and worker (kubespray allows it) has one address.
check_shared_names() {
    local i j
    for i in "${!MASTER_NAMES[@]}"; do
        for j in "${!WORKER_NAMES[@]}"; do
            [[ ${MASTER_NAMES[$i]} != "${WORKER_NAMES[$j]}" || ${MASTER_IPS[$i]} == "${WORKER_IPS[$j]}" ]] ||
                usage_error "name '${MASTER_NAMES[$i]}' is master ${MASTER_IPS[$i]} and worker ${WORKER_IPS[$j]}"
        done
    done
}

validate_nodeports() {
    local from="" to=""
    # is_port matches regexes of its own: BASH_REMATCH is read first.
    if [[ $NODEPORTS =~ ^([0-9]{1,5})-([0-9]{1,5})$ ]]; then
        from=${BASH_REMATCH[1]} to=${BASH_REMATCH[2]}
    fi
    if ! is_port "$from" || ! is_port "$to" || ((10#$from > 10#$to)); then
        usage_error "bad --nodeports '$NODEPORTS' (want FROM-TO, 1-65535, FROM <= TO)"
    fi
    NODEPORT_FROM=$((10#$from))
    NODEPORT_TO=$((10#$to))
}

validate_args() {
    [[ -n $API_PORT ]] || usage_error "missing --api-port"
    is_port "$API_PORT" || usage_error "bad --api-port '$API_PORT' (1-65535)"
    API_PORT=$((10#$API_PORT))
    is_port "$APISERVER_PORT" || usage_error "bad --apiserver-port '$APISERVER_PORT' (1-65535)"
    APISERVER_PORT=$((10#$APISERVER_PORT))
    validate_nodeports
    ((API_PORT < NODEPORT_FROM || API_PORT > NODEPORT_TO)) ||
        usage_error "--api-port $API_PORT lies in --nodeports $NODEPORTS"
    [[ -n $MASTERS ]] || usage_error "missing --masters"
    parse_members --masters "$MASTERS" MASTER_NAMES MASTER_IPS
    [[ ${#MASTER_NAMES[@]} -gt 0 ]] || usage_error "no members in --masters"
    parse_members --workers "$WORKERS" WORKER_NAMES WORKER_IPS
    check_shared_names
    [[ -z $ROOT_DIR || $ROOT_DIR == /* ]] || ROOT_DIR=$PWD/$ROOT_DIR
}

# ------------------------------------------------------------ rendering

render_servers() {
    local -n names=$1 ips=$2
    local port=$3 i
    for i in "${!names[@]}"; do
        printf '    server %s %s%s\n' "${names[$i]}" "${ips[$i]}" "${port:+:$port}"
    done
}

render_nodeports() {
    [[ ${#WORKER_NAMES[@]} -gt 0 ]] || {
        printf '\n# No workers: no NodePort frontend.\n'
        return 0
    }
    cat <<EOF

frontend k8s-nodeports
    bind *:$NODEPORT_FROM-$NODEPORT_TO
    default_backend k8s-nodeports

backend k8s-nodeports
    balance roundrobin
    # No port on the servers: each connection goes to the port the client
    # asked for. A worker counts as up while its kubelet port takes a TCP
    # connection; sessions to a worker marked down are left to finish, as
    # a kubelet restart does not stop kube-proxy.
    default-server check port $KUBELET_PORT inter 2s fall 2 rise 2
EOF
    render_servers WORKER_NAMES WORKER_IPS ""
}

render_haproxy() {
    cat <<EOF
$MANAGED_MARK
# Do not edit: changes are lost on the next scale or heal. The load balancer
# of the cluster: the Kubernetes API and the workers' NodePorts, TCP through.
global
    log /dev/log local0
    # No maxconn: HAProxy sizes it to the file descriptors it may open.
EOF
    haproxy_common
    cat <<EOF

frontend k8s-api
    bind *:$API_PORT
    default_backend k8s-api

backend k8s-api
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    # A master counts as up while /readyz answers 200 over TLS. Two failed
    # checks 1 s apart mark it down and cut its sessions, so clients
    # reconnect to a live master instead of waiting out their timeouts.
    default-server check check-ssl verify none inter 1s fall 2 rise 2 on-marked-down shutdown-sessions
EOF
    render_servers MASTER_NAMES MASTER_IPS "$APISERVER_PORT"
    render_nodeports
}

# ------------------------------------------------------ external effects

systemctl_do() {
    systemctl "$@"
}

apt_get() {
    env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Options::=--force-confold \
        -o Acquire::http::Timeout=30 -o Acquire::Retries=3 -o DPkg::Lock::Timeout=300 "$@"
}

# The distribution's own haproxy.cfg, untouched since the package put it
# there, is no operator's work: it may be replaced.
is_packaged_default() {
    local file=$1 want
    want=$(dpkg-query -W -f='${Conffiles}\n' haproxy 2>/dev/null |
        awk -v path="$HAPROXY_CFG" '$1 == path { print $2; exit }') || return 1
    [[ -n $want ]] && [[ $(md5sum <"$file" | awk '{ print $1 }') == "$want" ]]
}

# ------------------------------------------------------------------ steps

ensure_root() {
    [[ -n $ROOT_DIR ]] || "$DRY_RUN" || become_root "${ORIGINAL_ARGS[@]}"
}

install_packages() {
    [[ -z $ROOT_DIR ]] || return 0
    have haproxy && return 0
    if "$DRY_RUN"; then
        echo "package haproxy: would install"
        return 0
    fi
    apt_get update >&2
    apt_get install haproxy >&2
    echo "package haproxy: installed"
}

# Refuse to replace a config k8s-mgmt did not write (nor the package).
check_ownership() {
    local dest=$1 first
    [[ -s $dest ]] || return 0
    IFS= read -r first <"$dest" || true
    [[ $first == "$MANAGED_MARK" ]] && return 0
    is_packaged_default "$dest" && return 0
    die "$dest exists and is not managed by k8s-mgmt (its first line is not '$MANAGED_MARK'); move it away, or keep your own HAProxy elsewhere, and run again"
}

validate_haproxy() {
    local file=$1
    if ! have haproxy; then
        [[ -n $ROOT_DIR ]] || "$DRY_RUN" || die "haproxy is not installed"
        log "warning: haproxy not installed; config not validated"
        return 0
    fi
    haproxy -c -q -f "$file" >&2 || die "haproxy -c rejected the rendered config"
}

haproxy_running() {
    local dest=$1
    if [[ -n $ROOT_DIR ]]; then
        # Rendering under -o: haproxy "runs" once a config was installed.
        [[ -f $dest ]]
    else
        systemctl_do is-active --quiet haproxy
    fi
}

# Reload a running haproxy (master-worker: the new workers serve the new
# config, the old ones carry their connections until hard-stop-after; see
# reload_haproxy, which gets the servers the new config left out, the
# arguments after the first), start a stopped one.
apply_haproxy() {
    local was_running=$1 action
    shift
    if "$was_running"; then action=reload; else action=start; fi
    if "$DRY_RUN"; then
        echo "haproxy: would $action"
        return 0
    fi
    echo "haproxy: $action"
    [[ -z $ROOT_DIR ]] || return 0
    if [[ $action == reload ]]; then
        reload_haproxy "$@" || die "systemctl reload haproxy failed"
    else
        systemctl_do enable haproxy >/dev/null 2>&1 || log "warning: systemctl enable haproxy failed"
        systemctl_do restart haproxy || die "systemctl start haproxy failed"
    fi
}

report_members() {
    printf 'api: port %s to %s master(s) on %s\n' "$API_PORT" "${#MASTER_NAMES[@]}" "$APISERVER_PORT"
    if [[ ${#WORKER_NAMES[@]} -gt 0 ]]; then
        printf 'nodeports: %s-%s to %s worker(s)\n' "$NODEPORT_FROM" "$NODEPORT_TO" "${#WORKER_NAMES[@]}"
    else
        echo "nodeports: none (no workers, no NodePort frontend)"
    fi
}

# show_diff DEST NEW: what -n prints, a unified diff from DEST (or nothing).
show_diff() {
    local old=$1
    [[ -f $old ]] || old=/dev/null
    diff -u --label "$1" --label "$1 (new)" -- "$old" "$2" || true
}

configure_haproxy() {
    local dest rendered was_running=false
    dest=$(path_of "$HAPROXY_CFG")
    rendered=$(mktemp)
    TEMP_FILES+=("$rendered")
    render_haproxy >"$rendered"
    if same_content "$dest" <"$rendered"; then
        # Unchanged, but maybe stopped (a crash, a reboot without enable).
        if [[ -z $ROOT_DIR ]] && ! haproxy_running "$dest"; then
            apply_haproxy false
        else
            echo "haproxy: unchanged"
        fi
        return 0
    fi
    check_ownership "$dest"
    validate_haproxy "$rendered"
    haproxy_running "$dest" && was_running=true
    local -a left_out=()
    mapfile -t left_out < <(servers_left_out "$dest" "$rendered")
    if "$DRY_RUN"; then
        show_diff "$dest" "$rendered"
    else
        write_file "$dest" 0644 <"$rendered"
    fi
    apply_haproxy "$was_running" "${left_out[@]}"
}

# ------------------------------------------------------------------ main

main() {
    ORIGINAL_ARGS=("$@")
    parse_args "$@"
    validate_args
    ensure_root
    trap 'on_error $? $LINENO' ERR
    trap cleanup EXIT
    step packages install_packages
    report_members
    step haproxy configure_haproxy
    CURRENT_STEP=finished
}

# Sourced (by the bats tests) it only defines its functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
