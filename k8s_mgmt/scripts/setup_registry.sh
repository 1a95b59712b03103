#!/usr/bin/env bash
# setup_registry.sh: a private container registry on this VM: Debian's
# docker-registry serving HTTPS, its images and its TLS material under one
# directory (the mount point of its volume, prepared by setup_storage.sh),
# so that a VM rebuilt on the same volume serves the same images with the
# same certificate.
#
# Usage: setup_registry.sh --listen IP:PORT --dir DIR
#            (--self-signed NAME[,NAME...] | --certificate FILE --ca FILE
#             --key FILE) [-w SECONDS]
# Prints, last, a summary such as
# "registry: https://10.0.0.9:5000 active (certificate kept), images in
#  /srv/registry/data"; with --self-signed the certificate clients must
# trust is DIR/tls/tls.crt.
set -Eeuo pipefail
umask 022

readonly PROG=setup_registry.sh
LIB=$(dirname -- "${BASH_SOURCE[0]}")/k8s_mgmt_lib.sh
[[ -f $LIB ]] || { printf '%s: %s is missing (it comes with this script)\n' "$PROG" "$LIB" >&2; exit 1; }
# shellcheck source-path=SCRIPTDIR source=k8s_mgmt_lib.sh
source "$LIB"

readonly PACKAGE=docker-registry
readonly SERVICE=docker-registry
# The package's system user (a test sets another).
SERVICE_USER=docker-registry
CONFIG=/etc/docker/registry/config.yml
# A self-signed certificate is good for ten years; its key is P-256.
readonly SELF_SIGNED_DAYS=3650
readonly APT_FETCH_SECONDS=30
readonly DPKG_LOCK_SECONDS=300

LISTEN=""
ADDRESS=""
PORT=""
DIR=""
SELF_SIGNED=""
CERTIFICATE=""
CA_FILE=""
KEY_FILE=""
WAIT_SECONDS=120
CURRENT_STEP="arguments"
# What the TLS step did: made, installed, kept.
TLS_OUTCOME=""

usage() {
    cat <<'EOF'
Usage: setup_registry.sh --listen IP:PORT --dir DIR
           (--self-signed NAME[,NAME...] | --certificate FILE --ca FILE --key FILE)
           [-w SECONDS]

Installs Debian's docker-registry and runs it on IP:PORT over HTTPS, its
images in DIR/data and its certificate and key in DIR/tls (DIR: the mount
point of the registry's volume; nothing there is ever deleted).

  --listen IP:PORT   the address (an IPv4 address of this VM) and port
  --dir DIR          where images and TLS material live
  --self-signed NAMES
             make a self-signed certificate for IP and the comma-separated
             host NAMES when DIR/tls has none; one already there is kept,
             and refused when it does not name them all (never replaced:
             clients trust it). Clients trust DIR/tls/tls.crt.
  --certificate FILE the registry's certificate (PEM, with its chain)
  --ca FILE          the CA that signed it (checked before anything changes)
  --key FILE         its private key (mode 0600 or stricter); copied into
                     DIR/tls, readable by the registry's user only
  -w SECONDS         how long to wait for the registry to answer (default 120)
  -h                 this help

Exit status: 0 done, 2 bad arguments, 1 a step failed (named on stderr).
EOF
}

# ------------------------------------------------------------ arguments

parse_args() {
    while [[ $# -gt 0 ]]; do
        case $1 in
            --listen | --dir | --self-signed | --certificate | --ca | --key | -w)
                [[ $# -ge 2 ]] || usage_error "option $1 needs a value"
                case $1 in
                    --listen) LISTEN=$2 ;;
                    --dir) DIR=$2 ;;
                    --self-signed) SELF_SIGNED=$2 ;;
                    --certificate) CERTIFICATE=$2 ;;
                    --ca) CA_FILE=$2 ;;
                    --key) KEY_FILE=$2 ;;
                    -w) WAIT_SECONDS=$2 ;;
                esac
                shift 2
                ;;
            -h | --help) usage; exit 0 ;;
            -*) usage_error "unknown option $1" ;;
            *) usage_error "unexpected argument: $1" ;;
        esac
    done
}

is_host_name() {
    [[ ${#1} -le 253 && $1 =~ ^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$ ]]
}

validate_args() {
    [[ $LISTEN =~ ^([0-9.]+):([0-9]+)$ ]] || usage_error "--listen needs IP:PORT, not '$LISTEN'"
    ADDRESS=${BASH_REMATCH[1]} PORT=${BASH_REMATCH[2]}
    is_ipv4 "$ADDRESS" || usage_error "--listen: '$ADDRESS' is not an IPv4 address"
    is_port "$PORT" || usage_error "--listen: '$PORT' is not a port from 1 to 65535"
    [[ $DIR =~ ^/[A-Za-z0-9/._+-]*$ && $DIR != */../* && $DIR != */.. && $DIR != / ]] ||
        usage_error "--dir needs an absolute path of A-Z a-z 0-9 / . _ + - without '..', not '$DIR'"
    [[ $WAIT_SECONDS =~ ^[0-9]+$ ]] || usage_error "bad -w seconds: '$WAIT_SECONDS'"
    if [[ -n $SELF_SIGNED ]]; then
        [[ -z $CERTIFICATE$CA_FILE$KEY_FILE ]] ||
            usage_error "--self-signed or --certificate with --ca and --key, not both"
        local name
        local -a names
        IFS=, read -r -a names <<<"$SELF_SIGNED"
        ((${#names[@]})) || usage_error "--self-signed needs host names"
        for name in "${names[@]}"; do
            is_host_name "$name" || usage_error "--self-signed: '$name' is not a host name"
        done
    else
        [[ -n $CERTIFICATE && -n $CA_FILE && -n $KEY_FILE ]] ||
            usage_error "give --self-signed NAMES, or --certificate, --ca and --key"
        local file
        for file in "$CERTIFICATE" "$CA_FILE"; do
            [[ -f $file ]] || usage_error "no such file: $file"
        done
        check_secret_file "$KEY_FILE"
    fi
}

# ------------------------------------------------------------------ apt

apt_get() {
    apt_turn "$DPKG_LOCK_SECONDS" env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Options::=--force-confold \
        -o "Acquire::http::Timeout=$APT_FETCH_SECONDS" -o "Acquire::https::Timeout=$APT_FETCH_SECONDS" \
        -o Acquire::Retries=3 -o "DPkg::Lock::Timeout=$DPKG_LOCK_SECONDS" "$@" >&2
}

install_package() {
    if [[ $(dpkg-query -W -f='${Status}' "$PACKAGE" 2>/dev/null) == "install ok installed" ]]; then
        log "$PACKAGE already installed"
        return 0
    fi
    apt_get update || die "apt-get update failed"
    apt_get install "$PACKAGE" || die "apt-get install $PACKAGE failed"
}

# ------------------------------------------------------------------ TLS

# The subjectAltName entries a certificate must hold: the address, and the
# --self-signed names.
wanted_names() {
    local name
    local -a names=()
    [[ -z $SELF_SIGNED ]] || IFS=, read -r -a names <<<"$SELF_SIGNED"
    printf 'IP:%s\n' "$ADDRESS"
    for name in "${names[@]}"; do
        printf 'DNS:%s\n' "$name"
    done
}

# names_missing CERT: the wanted names CERT does not carry, one a line.
names_missing() {
    local cert=$1 want
    while IFS= read -r want; do
        case $want in
            IP:*) openssl x509 -in "$cert" -noout -checkip "${want#IP:}" 2>/dev/null |
                grep -q 'does match' || printf '%s\n' "$want" ;;
            DNS:*) openssl x509 -in "$cert" -noout -checkhost "${want#DNS:}" 2>/dev/null |
                grep -q 'does match' || printf '%s\n' "$want" ;;
        esac
    done < <(wanted_names)
}

tls_self_signed() {
    local tls=$DIR/tls missing subject_alt
    if [[ -f $tls/tls.crt && -f $tls/tls.key ]]; then
        missing=$(names_missing "$tls/tls.crt")
        [[ -z $missing ]] || die "the certificate in $tls does not name ${missing//$'\n'/ }: it is kept (clients trust it); move $tls away to have a new one made"
        TLS_OUTCOME="certificate kept"
        return 0
    fi
    subject_alt=$(wanted_names | paste -sd, -)
    install -d -m 0750 -o root -g "$SERVICE_USER" -- "$tls"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -days "$SELF_SIGNED_DAYS" -subj "/CN=k8s-mgmt registry $ADDRESS" \
        -addext "subjectAltName=$subject_alt" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -keyout "$tls/tls.key.new" -out "$tls/tls.crt.new" 2>/dev/null ||
        die "openssl could not make the certificate"
    chown "root:$SERVICE_USER" -- "$tls/tls.key.new"
    chmod 0640 -- "$tls/tls.key.new"
    chmod 0644 -- "$tls/tls.crt.new"
    mv -fT -- "$tls/tls.key.new" "$tls/tls.key"
    mv -fT -- "$tls/tls.crt.new" "$tls/tls.crt"
    TLS_OUTCOME="certificate made"
}

tls_given() {
    local tls=$DIR/tls missing
    openssl verify -CAfile "$CA_FILE" "$CERTIFICATE" >/dev/null 2>&1 ||
        die "$CERTIFICATE is not signed by the CA in $CA_FILE"
    missing=$(names_missing "$CERTIFICATE")
    [[ -z $missing ]] || die "$CERTIFICATE does not name ${missing//$'\n'/ }"
    install -d -m 0750 -o root -g "$SERVICE_USER" -- "$tls"
    write_file "$tls/tls.crt" 0644 <"$CERTIFICATE" || die "cannot write $tls/tls.crt"
    local changed=$WRITE_FILE_CHANGED
    write_file "$tls/tls.key" 0640 <"$KEY_FILE" || die "cannot write $tls/tls.key"
    chown "root:$SERVICE_USER" -- "$tls/tls.key"
    write_file "$tls/ca.crt" 0644 <"$CA_FILE" || die "cannot write $tls/ca.crt"
    if $changed || $WRITE_FILE_CHANGED; then
        TLS_OUTCOME="certificate installed"
    else
        TLS_OUTCOME="certificate kept"
    fi
}

configure_tls() {
    if [[ -n $SELF_SIGNED ]]; then tls_self_signed; else tls_given; fi
}

# -------------------------------------------------------------- service

render_config() {
    cat <<EOF
# Written by $PROG: images and TLS material under $DIR.
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $DIR/data
  delete:
    enabled: false
http:
  addr: $ADDRESS:$PORT
  tls:
    certificate: $DIR/tls/tls.crt
    key: $DIR/tls/tls.key
EOF
}

CONFIG_CHANGED=false
SERVICE_OUTCOME=""

configure_service() {
    install -d -m 0750 -o "$SERVICE_USER" -g "$SERVICE_USER" -- "$DIR/data"
    render_config | write_file "$CONFIG" 0644 || die "cannot write $CONFIG"
    CONFIG_CHANGED=$WRITE_FILE_CHANGED
}

# The registry answers /v2/ over HTTPS, verified with the CA clients use.
answers() {
    local ca=$DIR/tls/tls.crt
    [[ -n $SELF_SIGNED ]] || ca=$DIR/tls/ca.crt
    [[ $(curl -sS -o /dev/null -w '%{http_code}' --max-time "$(call_seconds 5)" \
        --cacert "$ca" "https://$ADDRESS:$PORT/v2/" 2>/dev/null) == 200 ]]
}

start_service() {
    local outcome
    if systemctl is-active --quiet "$SERVICE"; then
        if $CONFIG_CHANGED || [[ $TLS_OUTCOME != "certificate kept" ]]; then
            systemctl restart "$SERVICE" >&2 || die "systemctl restart $SERVICE failed"
            outcome=restarted
        else
            outcome="already active"
        fi
    else
        systemctl start "$SERVICE" >&2 || die "systemctl start $SERVICE failed"
        outcome=started
    fi
    retry_until "$WAIT_SECONDS" answers ||
        die "$SERVICE does not answer https://$ADDRESS:$PORT/v2/ within $WAIT_SECONDS s (after: $outcome)"
    SERVICE_OUTCOME=$outcome
}

# ------------------------------------------------------------------ main

step() {
    CURRENT_STEP=$1
    shift
    log "==> $CURRENT_STEP"
    "$@"
}

main() {
    ORIGINAL_ARGS=("$@")
    parse_args "$@"
    validate_args
    become_root "${ORIGINAL_ARGS[@]}"
    trap 'on_error $? $LINENO' ERR
    trap cleanup EXIT
    step package install_package
    step TLS configure_tls
    step configuration configure_service
    step service start_service
    CURRENT_STEP=finished
    echo "registry: https://$ADDRESS:$PORT $SERVICE_OUTCOME ($TLS_OUTCOME), images in $DIR/data"
}

# Sourced (by the bats tests) it only defines its functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
