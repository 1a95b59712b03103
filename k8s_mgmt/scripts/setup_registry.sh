#!/usr/bin/env bash
# setup_registry.sh: a private container registry on this VM: Debian's
# docker-registry serving HTTPS, its images and its TLS material under one
# directory (the mount point of its volume, prepared by setup_storage.sh),
# so that a VM rebuilt on the same volume serves the same images with the
# same certificate.
#
# Usage: setup_registry.sh --listen IP:PORT --dir DIR
#            (--self-signed NAME[,NAME...] | --self-signed-ip |
#             --certificate FILE --ca FILE (--key FILE | -s with tls_key_base64))
#            [--require-mount] [--print-ca] [-s FILE|-] [-w SECONDS]
# Prints a summary such as "registry: https://10.0.0.9:5000 already active
# (certificate kept), images in /srv/registry/data"; with --print-ca then
# the PEM certificate clients must trust.
# k8s-mgmt-features: print-ca secrets require-mount
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
DROP_IN=/etc/systemd/system/docker-registry.service.d/k8s-mgmt.conf
# A self-signed certificate is good for ten years; its key is P-256.
readonly SELF_SIGNED_DAYS=3650
readonly APT_FETCH_SECONDS=30
readonly DPKG_LOCK_SECONDS=300

LISTEN=""
ADDRESS=""
PORT=""
DIR=""
SELF_SIGNED=""
# How the registry gets its certificate: self-signed (for the address and
# SELF_SIGNED's names) or given (--certificate, --ca and a key).
TLS_MODE=""
REQUIRE_MOUNT=false
PRINT_CA=false
SECRETS_SOURCE=""
# The operator's key from the secrets input (base64 of the PEM: one line).
KEY_BASE64=""
HTTP_PROXY_URL=""
HTTPS_PROXY_URL=""
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
           (--self-signed NAME[,NAME...] | --self-signed-ip |
            --certificate FILE --ca FILE (--key FILE | -s with tls_key_base64))
           [--require-mount] [--print-ca] [-s FILE|-] [-w SECONDS]

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
  --self-signed-ip   the same, for the address alone
  --certificate FILE the registry's certificate (PEM, with its chain)
  --ca FILE          the CA that signed it (checked before anything changes)
  --key FILE         its private key (mode 0600 or stricter); copied into
                     DIR/tls, readable by the registry's user only; or
                     tls_key_base64 on the secrets input
  --require-mount    DIR must be a mount point (the registry's volume),
                     and the service waits for it at boot
  --print-ca         after the summary, the PEM certificate clients trust
  -s FILE|-          KEY=VALUE lines (FILE mode 0600 or stricter, or - for
                     stdin): http_proxy, https_proxy (for apt),
                     tls_key_base64; never on the command line
  -w SECONDS         how long to wait for the registry to answer (default 120)
  -h                 this help

Exit status: 0 done, 2 bad arguments, 1 a step failed (named on stderr).
EOF
}

# ------------------------------------------------------------ arguments

parse_args() {
    while [[ $# -gt 0 ]]; do
        case $1 in
            --listen | --dir | --self-signed | --certificate | --ca | --key | -w | -s)
                [[ $# -ge 2 ]] || usage_error "option $1 needs a value"
                case $1 in
                    --listen) LISTEN=$2 ;;
                    --dir) DIR=$2 ;;
                    --self-signed) SELF_SIGNED=$2 TLS_MODE+=" self-signed" ;;
                    -s) SECRETS_SOURCE=$2 ;;
                    --certificate) CERTIFICATE=$2 TLS_MODE+=" given" ;;
                    --ca) CA_FILE=$2 ;;
                    --key) KEY_FILE=$2 ;;
                    -w) WAIT_SECONDS=$2 ;;
                esac
                shift 2
                ;;
            --self-signed-ip) TLS_MODE+=" self-signed"; shift ;;
            --require-mount) REQUIRE_MOUNT=true; shift ;;
            --print-ca) PRINT_CA=true; shift ;;
            -h | --help) usage; exit 0 ;;
            -*) usage_error "unknown option $1" ;;
            *) usage_error "unexpected argument: $1" ;;
        esac
    done
}

validate_args() {
    [[ $LISTEN =~ ^([0-9.]+):([0-9]+)$ ]] || usage_error "--listen needs IP:PORT, not '$LISTEN'"
    ADDRESS=${BASH_REMATCH[1]} PORT=${BASH_REMATCH[2]}
    is_ipv4 "$ADDRESS" || usage_error "--listen: '$ADDRESS' is not an IPv4 address"
    is_port "$PORT" || usage_error "--listen: '$PORT' is not a port from 1 to 65535"
    [[ $DIR =~ ^/[A-Za-z0-9/._+-]*$ && $DIR != */../* && $DIR != */.. && $DIR != / ]] ||
        usage_error "--dir needs an absolute path of A-Z a-z 0-9 / . _ + - without '..', not '$DIR'"
    [[ $WAIT_SECONDS =~ ^[0-9]+$ ]] || usage_error "bad -w seconds: '$WAIT_SECONDS'"
    TLS_MODE=${TLS_MODE# }
    case $TLS_MODE in
        self-signed)
            [[ -z $CA_FILE$KEY_FILE ]] ||
                usage_error "--ca and --key go with --certificate, not with a self-signed one"
            local name
            local -a names=()
            [[ -z $SELF_SIGNED ]] || IFS=, read -r -a names <<<"$SELF_SIGNED"
            for name in "${names[@]}"; do
                is_host_name "$name" || usage_error "--self-signed: '$name' is not a host name"
            done
            ;;
        given)
            [[ -n $CA_FILE ]] || usage_error "--certificate needs --ca"
            local file
            for file in "$CERTIFICATE" "$CA_FILE"; do
                [[ -f $file ]] || usage_error "no such file: $file"
            done
            [[ -z $KEY_FILE ]] || check_secret_file "$KEY_FILE"
            ;;
        "") usage_error "give --self-signed NAMES, --self-signed-ip, or --certificate, --ca and the key" ;;
        *) usage_error "one certificate: --self-signed NAMES, --self-signed-ip or --certificate, not more" ;;
    esac
    [[ -z $SECRETS_SOURCE || $SECRETS_SOURCE == - ]] || check_secret_file "$SECRETS_SOURCE"
}

store_secret() {
    case $1 in
        http_proxy) HTTP_PROXY_URL=$2 ;;
        https_proxy) HTTPS_PROXY_URL=$2 ;;
        tls_key_base64) KEY_BASE64=$2 ;;
        *) usage_error "unknown secrets key '$1' (want http_proxy, https_proxy or tls_key_base64)" ;;
    esac
}

# After the secrets input: a given certificate needs its key from one
# place.
check_key_source() {
    [[ $TLS_MODE == given ]] || {
        [[ -z $KEY_BASE64 ]] || usage_error "tls_key_base64 goes with --certificate"
        return 0
    }
    [[ -n $KEY_FILE || -n $KEY_BASE64 ]] || usage_error "--certificate needs its key: --key FILE or tls_key_base64 on the secrets input"
    [[ -z $KEY_FILE || -z $KEY_BASE64 ]] || usage_error "the key by --key or by tls_key_base64, not both"
    local pem
    pem=$(key_pem 2>/dev/null) || usage_error "tls_key_base64 is not base64"
    [[ $pem == *"-----BEGIN "*"PRIVATE KEY-----"* ]] || usage_error "the key is not a PEM private key"
}

# ------------------------------------------------------------------ apt


install_package() {
    [[ -z $HTTP_PROXY_URL ]] || export http_proxy=$HTTP_PROXY_URL
    [[ -z $HTTPS_PROXY_URL ]] || export https_proxy=$HTTPS_PROXY_URL
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
    [[ $TLS_MODE != self-signed || -z $SELF_SIGNED ]] || IFS=, read -r -a names <<<"$SELF_SIGNED"
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
    key_pem | write_file "$tls/tls.key" 0640 || die "cannot write $tls/tls.key"
    chown "root:$SERVICE_USER" -- "$tls/tls.key"
    write_file "$tls/ca.crt" 0644 <"$CA_FILE" || die "cannot write $tls/ca.crt"
    if $changed || $WRITE_FILE_CHANGED; then
        TLS_OUTCOME="certificate installed"
    else
        TLS_OUTCOME="certificate kept"
    fi
}

# The operator's key: its file, or the secrets input's base64.
key_pem() {
    if [[ -n $KEY_FILE ]]; then
        cat -- "$KEY_FILE"
    else
        base64 -d <<<"$KEY_BASE64"
    fi
}

configure_tls() {
    if [[ $TLS_MODE == self-signed ]]; then tls_self_signed; else tls_given; fi
}

# The PEM clients trust.
trusted_ca() {
    if [[ $TLS_MODE == self-signed ]]; then
        printf '%s\n' "$DIR/tls/tls.crt"
    else
        printf '%s\n' "$DIR/tls/ca.crt"
    fi
}

# DIR must be the registry's volume, mounted; at boot the service waits for
# that mount rather than writing images to the root disk.
check_mount() {
    "$REQUIRE_MOUNT" || return 0
    mountpoint -q -- "$DIR" || die "$DIR is not a mount point: the registry's volume is not mounted there"
    printf '[Unit]\n# Written by %s: no registry without its volume.\nRequiresMountsFor=%s\n' "$PROG" "$DIR" |
        write_file "$DROP_IN" 0644 || die "cannot write $DROP_IN"
    if "$WRITE_FILE_CHANGED"; then
        systemctl daemon-reload >&2 || die "systemctl daemon-reload failed"
    fi
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
    local ca
    ca=$(trusted_ca)
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
    [[ -z $SECRETS_SOURCE ]] || read_secret_lines "$SECRETS_SOURCE" store_secret
    check_key_source
    trap 'on_error $? $LINENO' ERR
    trap cleanup EXIT
    step volume check_mount
    step package install_package
    step TLS configure_tls
    step configuration configure_service
    step service start_service
    CURRENT_STEP=finished
    echo "registry: https://$ADDRESS:$PORT $SERVICE_OUTCOME ($TLS_OUTCOME), images in $DIR/data"
    if "$PRINT_CA"; then cat -- "$(trusted_ca)"; fi
}

# Sourced (by the bats tests) it only defines its functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
