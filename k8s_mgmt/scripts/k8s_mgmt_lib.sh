# shellcheck shell=bash
# k8s_mgmt_lib.sh: helpers both node scripts source from their own
# directory (the driver uploads it next to them): messages and exits, file
# writing, waits with a deadline, value checks, turns at apt-get, the
# secrets input.
#
# The sourcing script sets PROG (the name messages start with) and
# CURRENT_STEP (the step "die" names), and runs under set -Eeuo pipefail;
# every function here also works without it.

# The last command of a pipeline runs in this shell, so that
# "render | write_file ..." leaves WRITE_FILE_CHANGED where the caller
# reads it (scripts run without job control, where this takes effect).
shopt -s lastpipe

: "${PROG:=${0##*/}}"
CURRENT_STEP=${CURRENT_STEP:-start}
# Files removed on exit (cleanup, run from the script's EXIT trap).
TEMP_FILES=()
# Directories made for one run, removed with their contents at its end.
TEMP_DIRS=()
# Set by write_file: true when it replaced the file, false when unchanged.
WRITE_FILE_CHANGED=false
# While retry_until waits: the deadline, in ms of the wall clock.
RETRY_DEADLINE_MS=""
RETRY_FIRST_DELAY_MS=200
RETRY_MAX_DELAY_MS=5000
# haproxy's hard-stop-after, and how long past it a reload waits for the
# previous workers to be gone (see reload_haproxy).
HAPROXY_HARD_STOP_SECONDS=3
HAPROXY_EXIT_SECONDS=5

# ------------------------------------------------------- messages, exits

log() {
    printf '%s: %s\n' "$PROG" "$*" >&2
}

die() {
    printf '%s: %s: %s\n' "$PROG" "$CURRENT_STEP" "$*" >&2
    exit 1
}

usage_error() {
    printf '%s: %s (see -h)\n' "$PROG" "$*" >&2
    exit 2
}

# The ERR trap: trap 'on_error $? $LINENO' ERR
on_error() {
    local status=$1 line=$2
    printf '%s: step %s failed (exit %s, line %s)\n' \
        "$PROG" "$CURRENT_STEP" "$status" "$line" >&2
    exit "$status"
}

# Work a script started with "&" (a subshell and what it runs) does not
# outlive it: a failed run leaves nothing going on, nor anything reading a
# temporary file that is about to go.
BACKGROUND_PIDS=()
cleanup() {
    local pid
    for pid in "${BACKGROUND_PIDS[@]}"; do
        pkill -TERM -P "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    done
    [[ ${#TEMP_FILES[@]} -eq 0 ]] || rm -f -- "${TEMP_FILES[@]}"
    [[ ${#TEMP_DIRS[@]} -eq 0 ]] || rm -rf -- "${TEMP_DIRS[@]}"
}

have() {
    command -v "$1" >/dev/null 2>&1
}

# become_root ARGS...: re-run this script as root with ARGS (its original
# arguments) through sudo -n, which never prompts; stdin, which may carry
# the secrets, passes through.
become_root() {
    [[ $EUID -eq 0 ]] && return 0
    have sudo || die "not root and no sudo"
    exec sudo -n -- "$BASH" "$0" "$@"
}

# ---------------------------------------------------------------- checks

# IPv4 only (IPv6 is not supported); no leading zeros, which some tools read
# as octal. k8s_mgmt/accepted.py holds the same rules for the driver.
is_ipv4() {
    local part
    [[ $1 =~ ^(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})$ ]] || return 1
    for part in "${BASH_REMATCH[@]:1}"; do
        ((part <= 255)) || return 1
    done
}

# A host name: labels of letters, digits and inner "-", 253 characters at
# most.
is_host_name() {
    local name_re='^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$'
    [[ ${#1} -le 253 && $1 =~ $name_re ]]
}

# in_range VALUE MIN MAX: VALUE is a decimal number within [MIN, MAX].
in_range() {
    [[ $1 =~ ^[0-9]{1,5}$ ]] && ((10#$1 >= $2 && 10#$1 <= $3))
}

is_port() {
    in_range "$1" 1 65535
}

# ---------------------------------------------------------------- files

# same_content FILE: stdin equals FILE, byte for byte.
same_content() {
    [[ -f $1 ]] && cmp -s -- - "$1"
}

# write_file DEST MODE: stdin becomes DEST with MODE, unless DEST already
# holds exactly that content (then only its mode is corrected and its mtime
# stays). Returns 0 in both cases and non-zero when it cannot write;
# WRITE_FILE_CHANGED says which case it was. The new content goes to a
# temporary file next to DEST (same file system, same privacy: the join
# config with its token stays on /run) and is renamed over DEST.
# shellcheck disable=SC2034 # WRITE_FILE_CHANGED is for the caller
write_file() {
    local dest=$1 mode=$2 tmp
    WRITE_FILE_CHANGED=false
    mkdir -p -- "$(dirname -- "$dest")" || return
    tmp=$(mktemp -- "$dest.XXXXXX") || return
    if ! cat >"$tmp"; then
        rm -f -- "$tmp"
        return 1
    fi
    if same_content "$dest" <"$tmp"; then
        rm -f -- "$tmp"
        [[ $(stat -c '%a' -- "$dest") == "$(printf '%o' "$((8#$mode))")" ]] ||
            chmod -- "$mode" "$dest"
        return
    fi
    # -T: a directory at DEST is an error, not a place to move into.
    if ! chmod -- "$mode" "$tmp" || ! mv -fT -- "$tmp" "$dest"; then
        rm -f -- "$tmp"
        return 1
    fi
    WRITE_FILE_CHANGED=true
}

# ---------------------------------------------------------------- waits

# Milliseconds of the wall clock (bash 5; digits only, whatever the locale).
now_ms() {
    local micros=${EPOCHREALTIME//[^0-9]/}
    printf '%s\n' "$((10#$micros / 1000))"
}

# The pause after one that lasted DELAY_MS: doubled, at most 5 s.
retry_delay_ms() {
    local doubled=$(($1 * 2))
    printf '%s\n' "$((doubled > RETRY_MAX_DELAY_MS ? RETRY_MAX_DELAY_MS : doubled))"
}

# retry_until SECONDS CMD...: run CMD until it succeeds, pausing 0.2 s,
# then twice as long each time up to 5 s, never past the deadline SECONDS
# from now; CMD runs once more at the deadline. Returns 0 when CMD
# succeeded, else CMD's last status. While it waits, RETRY_DEADLINE_MS
# holds the deadline, so that one attempt can be cut to it (call_seconds).
retry_until() {
    local seconds=$1 delay_ms=$RETRY_FIRST_DELAY_MS left_ms status
    shift
    RETRY_DEADLINE_MS=$(($(now_ms) + seconds * 1000))
    while true; do
        status=0
        "$@" || status=$?
        ((status != 0)) || break
        left_ms=$((RETRY_DEADLINE_MS - $(now_ms)))
        ((left_ms > 0)) || break
        ((delay_ms < left_ms)) || delay_ms=$left_ms
        sleep "$((delay_ms / 1000)).$(printf '%03d' $((delay_ms % 1000)))"
        delay_ms=$(retry_delay_ms "$delay_ms")
    done
    RETRY_DEADLINE_MS=""
    return "$status"
}

# call_seconds CAP: whole seconds one call may take: CAP, or what is left of
# the current wait's deadline when that is less (at least 1).
call_seconds() {
    local cap=$1 left_ms
    if [[ -n $RETRY_DEADLINE_MS ]]; then
        left_ms=$((RETRY_DEADLINE_MS - $(now_ms)))
        ((left_ms >= cap * 1000)) || cap=$(((left_ms + 999) / 1000))
    fi
    ((cap >= 1)) || cap=1
    printf '%s\n' "$cap"
}

# ------------------------------------------------------------------ apt

# Our scripts take turns at apt-get on a node: two of them may run there at
# once (a master's prepare while its load balancer is set up), and apt-get
# update does not wait for another apt-get's lock on the package lists: it
# fails at once ("Could not get lock /var/lib/apt/lists/lock") whatever
# DPkg::Lock::Timeout says (apt 2.6: that option covers dpkg's lock only).
APT_TURN_LOCK=/run/k8s-mgmt-apt.lock

# apt_turn SECONDS CMD...: CMD once none of our scripts on this node runs
# apt-get; waits up to SECONDS for the turn (then fails: flock's status 1).
apt_turn() {
    local seconds=$1
    shift
    flock -w "$seconds" "$APT_TURN_LOCK" "$@"
}

# apt_get ARGS...: apt-get, non-interactive, keeping changed conffiles,
# with the calling script's APT_FETCH_SECONDS per fetch and
# DPKG_LOCK_SECONDS for the locks, on its turn (apt_turn); its output on
# stderr. (The install and load-balancer scripts have their own.)
apt_get() {
    apt_turn "$DPKG_LOCK_SECONDS" env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Options::=--force-confold \
        -o "Acquire::http::Timeout=$APT_FETCH_SECONDS" -o "Acquire::https::Timeout=$APT_FETCH_SECONDS" \
        -o Acquire::Retries=3 -o "DPkg::Lock::Timeout=$DPKG_LOCK_SECONDS" "$@" >&2
}

# -------------------------------------------------------------- secrets

# A secrets file must not be readable by group or others.
check_secret_file() {
    local file=$1 mode
    [[ -f $file ]] || usage_error "secrets file not found: $file"
    mode=$(stat -c '%a' -- "$file")
    (((8#$mode & 8#077) == 0)) || usage_error "secrets file $file has mode $mode; want 0600 or stricter"
}

# read_secret_lines SOURCE STORE [WANT]: KEY=VALUE lines from SOURCE (a
# file, see check_secret_file, or - for stdin), each handed to STORE KEY
# VALUE; blank lines and # comments are skipped. WANT names the expected
# form in the message about a line without "=".
read_secret_lines() {
    local source=$1 store=$2 want=${3:-KEY=VALUE} line fd
    if [[ $source != - ]]; then
        check_secret_file "$source"
        exec {fd}<"$source"
    else
        exec {fd}<&0
    fi
    while IFS= read -r line <&"$fd" || [[ -n $line ]]; do
        line=${line%$'\r'}
        [[ -z $line || $line == \#* ]] && continue
        [[ $line == *=* ]] || usage_error "secrets input line without '=' (want $want)"
        "$store" "${line%%=*}" "${line#*=}"
    done
    exec {fd}<&-
}

# The end of HAProxy's global section and its defaults, the same in both
# load-balancer scripts: TCP pass-through, timeouts long enough for watches.
haproxy_common() {
    cat <<EOF
    # A reload leaves the previous workers carrying their connections
    # (watches: up to "timeout client") to the servers they knew, one just
    # taken out of the config included; they are cut this long after the
    # reload, and their clients reconnect to the new workers.
    hard-stop-after ${HAPROXY_HARD_STOP_SECONDS}s
    user haproxy
    group haproxy

defaults
    mode tcp
    log global
    option tcplog
    option dontlognull
    # A connection to a server that died but is not marked down yet (two
    # failed checks: up to about 3.5 s) is tried again on another server
    # after 1 s, not three more times on the dead one (redispatch 1: every
    # retry). The servers share one network, where a connect takes
    # milliseconds; refused at once, the retry goes to another at once.
    retries 3
    option redispatch 1
    timeout connect 1s
    # Long timeouts keep kubectl/controller watches open.
    timeout client 1h
    timeout server 1h
EOF
}

# The workers of haproxy's master-worker process MAIN_PID, one pid a line.
haproxy_workers() {
    pgrep -P "$1" -x haproxy || true
}

# True once none of the pids given runs any more.
all_gone() {
    local pid
    for pid; do
        [[ ! -e /proc/$pid ]] || return 1
    done
}

# The address (IP or IP:PORT) of each "server" line of haproxy config FILE.
haproxy_servers() {
    [[ -f $1 ]] || return 0
    awk '$1 == "server" && NF >= 3 { print $3 }' "$1" | sort -u
}

# The servers of haproxy config OLD that config NEW (a file) lacks.
servers_left_out() {
    comm -23 <(haproxy_servers "$1") <(haproxy_servers "$2")
}

# The established TCP connections of the processes PIDS (a space-separated
# list) to ADDRESS (IP or IP:PORT), one "SRC DST" line each.
connections_to() {
    local pids=" $1 " address=$2 ip port line src dst owner pid
    ip=${address%%:*}
    port=${address#"$ip"}
    port=${port#:}
    local -a filter=(dst "$ip")
    [[ -z $port ]] || filter+=(dport '=' ":$port")
    ss -tnpH state established "${filter[@]}" 2>/dev/null | while read -r _recv _send src dst owner; do
        while read -r pid; do
            if [[ -n $pid && $pids == *" $pid "* ]]; then
                echo "$src $dst"
                break
            fi
        done < <(grep -o 'pid=[0-9]*' <<<"$owner" | cut -d= -f2)
    done
}

# Cut (ss -K) the connections of the processes PIDS to each ADDRESS given:
# best effort (a kernel without socket destruction leaves them to
# hard-stop-after).
cut_connections() {
    local pids=$1 address src dst
    shift
    for address; do
        while read -r src dst; do
            [[ -n $src ]] || continue
            ss -K -tnH state established src "${src%:*}" sport '=' ":${src##*:}" \
                dst "${dst%:*}" dport '=' ":${dst##*:}" >/dev/null 2>&1 || true
        done < <(connections_to "$pids" "$address")
    done
}

# True once the processes PIDS hold no connection to any ADDRESS given (or
# are gone).
unreached() {
    local pids=$1 address
    shift
    # shellcheck disable=SC2086 # the pids, one word each
    all_gone $pids && return 0
    for address; do
        [[ -z $(connections_to "$pids" "$address") ]] || return 1
    done
}

# reload_haproxy [LEFT_OUT...]: reload the running haproxy. LEFT_OUT are the
# servers (IP or IP:PORT) the previous config had and the new one lacks:
# the previous workers' connections to them are cut, and this returns once
# none is left (at the latest when those workers are gone, which
# hard-stop-after bounds): no connection goes to a server the new config
# left out. With none left out the previous workers only finish what they
# carry to servers the new config has too: nothing to wait for. Which
# workers are old comes from the master's children before the reload
# (systemd's MainPID of the unit).
reload_haproxy() {
    local main previous=()
    main=$(systemctl_do show --property=MainPID --value haproxy 2>/dev/null) || main=
    if [[ $main =~ ^[1-9][0-9]*$ ]]; then
        mapfile -t previous < <(haproxy_workers "$main")
    fi
    systemctl_do reload haproxy || return 1
    ((${#previous[@]} && $#)) || return 0
    cut_connections "${previous[*]}" "$@"
    local RETRY_MAX_DELAY_MS=200
    retry_until $((HAPROXY_HARD_STOP_SECONDS + HAPROXY_EXIT_SECONDS)) unreached "${previous[*]}" "$@" ||
        log "warning: haproxy's previous workers (${previous[*]}) still reach" \
            "$* $((HAPROXY_HARD_STOP_SECONDS + HAPROXY_EXIT_SECONDS)) s after the reload"
}

# Run "$@" as step $1 of the script: die and on_error name it.
step() {
    CURRENT_STEP=$1
    shift
    "$@"
}
