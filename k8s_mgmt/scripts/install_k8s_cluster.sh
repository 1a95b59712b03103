#!/usr/bin/env bash
# install_k8s_cluster.sh: turn one Ubuntu 22.04/24.04 or Debian 12 VM into a
# Kubernetes node with kubeadm (containerd, pkgs.k8s.io packages, a kubeadm
# config file), or read join data / a VIM token from an existing master.
#
# Usage: install_k8s_cluster.sh MODE [options]
#   MODE: init | join-master | join-worker | print-join | token-secret | prepare
# Secrets (join token, certificate key, proxy URLs, which may carry a
# password) are read as KEY=VALUE lines from stdin (-s -) or from a file that
# only its owner can read (-s FILE); never from the command line.
# Run with -h for the options. doc/source/scripts.rst describes every step.
# What this version offers beyond the first one; the driver reads this line
# before it passes the options (a VNF package may ship an older copy):
# k8s-mgmt-features: init-report prepare join-first apt-turn prepared apt-repo registries helm cni-edits registry-auth upgrade certs certs-renew
set -Eeuo pipefail
umask 077

readonly PROG=install_k8s_cluster.sh
# The helpers shared with configure_lb.sh; the driver uploads them next to
# this script.
LIB=$(dirname -- "${BASH_SOURCE[0]}")/k8s_mgmt_lib.sh
[[ -f $LIB ]] || { printf '%s: %s is missing (it comes with this script)\n' "$PROG" "$LIB" >&2; exit 1; }
# shellcheck source-path=SCRIPTDIR source=k8s_mgmt_lib.sh
source "$LIB"
# The upgrade modes, uploaded beside it too (a copy without them refuses
# those modes).
UPGRADE_LIB=$(dirname -- "${BASH_SOURCE[0]}")/k8s_mgmt_upgrade.sh
if [[ -f $UPGRADE_LIB ]]; then
    # shellcheck source-path=SCRIPTDIR source=k8s_mgmt_upgrade.sh
    source "$UPGRADE_LIB"
fi
# Overridable so tests can point the read-only master modes at a fake tree.
readonly STATE_DIR=${K8S_MGMT_STATE_DIR:-/var/lib/k8s-mgmt}
readonly K8S_DIR=${K8S_MGMT_KUBERNETES_DIR:-/etc/kubernetes}
readonly KUBEADM_CONFIG_DIR=$K8S_DIR/k8s-mgmt
readonly ADMIN_CONF=$K8S_DIR/admin.conf
readonly KUBELET_CONF=$K8S_DIR/kubelet.conf
readonly CA_CERT=$K8S_DIR/pki/ca.crt
readonly RUN_DIR=${K8S_MGMT_RUN_DIR:-/run}
readonly CRI_SOCKET=unix:///run/containerd/containerd.sock
# Where containerd reads per-registry hosts.toml files (its config_path),
# the system's CA directory, the hosts file and the mark of its lines from
# -G. Not readonly, as the keyring below: the tests point them elsewhere.
CERTS_D=/etc/containerd/certs.d
CA_DIR=/usr/local/share/ca-certificates
HOSTS_FILE=/etc/hosts
CONTAINERD_CONFIG=/etc/containerd/config.toml
readonly HOSTS_MARK="# k8s-mgmt: private registry"
# Around the registries' credentials in containerd's configuration.
readonly AUTH_BEGIN="# k8s-mgmt: registry credentials begin"
readonly AUTH_END="# k8s-mgmt: registry credentials end"
# Not readonly: the tests point it, the container file and the sysctl tree
# at their own files.
APT_KEYRING=/etc/apt/keyrings/kubernetes-apt-keyring.gpg
readonly APT_SOURCE=/etc/apt/sources.list.d/kubernetes.list
readonly SUPPORTED_MINORS="30 31 32 33 34 35 36 37"
# The packages' home: pkgs.k8s.io's per-minor layout, BASE/v1.MINOR/deb/.
readonly DEFAULT_REPO_URL=https://pkgs.k8s.io/core:/stable:/
# Written by container managers (systemd's convention): this node shares
# the host's kernel, whose modules and swap it cannot change.
CONTAINER_FILE=/run/systemd/container
SYSCTL_DIR=/proc/sys
# Calico as k8s_mgmt/cni_presets.py pins it (a unit test keeps them equal):
# without -c this manifest, checked against this SHA-256.
readonly DEFAULT_CNI_URL=https://raw.githubusercontent.com/projectcalico/calico/v3.31.7/manifests/calico.yaml
readonly DEFAULT_CNI_SHA256=d6d8a489a4ed8e5b8efd8b339047b496ca657b55ee2e3618e791507b0a853e8d
# Bounds on every network call, so a silent endpoint fails the step instead
# of hanging it: one kubectl call, one download (curl), apt's fetches.
readonly KUBECTL_SECONDS=30
readonly CURL_OPTS=(--connect-timeout 15 --max-time 120 --retry 5 --retry-max-time 300)
readonly APT_FETCH_SECONDS=30

MODE=""
K8S_MINOR=1.35
K8S_VERSION=""
REPO_URL=$DEFAULT_REPO_URL
REPO_KEY=""
ADVERTISE_ADDRESS=""
NODE_NAME=""
ENDPOINT=""
POD_CIDR=192.168.0.0/16
SERVICE_CIDR=10.96.0.0/12
NODE_CIDR=""
EXTRA_NO_PROXY=""
EXTRA_SANS=""
CNI_MANIFEST=$DEFAULT_CNI_URL
CNI_SHA256=""
CNI_EDIT=""
MULTUS_MANIFEST=""
MULTUS_SHA256=""
MULTUS_TAG=""
SECRETS_SOURCE=""
CA_CERT_HASH=""
HA=false
REPORT=false
PREPARED=false
RENDER_DIR=""
DRY_RUN=false
WAIT_SECONDS=300
SA_NAME=k8s-mgmt-vim
CURRENT_STEP="arguments"

# Filled from the secrets input only; never printed, never on an argv.
JOIN_TOKEN=""
CERTIFICATE_KEY=""
HTTP_PROXY_URL=""
HTTPS_PROXY_URL=""

usage() {
    cat <<'EOF'
Usage: install_k8s_cluster.sh MODE [options]

Modes:
  init          install the first master (kubeadm init) and the CNI
  join-master   join this VM as a further master (HA)
  join-worker   join this VM as a worker
  print-join    on a master: print a fresh join token, CA hash and (with -A)
                certificate key as JSON on stdout
  token-secret  on a master: create the VIM's ServiceAccount, binding and
                token Secret; print JSON with the token and the CA
  prepare       what init and the joins do first (containerd, kernel
                settings, swap, Kubernetes packages), on its own: run while
                a master is busy, it leaves the join little to do
  helm          install Helm VERSION (-L) from its release archive (-m), checked
                against -M when given; nothing when that version is there
  upgrade-check print the installed versions, the control plane's and what
                the -k minor's repository offers (JSON); changes nothing
  upgrade-apply on the first master: kubeadm -V, kubeadm upgrade apply, then
                kubelet and kubectl -V (needs -a, -H); skips what is done
  upgrade-node  on the other nodes: the same with kubeadm upgrade node
  certs-check   on a master: kubeadm's certificate expiry tables (as kubeadm
                prints them); changes nothing
  certs-renew   on a master: kubeadm certs renew all, its control plane's
                static pods restarted one by one; then the tables

Options:
  -k MINOR    Kubernetes minor version, e.g. 1.35 (default 1.35)
  -V VERSION  exact Kubernetes version of the packages, e.g. 1.35.2 (default:
              the newest of the minor in the repository)
  -r URL      Kubernetes apt repository base: BASE/v1.MINOR/deb/ holds the
              minor's packages (default https://pkgs.k8s.io/core:/stable:/)
  -K URL|FILE the repository's signing key (ASCII-armored or binary OpenPGP);
              default BASE/v1.MINOR/deb/Release.key
  -a IP       advertise address: this node's IP on the cluster network
  -H NAME     node name (default: hostname)
  -e HOST:PORT  control-plane endpoint (HA: VIP:16443); for joins the API
              server to discover
  -A          HA cluster: upload certificates (init), certificate key (print-join)
  -R          init: then print what print-join and token-secret print, as
              one JSON object {"join": {...}, "vim": {...}} on stdout
  -p          init, joins: this node's prepare mode ran moments ago with
              the same options (the driver's same operation): skip its checks
  -P CIDR     pod network (default 192.168.0.0/16)
  -S CIDR     service network (default 10.96.0.0/12)
  -C CIDR     node network, added to no_proxy as a CIDR
  -x LIST     further comma-separated no_proxy entries
  -F LIST     further comma-separated API server certificate SANs
  -c URL|PATH CNI manifest (default: Calico 3.31.7, checked against its
              SHA-256); "none" skips the CNI
  -d SHA256   expected SHA-256 of the CNI manifest
  -N EDIT     change the checked CNI manifest: "flannel-network" sets
              flannel's net-conf Network to the pod network (-P)
  -y URL|PATH Multus manifest, applied after the CNI (needs -Y)
  -Y SHA256   expected SHA-256 of the Multus manifest
  -T TAG      the image tag Multus's floating "snapshot" image is pinned to
  -g URL[,CA] a private container registry, http(s)://HOST[:PORT], and for
              https the file of its CA certificate (repeatable): containerd
              pulls from it as its hosts.toml under /etc/containerd/certs.d
              says, and the CA is trusted system-wide too
  -G LINE     an /etc/hosts line for a registry, "IPv4 NAME..." (repeatable)
  -L VERSION  helm: the Helm release, e.g. 3.16.2
  -m URL|FILE helm: its archive, helm-vVERSION-linux-ARCH.tar.gz
  -M SHA256   helm: the archive's expected SHA-256 (required for a URL)
  -t HASH     CA certificate hash for joins (sha256:<64 hex>)
  -s FILE|-   secrets as KEY=VALUE lines: token, certificate_key,
              http_proxy, https_proxy, registry_auth_N (the N-th -g
              registry's base64 of USER:PASSWORD; https only) (FILE must be
              mode 0600 or stricter)
  -u NAME     ServiceAccount name for token-secret (default k8s-mgmt-vim)
  -w SECONDS  deadline for waits (default 300)
  -o DIR      write the generated files into DIR and stop (no root needed)
  -n          dry run: print the generated files (secrets masked) and the
              commands that would run; change nothing
  -h          this help
EOF
}

# ---------------------------------------------------------------- helpers

# Run one named step; its title goes to stderr, stdout stays machine output.
run_step() {
    local name=$1
    shift
    CURRENT_STEP=$name
    log "==> $name"
    "$@"
}

# Every command that changes the node goes through here (dry run prints it).
run() {
    if "$DRY_RUN"; then
        {
            printf '+'
            printf ' %q' "$@"
            printf '\n'
        } >&4
        return 0
    fi
    "$@"
}

# A network in CIDR form with no host bits set (10.0.0.0/24, not 10.0.0.5/24).
is_cidr() {
    local value=$1 prefix a b c d
    [[ $value == */* ]] || return 1
    is_ipv4 "${value%/*}" || return 1
    [[ ${value#*/} =~ ^[0-9]{1,2}$ ]] && ((10#${value#*/} <= 32)) || return 1
    prefix=$((10#${value#*/}))
    IFS=. read -r a b c d <<<"${value%/*}"
    (((((10#$a << 24) | (10#$b << 16) | (10#$c << 8) | 10#$d) & (0xFFFFFFFF >> prefix)) == 0))
}

is_host_port() {
    local value=$1
    [[ $value =~ ^([A-Za-z0-9.-]+):([0-9]{1,5})$ ]] && is_port "${BASH_REMATCH[2]}"
}

is_node_name() {
    [[ $1 =~ ^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$ ]]
}

# A comma-separated list whose entries hold no quoting or whitespace.
is_plain_list() {
    [[ $1 =~ ^[A-Za-z0-9.:/_*,-]*$ ]]
}

json_string() {
    local value=$1
    value=${value//\\/\\\\}
    value=${value//\"/\\\"}
    value=${value//$'\n'/\\n}
    value=${value//$'\r'/\\r}
    value=${value//$'\t'/\\t}
    printf '"%s"' "$value"
}

# Poll CMD... with backoff until it succeeds or the deadline (-w) passes;
# while it waits every kubectl call is cut at that deadline (call_seconds).
poll_until() {
    local what=$1
    shift
    retry_until "$WAIT_SECONDS" "$@" || die "timed out after ${WAIT_SECONDS}s waiting for $what"
}

# ------------------------------------------------------------ arguments

parse_args() {
    [[ $# -gt 0 ]] || usage_error "missing mode (init, join-master, join-worker, print-join, token-secret, prepare, helm, upgrade-check, upgrade-apply, upgrade-node, certs-check, certs-renew)"
    case $1 in
        -h | --help) usage; exit 0 ;;
        init | join-master | join-worker | print-join | token-secret | prepare | helm) MODE=$1 ;;
        upgrade-check | upgrade-apply | upgrade-node | certs-check | certs-renew)
            [[ $(type -t run_upgrade_mode) == function ]] ||
                usage_error "mode $1 needs k8s_mgmt_upgrade.sh beside this script"
            MODE=$1 ;;
        -*) usage_error "missing mode before option $1" ;;
        *) usage_error "unknown mode: $1" ;;
    esac
    shift
    local opt OPTIND=1
    while getopts ':k:V:r:K:a:H:e:ARpP:S:C:x:F:c:d:N:y:Y:T:g:G:L:m:M:t:s:u:w:o:nh' opt; do
        case $opt in
            k) K8S_MINOR=$OPTARG ;;
            V) K8S_VERSION=$OPTARG ;;
            r) REPO_URL=$OPTARG ;;
            K) REPO_KEY=$OPTARG ;;
            a) ADVERTISE_ADDRESS=$OPTARG ;;
            H) NODE_NAME=$OPTARG ;;
            e) ENDPOINT=$OPTARG ;;
            A) HA=true ;;
            R) REPORT=true ;;
            p) PREPARED=true ;;
            P) POD_CIDR=$OPTARG ;;
            S) SERVICE_CIDR=$OPTARG ;;
            C) NODE_CIDR=$OPTARG ;;
            x) EXTRA_NO_PROXY=$OPTARG ;;
            F) EXTRA_SANS=$OPTARG ;;
            c) CNI_MANIFEST=$OPTARG ;;
            d) CNI_SHA256=$OPTARG ;;
            N) CNI_EDIT=$OPTARG ;;
            y) MULTUS_MANIFEST=$OPTARG ;;
            Y) MULTUS_SHA256=$OPTARG ;;
            T) MULTUS_TAG=$OPTARG ;;
            g) REGISTRIES+=("$OPTARG") ;;
            G) HOSTS_LINES+=("$OPTARG") ;;
            L) HELM_VERSION=$OPTARG ;;
            m) HELM_SOURCE=$OPTARG ;;
            M) HELM_SHA256=$OPTARG ;;
            t) CA_CERT_HASH=$OPTARG ;;
            s) SECRETS_SOURCE=$OPTARG ;;
            u) SA_NAME=$OPTARG ;;
            w) WAIT_SECONDS=$OPTARG ;;
            o) RENDER_DIR=$OPTARG ;;
            n) DRY_RUN=true ;;
            h) usage; exit 0 ;;
            :) usage_error "option -$OPTARG needs a value" ;;
            *) usage_error "unknown option -$OPTARG" ;;
        esac
    done
    shift $((OPTIND - 1))
    [[ $# -eq 0 ]] || usage_error "unexpected argument: $1"
}

validate_version() {
    [[ $K8S_MINOR =~ ^1\.([0-9]{1,3})$ ]] ||
        usage_error "bad Kubernetes version '$K8S_MINOR' (want a minor version like 1.35)"
    [[ " $SUPPORTED_MINORS " == *" ${BASH_REMATCH[1]} "* ]] ||
        usage_error "unsupported Kubernetes version $K8S_MINOR (supported: 1.${SUPPORTED_MINORS// /, 1.})"
    [[ -z $K8S_VERSION || $K8S_VERSION =~ ^${K8S_MINOR//./\\.}\.(0|[1-9][0-9]{0,2})$ ]] ||
        usage_error "bad -V '$K8S_VERSION' (want $K8S_MINOR.PATCH, the minor of -k)"
}

# http(s)://HOST[:PORT]/PATH with none of the characters a shell or apt's
# source line would read otherwise (no whitespace, quotes, brackets, $).
# k8s_mgmt/accepted.py holds the same rule for the driver.
is_repo_url() {
    [[ $1 =~ ^https?://[A-Za-z0-9.-]+(:([0-9]{1,5}))?(/[A-Za-z0-9._~:%+@=,-]*)*$ ]] || return 1
    [[ -z ${BASH_REMATCH[2]} ]] || is_port "${BASH_REMATCH[2]}"
}

# A key given by URL (-K), not as a file.
is_http() {
    [[ $1 == http://* || $1 == https://* ]]
}

validate_repository() {
    is_repo_url "$REPO_URL" ||
        usage_error "bad -r repository URL (want http(s)://HOST[:PORT]/PATH/): '$REPO_URL'"
    [[ $REPO_URL == */ ]] || REPO_URL+=/
    [[ -n $REPO_KEY ]] || return 0
    if is_http "$REPO_KEY"; then
        is_repo_url "$REPO_KEY" || usage_error "bad -K key URL: '$REPO_KEY'"
    elif [[ $REPO_KEY =~ ^[A-Za-z0-9._/+-]+$ ]]; then
        [[ -n $RENDER_DIR || -r $REPO_KEY ]] || usage_error "-K: no readable key file '$REPO_KEY'"
        [[ $REPO_KEY == /* ]] || REPO_KEY=$PWD/$REPO_KEY
    else
        usage_error "bad -K (want an http(s) URL or a file path): '$REPO_KEY'"
    fi
}

validate_networks() {
    local name value
    for name in POD_CIDR SERVICE_CIDR; do
        value=${!name}
        is_cidr "$value" || usage_error "bad CIDR for ${name,,}: '$value'"
    done
    [[ -z $NODE_CIDR ]] || is_cidr "$NODE_CIDR" || usage_error "bad CIDR for node_cidr: '$NODE_CIDR'"
    [[ -z $ADVERTISE_ADDRESS ]] || is_ipv4 "$ADVERTISE_ADDRESS" ||
        usage_error "bad advertise address: '$ADVERTISE_ADDRESS'"
    [[ -z $ENDPOINT ]] || is_host_port "$ENDPOINT" || usage_error "bad endpoint (want HOST:PORT): '$ENDPOINT'"
    is_plain_list "$EXTRA_NO_PROXY" || usage_error "bad no_proxy list: '$EXTRA_NO_PROXY'"
    is_plain_list "$EXTRA_SANS" || usage_error "bad SAN list: '$EXTRA_SANS'"
}

validate_mode_needs() {
    case $MODE in
        init | join-master)
            [[ -n $ADVERTISE_ADDRESS ]] || usage_error "$MODE needs -a (advertise address)" ;;
    esac
    case $MODE in
        join-master | join-worker)
            [[ -n $ENDPOINT ]] || usage_error "$MODE needs -e (API server endpoint)"
            [[ $CA_CERT_HASH =~ ^sha256:[0-9a-f]{64}$ ]] ||
                usage_error "$MODE needs -t sha256:<64 hex digits> (CA certificate hash)" ;;
    esac
    if [[ $MODE == init ]] && "$HA"; then
        [[ -n $ENDPOINT ]] || usage_error "HA init needs -e (VIP:PORT control-plane endpoint)"
    fi
    [[ $MODE == init ]] || ! "$REPORT" || usage_error "-R is for init only"
    if [[ $MODE == helm ]]; then
        [[ $HELM_VERSION =~ ^3\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})$ ]] ||
            usage_error "helm needs -L VERSION, a Helm 3 release such as 3.16.2"
        [[ -n $HELM_SOURCE ]] || usage_error "helm needs -m URL|FILE (the release archive)"
        if is_http "$HELM_SOURCE"; then
            is_repo_url "$HELM_SOURCE" || usage_error "bad -m URL '$HELM_SOURCE'"
            [[ -n $HELM_SHA256 ]] || usage_error "helm needs -M SHA256 with a URL"
        else
            [[ $HELM_SOURCE =~ ^[A-Za-z0-9/._+-]+$ && /$HELM_SOURCE/ != */../* ]] ||
                usage_error "bad -m file '$HELM_SOURCE'"
        fi
        [[ -z $HELM_SHA256 || $HELM_SHA256 =~ ^[0-9a-f]{64}$ ]] || usage_error "bad -M SHA-256 '$HELM_SHA256'"
    fi
    case $MODE in
        init | join-master | join-worker) ;;
        *) ! "$PREPARED" || usage_error "-p is for init and the joins only" ;;
    esac
    [[ $(type -t validate_upgrade_needs) != function ]] || validate_upgrade_needs
}

# http(s)://HOST[:PORT], and after a comma the CA file of an https one (a
# path of safe characters; relative: from where the script runs, as the
# driver uploads it).
# k8s_mgmt/accepted.py holds the driver's rule for the server.
is_registry_spec() {
    local url=${1%%,*} ca='' scheme host port
    [[ $1 == *,* ]] && ca=${1#*,}
    [[ $url =~ ^(http|https)://([A-Za-z0-9.-]+)(:([0-9]{1,5}))?$ ]] || return 1
    scheme=${BASH_REMATCH[1]} host=${BASH_REMATCH[2]} port=${BASH_REMATCH[4]}
    is_host "$host" || return 1
    [[ -z $port ]] || is_port "$port" || return 1
    [[ -z $ca ]] || [[ $scheme == https && $ca =~ ^[A-Za-z0-9/._+-]+$ && /$ca/ != */../* ]]
}

# "IPv4 NAME [NAME...]", single spaces (the driver normalises it).
is_hosts_line() {
    local -a words
    [[ $1 =~ ^[0-9.]+( [A-Za-z0-9.-]+)+$ ]] && is_ipv4 "${1%% *}" || return 1
    read -r -a words <<<"${1#* }"
    local name
    for name in "${words[@]}"; do is_host "$name" || return 1; done
}

validate_registries() {
    local spec line
    for spec in "${REGISTRIES[@]}"; do
        is_registry_spec "$spec" ||
            usage_error "bad -g registry '$spec' (want http(s)://HOST[:PORT], then ,CA-FILE for https only)"
    done
    for line in "${HOSTS_LINES[@]}"; do
        is_hosts_line "$line" || usage_error "bad -G hosts line '$line' (want \"IPv4 NAME...\")"
    done
}

validate_args() {
    validate_version
    validate_repository
    validate_registries
    validate_networks
    validate_mode_needs
    [[ -z $NODE_NAME ]] || is_node_name "$NODE_NAME" || usage_error "bad node name: '$NODE_NAME'"
    [[ $WAIT_SECONDS =~ ^[0-9]+$ ]] || usage_error "bad -w seconds: '$WAIT_SECONDS'"
    [[ $SA_NAME =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]] || usage_error "bad ServiceAccount name: '$SA_NAME'"
    [[ -z $CNI_SHA256 || $CNI_SHA256 =~ ^[0-9a-f]{64}$ ]] || usage_error "bad CNI SHA-256: '$CNI_SHA256'"
    # The default manifest is checked against its pin unless -d says other.
    if [[ $CNI_MANIFEST == "$DEFAULT_CNI_URL" && -z $CNI_SHA256 ]]; then
        CNI_SHA256=$DEFAULT_CNI_SHA256
    fi
    [[ $CNI_MANIFEST == none ]] || is_manifest_source "$CNI_MANIFEST" ||
        usage_error "bad CNI manifest (want an http(s) URL, a file or none): '$CNI_MANIFEST'"
    [[ -z $CNI_EDIT || $CNI_EDIT == flannel-network ]] || usage_error "bad CNI edit: '$CNI_EDIT'"
    validate_multus
    [[ -z $NODE_NAME ]] && NODE_NAME=$(uname -n | tr '[:upper:]' '[:lower:]')
    is_node_name "$NODE_NAME" || usage_error "hostname '$NODE_NAME' is no valid node name; pass -H"
}

# ------------------------------------------------------------ secrets

# http(s)://[USERINFO@]HOST[:PORT][/]: HOST a name or an IPv4 address,
# PORT 1-65535, USERINFO of RFC 3986 characters or %XX.
# A host name (labels of letters, digits and inner "-") or an IPv4 address.
is_host() {
    if [[ $1 =~ ^[0-9.]+$ ]]; then
        is_ipv4 "$1"
    else
        is_host_name "$1"
    fi
}

is_proxy_url() {
    local authority hostport host port
    local userinfo_re='^([A-Za-z0-9._~!$&()*+,;=:-]|%[0-9A-Fa-f]{2})*$'
    [[ $1 =~ ^https?://([^/?#]*)/?$ ]] || return 1
    authority=${BASH_REMATCH[1]}
    hostport=${authority##*@}
    [[ $authority != *@* || ${authority%@*} =~ $userinfo_re ]] || return 1
    host=${hostport%%:*}
    is_host "$host" || return 1
    [[ $hostport == *:* ]] || return 0
    port=${hostport#*:}
    is_port "$port"
}

# Values are checked by shape; messages name the key, never the value.
store_secret() {
    local key=$1 value=$2
    case $key in
        token)
            [[ $value =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] || usage_error "secret 'token' is not a bootstrap token"
            JOIN_TOKEN=$value ;;
        certificate_key)
            [[ $value =~ ^[0-9a-f]{64}$ ]] || usage_error "secret 'certificate_key' is not 64 hex digits"
            CERTIFICATE_KEY=$value ;;
        http_proxy)
            is_proxy_url "$value" || usage_error "secret 'http_proxy' is not an http(s) URL"
            HTTP_PROXY_URL=$value ;;
        https_proxy)
            is_proxy_url "$value" || usage_error "secret 'https_proxy' is not an http(s) URL"
            HTTPS_PROXY_URL=$value ;;
        registry_auth_[1-9] | registry_auth_[1-9][0-9])
            [[ $value =~ ^[A-Za-z0-9+/]+={0,2}$ ]] || usage_error "secret '$key' is not base64"
            REGISTRY_AUTHS[${key#registry_auth_}]=$value ;;
        *) usage_error "unknown key in secrets input: '$key'" ;;
    esac
}

read_secrets() {
    [[ -z $SECRETS_SOURCE ]] || read_secret_lines "$SECRETS_SOURCE" store_secret
}

validate_secrets() {
    case $MODE in
        join-master | join-worker)
            [[ -n $JOIN_TOKEN ]] || usage_error "$MODE needs 'token' in the secrets input (-s)" ;;
    esac
    if [[ $MODE == join-master && -z $CERTIFICATE_KEY ]]; then
        usage_error "join-master needs 'certificate_key' in the secrets input (-s)"
    fi
    local index
    for index in "${!REGISTRY_AUTHS[@]}"; do
        ((index <= ${#REGISTRIES[@]})) ||
            usage_error "secret 'registry_auth_$index' names no -g registry (there are ${#REGISTRIES[@]})"
        [[ ${REGISTRIES[index - 1]} == https://* ]] ||
            usage_error "secret 'registry_auth_$index' is for an http registry: credentials go over https only"
    done
}

# -------------------------------------------------------- rendered files

api_version() {
    local minor=${K8S_MINOR#1.}
    if ((minor >= 31)); then echo kubeadm.k8s.io/v1beta4; else echo kubeadm.k8s.io/v1beta3; fi
}

# v1beta4 turned extra-argument maps into lists of name/value pairs.
render_kubelet_extra_args() {
    [[ -n $ADVERTISE_ADDRESS ]] || return 0
    if [[ $(api_version) == */v1beta4 ]]; then
        printf '  kubeletExtraArgs:\n  - name: node-ip\n    value: "%s"\n' "$ADVERTISE_ADDRESS"
    else
        printf '  kubeletExtraArgs:\n    node-ip: "%s"\n' "$ADVERTISE_ADDRESS"
    fi
}

render_node_registration() {
    printf 'nodeRegistration:\n  name: "%s"\n  criSocket: "%s"\n' "$NODE_NAME" "$CRI_SOCKET"
    render_kubelet_extra_args
}

# The installed kubeadm's exact version when it has the pinned minor, else
# the release label of the minor.
kubernetes_version() {
    local installed
    installed=$(installed_version kubeadm)
    if [[ $installed == "v$K8S_MINOR".* ]]; then echo "$installed"; else echo "stable-$K8S_MINOR"; fi
}

render_san_list() {
    local san
    local -a sans
    IFS=, read -r -a sans <<<"$EXTRA_SANS"
    [[ ${#sans[@]} -gt 0 ]] || return 0
    printf '  certSANs:\n'
    for san in "${sans[@]}"; do
        [[ -n $san ]] && printf '  - "%s"\n' "$san"
    done
    return 0
}

render_init_config() {
    local api
    api=$(api_version)
    printf 'apiVersion: %s\nkind: InitConfiguration\n' "$api"
    printf 'localAPIEndpoint:\n  advertiseAddress: "%s"\n  bindPort: 6443\n' "$ADVERTISE_ADDRESS"
    render_node_registration
    printf -- '---\napiVersion: %s\nkind: ClusterConfiguration\n' "$api"
    printf 'kubernetesVersion: "%s"\n' "$(kubernetes_version)"
    [[ -z $ENDPOINT ]] || printf 'controlPlaneEndpoint: "%s"\n' "$ENDPOINT"
    printf 'networking:\n  podSubnet: "%s"\n  serviceSubnet: "%s"\n  dnsDomain: cluster.local\n' \
        "$POD_CIDR" "$SERVICE_CIDR"
    if [[ -n $EXTRA_SANS ]]; then
        printf 'apiServer:\n'
        render_san_list
    fi
    printf -- '---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'
    printf 'cgroupDriver: systemd\n'
}

render_join_config() {
    printf 'apiVersion: %s\nkind: JoinConfiguration\n' "$(api_version)"
    printf 'discovery:\n  bootstrapToken:\n    apiServerEndpoint: "%s"\n' "$ENDPOINT"
    printf '    token: "%s"\n    caCertHashes:\n    - "%s"\n' "$JOIN_TOKEN" "$CA_CERT_HASH"
    render_node_registration
    if [[ $MODE == join-master ]]; then
        printf 'controlPlane:\n  localAPIEndpoint:\n    advertiseAddress: "%s"\n    bindPort: 6443\n' \
            "$ADVERTISE_ADDRESS"
        printf '  certificateKey: "%s"\n' "$CERTIFICATE_KEY"
    fi
}

# A config that lets "kubeadm init phase upload-certs" run on any master.
render_upload_certs_config() {
    local api
    api=$(api_version)
    printf 'apiVersion: %s\nkind: InitConfiguration\ncertificateKey: "%s"\n' "$api" "$CERTIFICATE_KEY"
    printf -- '---\napiVersion: %s\nkind: ClusterConfiguration\nkubernetesVersion: "%s"\n' \
        "$api" "$(kubernetes_version)"
}

no_proxy_list() {
    local entry out=""
    local -a entries=(localhost 127.0.0.1 .svc .cluster.local "$POD_CIDR" "$SERVICE_CIDR")
    [[ -z $ENDPOINT ]] || entries+=("${ENDPOINT%:*}")
    [[ -z $NODE_CIDR ]] || entries+=("$NODE_CIDR")
    local -a extra
    IFS=, read -r -a extra <<<"$EXTRA_NO_PROXY"
    entries+=("${extra[@]}")
    for entry in "${entries[@]}"; do
        [[ -n $entry && ,$out, != *",$entry,"* ]] && out+=${out:+,}$entry
    done
    printf '%s\n' "$out"
}

proxy_configured() {
    [[ -n $HTTP_PROXY_URL || -n $HTTPS_PROXY_URL ]]
}

render_apt_proxy() {
    [[ -z $HTTP_PROXY_URL ]] || printf 'Acquire::http::Proxy "%s";\n' "$HTTP_PROXY_URL"
    [[ -z $HTTPS_PROXY_URL ]] || printf 'Acquire::https::Proxy "%s";\n' "$HTTPS_PROXY_URL"
}

render_proxy_env() {
    local no_proxy name
    no_proxy=$(no_proxy_list)
    for name in http_proxy HTTP_PROXY; do
        [[ -z $HTTP_PROXY_URL ]] || printf "%s='%s'\n" "$name" "$HTTP_PROXY_URL"
    done
    for name in https_proxy HTTPS_PROXY; do
        [[ -z $HTTPS_PROXY_URL ]] || printf "%s='%s'\n" "$name" "$HTTPS_PROXY_URL"
    done
    printf "no_proxy='%s'\nNO_PROXY='%s'\n" "$no_proxy" "$no_proxy"
}

# systemd treats % as a specifier: percent-encoded credentials need %%.
render_containerd_proxy() {
    local line
    printf '[Service]\n'
    while IFS= read -r line; do
        line=${line//\'/}
        printf 'Environment="%s"\n' "${line//%/%%}"
    done < <(render_proxy_env)
}

# Login shells of root get the proxy; the credentials file stays root-only.
render_profile_snippet() {
    printf '# written by %s\n' "$PROG"
    printf 'if [ -r %s/proxy.env ]; then\n    set -a\n    . %s/proxy.env\n    set +a\nfi\n' \
        "$STATE_DIR" "$STATE_DIR"
}

render_modules() {
    printf 'overlay\nbr_netfilter\n'
}

render_sysctl() {
    printf 'net.bridge.bridge-nf-call-iptables = 1\n'
    printf 'net.bridge.bridge-nf-call-ip6tables = 1\n'
    printf 'net.ipv4.ip_forward = 1\n'
}

# The minor's directory of the repository (a flat one: "deb URL /").
repo_minor_url() {
    printf '%sv%s/deb/\n' "$REPO_URL" "$K8S_MINOR"
}

repo_key_location() {
    if [[ -n $REPO_KEY ]]; then printf '%s\n' "$REPO_KEY"; else printf '%sRelease.key\n' "$(repo_minor_url)"; fi
}

render_apt_source() {
    printf 'deb [signed-by=%s] %s /\n' "$APT_KEYRING" "$(repo_minor_url)"
}

# ---------------------------------------------------------- file writing

# Mask the values of keys that hold secrets, for dry-run output.
mask_secrets() {
    sed -E -e 's/^( *(token|certificateKey): ).*/\1"***"/' \
        -e 's#(https?://)[^:/@"'"'"']+:[^@"'"'"']+@#\1***:***@#g'
}

# write_or_show DEST MODE: write_file, or in a dry run show what it would
# write (secrets masked); WRITE_FILE_CHANGED tells whether DEST changes.
write_or_show() {
    local dest=$1 mode=$2 content
    "$DRY_RUN" || {
        write_file "$dest" "$mode"
        return
    }
    content=$(cat)
    WRITE_FILE_CHANGED=false
    printf '%s\n' "$content" | same_content "$dest" && return 0
    WRITE_FILE_CHANGED=true
    printf '# would write %s (mode %s):\n' "$dest" "$mode" >&4
    printf '%s\n' "$content" | mask_secrets >&4
}

render_into_dir() {
    local dir=$1
    mkdir -p -- "$dir"
    case $MODE in
        init) render_init_config >"$dir/kubeadm-init.yaml" ;;
        join-master | join-worker) render_join_config >"$dir/kubeadm-join.yaml" ;;
        *) usage_error "-o renders files for init and join modes only" ;;
    esac
    render_modules >"$dir/modules-k8s.conf"
    render_sysctl >"$dir/sysctl-k8s.conf"
    render_apt_source >"$dir/kubernetes.list"
    if proxy_configured; then
        render_apt_proxy >"$dir/apt-proxy.conf"
        render_proxy_env >"$dir/proxy.env"
        render_containerd_proxy >"$dir/containerd-proxy.conf"
        render_profile_snippet >"$dir/profile-proxy.sh"
    fi
    chmod 0600 -- "$dir"/*
    ls -1 -- "$dir"
}

# ------------------------------------------------------- external effects

# A silent mirror fails a fetch after APT_FETCH_SECONDS; a dpkg lock held by
# someone else (unattended-upgrades on a fresh VM) is waited for until -w.
# Its output goes to stderr: stdout is the script's machine output.
apt_get() {
    run apt_turn "$WAIT_SECONDS" env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Options::=--force-confold \
        -o "Acquire::http::Timeout=$APT_FETCH_SECONDS" -o "Acquire::https::Timeout=$APT_FETCH_SECONDS" \
        -o Acquire::Retries=3 -o "DPkg::Lock::Timeout=$WAIT_SECONDS" "$@" >&2
}

systemctl_do() {
    run systemctl "$@"
}

# kubectl as the cluster admin, each call bounded twice: the API server is
# asked to answer in time (--request-timeout) and the process is cut at the
# same moment (timeout), which also holds inside a wait's deadline.
admin_kubectl() {
    local seconds
    seconds=$(call_seconds "$KUBECTL_SECONDS")
    timeout -k 5 "$seconds" kubectl --kubeconfig "$ADMIN_CONF" --request-timeout="${seconds}s" "$@"
}

installed_version() {
    local tool=$1 out
    have "$tool" || return 0
    case $tool in
        kubeadm) out=$(kubeadm version -o short 2>/dev/null) || return 0 ;;
        kubectl) out=$(kubectl version --client 2>/dev/null) || return 0 ;;
        kubelet) out=$(kubelet --version 2>/dev/null) || return 0 ;;
    esac
    [[ $out =~ v1\.[0-9]+\.[0-9]+ ]] && printf '%s\n' "${BASH_REMATCH[0]}"
    return 0
}

api_answers() {
    admin_kubectl get --raw=/readyz >/dev/null 2>&1
}

# ------------------------------------------------------------ node steps

ensure_root() {
    "$DRY_RUN" || become_root "${ORIGINAL_ARGS[@]}"
}

check_os() {
    local os
    # shellcheck disable=SC1091 # the node's file, read in a subshell
    os=$( (. /etc/os-release && printf '%s:%s' "${ID:-}" "${VERSION_ID:-}") 2>/dev/null) || os=unknown
    case $os in
        ubuntu:22.04 | ubuntu:24.04 | debian:12) ;;
        *) log "warning: $os is not a tested OS (Ubuntu 22.04/24.04, Debian 12)" ;;
    esac
}

configure_proxy() {
    if ! proxy_configured; then
        log "no proxy configured"
        return 0
    fi
    render_proxy_env | write_or_show "$STATE_DIR/proxy.env" 0600
    render_profile_snippet | write_or_show /etc/profile.d/k8s-mgmt-proxy.sh 0644
    render_apt_proxy | write_or_show /etc/apt/apt.conf.d/95k8s-mgmt-proxy 0600
    render_containerd_proxy | write_or_show /etc/systemd/system/containerd.service.d/http-proxy.conf 0600
    # containerd reads its drop-in's environment only when it starts.
    if "$WRITE_FILE_CHANGED"; then
        systemctl_do daemon-reload
        CONTAINERD_RESTART=true
    fi
    export_proxy_env
}

# The script's own downloads and kubeadm's preflight see the proxy too.
export_proxy_env() {
    [[ -z $HTTP_PROXY_URL ]] || export http_proxy=$HTTP_PROXY_URL HTTP_PROXY=$HTTP_PROXY_URL
    [[ -z $HTTPS_PROXY_URL ]] || export https_proxy=$HTTPS_PROXY_URL HTTPS_PROXY=$HTTPS_PROXY_URL
    no_proxy=$(no_proxy_list)
    export no_proxy NO_PROXY=$no_proxy
}

module_present() {
    local module=$1
    [[ -d /sys/module/$module ]] && return 0
    [[ $module == br_netfilter && -e /proc/sys/net/bridge/bridge-nf-call-iptables ]] && return 0
    grep -qs "/$module.ko" "/lib/modules/$(uname -r)/modules.builtin"
}

# The container manager's name when this node is a container (it shares
# the host's kernel), else nothing.
container_name() {
    local name
    [[ -r $CONTAINER_FILE ]] || return 0
    name=$(head -c 64 -- "$CONTAINER_FILE" | tr -cd 'A-Za-z0-9._-')
    printf '%s\n' "${name:-container}"
}

# Root may write any sysctl file but those of a read-only /proc/sys (as
# container managers mount it).
sysctl_writable() {
    [[ -w $1 ]]
}

# Kernel settings a container cannot change are reported as skipped, with
# the reason, never silently: its modules and swap are the host's; a sysctl
# the kernel does not offer here, or offers read-only, is not set.
configure_kernel() {
    local module container key value path current
    container=$(container_name)
    render_modules | write_or_show /etc/modules-load.d/k8s.conf 0644
    for module in overlay br_netfilter; do
        module_present "$module" && continue
        if [[ -n $container ]]; then
            log "skipped: kernel module $module is not loaded, and this node is a container ($container) sharing the host's kernel: load it on the host"
            continue
        fi
        run modprobe "$module" || die "cannot load kernel module $module"
    done
    render_sysctl | write_or_show /etc/sysctl.d/99-kubernetes.conf 0644
    while IFS=' =' read -r key value; do
        [[ -n $key ]] || continue
        path=$SYSCTL_DIR/${key//.//}
        if [[ ! -e $path ]]; then
            log "skipped: sysctl $key: this kernel has no such setting here${container:+ (container $container)}"
        elif ! current=$(<"$path") 2>/dev/null; then
            log "skipped: sysctl $key: unreadable here${container:+ (container $container)}"
        elif [[ $current == "$value" ]]; then
            continue
        elif ! sysctl_writable "$path"; then
            log "skipped: sysctl $key = $value: read-only here (it is $current)${container:+; this node is a container ($container)}"
        else
            run sysctl -q -w "$key=$value" || die "cannot set sysctl $key = $value"
        fi
    done < <(render_sysctl)
}

disable_swap() {
    local container
    if [[ -n $(tail -n +2 /proc/swaps 2>/dev/null) ]]; then
        container=$(container_name)
        if [[ -n $container ]]; then
            log "skipped: swap is on, and it is the host's: this node is a container ($container); the kubelet refuses to start until the host turns swap off"
        else
            run swapoff -a
        fi
    fi
    if awk '!/^[[:space:]]*#/ && $3 == "swap" { found = 1 } END { exit !found }' /etc/fstab 2>/dev/null; then
        run sed -i -E '/^[^#]\S*\s+\S+\s+swap\s/ s/^/#/' /etc/fstab
    fi
}

# What prepare installs, from the Kubernetes repository (and for containerd
# the distribution's): set by needed_packages.
NEEDED_K8S=()
NEEDED_RUNTIME=()
PINNED_VERSION=""

# Packages of the pinned version (-V) or minor (-k) that are already there
# are kept; a tool of another version stops the run (upgrades are a
# separate operation).
needed_packages() {
    local tool version
    NEEDED_K8S=()
    NEEDED_RUNTIME=()
    have containerd || NEEDED_RUNTIME=(containerd runc)
    for tool in kubeadm kubelet kubectl; do
        version=$(installed_version "$tool")
        if [[ -z $version ]]; then
            NEEDED_K8S+=("$tool")
        elif [[ -n $K8S_VERSION && $version != "v$K8S_VERSION" ]]; then
            die "$tool $version is installed but $K8S_VERSION was asked for; upgrades are not done here"
        elif [[ $version != "v$K8S_MINOR".* ]]; then
            die "$tool $version is installed but the pinned minor is $K8S_MINOR; upgrades are not done here"
        fi
    done
}

# The repository's key, fetched (URL) or read (file), de-armored into the
# keyring apt's source names; replaced only when it changed.
install_repo_key() {
    local location fetched keyring err
    location=$(repo_key_location)
    run mkdir -p -m 0755 "$(dirname "$APT_KEYRING")"
    if "$DRY_RUN"; then
        if is_http "$location"; then
            run curl -fsS "${CURL_OPTS[@]}" -o /tmp/k8s-mgmt-repo-key "$location"
            location=/tmp/k8s-mgmt-repo-key
        fi
        run gpg --dearmor --batch --yes -o "$APT_KEYRING" "$location"
        return 0
    fi
    fetched=$(mktemp /tmp/k8s-mgmt-repo-key.XXXXXX)
    keyring=$(mktemp /tmp/k8s-mgmt-repo-keyring.XXXXXX)
    TEMP_FILES+=("$fetched" "$keyring")
    if is_http "$location"; then
        err=$(curl -fsS "${CURL_OPTS[@]}" -o "$fetched" "$location" 2>&1) ||
            die "cannot fetch the signing key of the Kubernetes package repository from $location: $(last_line "$err")"
    else
        cp -- "$location" "$fetched" || die "cannot read the repository's signing key $location"
    fi
    if grep -q -- '-----BEGIN PGP PUBLIC KEY BLOCK-----' "$fetched"; then
        gpg --dearmor --batch --yes -o "$keyring" "$fetched" 2>/dev/null ||
            die "the signing key from $location is no OpenPGP key"
    else
        cp -- "$fetched" "$keyring"
    fi
    [[ -s $keyring ]] || die "the signing key from $location is empty"
    if ! cmp -s -- "$keyring" "$APT_KEYRING"; then
        install -m 0644 -- "$keyring" "$APT_KEYRING"
        log "signing key of the Kubernetes package repository from $location installed"
    fi
}

# One line of a command's output for a message: its last non-empty one.
last_line() {
    local line last=""
    while IFS= read -r line; do
        [[ -n ${line//[[:space:]]/} ]] && last=$line
    done <<<"$1"
    printf '%s\n' "${last:-no output}"
}

# The first error apt printed (E: or Err: lines), on one line.
apt_error() {
    local line
    while IFS= read -r line; do
        if [[ $line == E:* || $line == Err:* ]]; then
            printf '%s\n' "${line//[[:space:]]/ }"
            return 0
        fi
    done <<<"$1"
    last_line "$1"
}

# The Kubernetes repository as apt's source (key, signed-by source), then
# one apt-get update; nothing when no package is missing.
add_k8s_apt_repo() {
    needed_packages
    if [[ ${#NEEDED_K8S[@]} -eq 0 && ${#NEEDED_RUNTIME[@]} -eq 0 ]]; then
        log "containerd, kubeadm, kubelet and kubectl already installed; no repository needed"
        return 0
    fi
    if ! have curl || ! have gpg; then apt_get install ca-certificates curl gpg; fi
    install_repo_key
    render_apt_source | write_or_show "$APT_SOURCE" 0644
    local out
    if "$DRY_RUN"; then
        apt_get update
    elif ! out=$(apt_get update 2>&1); then
        printf '%s\n' "$out" >&2
        die "cannot read the Kubernetes package repository $(repo_minor_url): $(apt_error "$out")"
    else
        printf '%s\n' "$out" >&2
    fi
}

install_containerd() {
    [[ ${#NEEDED_RUNTIME[@]} -eq 0 ]] || apt_get install "${NEEDED_RUNTIME[@]}"
    local config=$CONTAINERD_CONFIG rendered
    if "$DRY_RUN" && ! have containerd; then
        run containerd config default # then SystemdCgroup = true, into $config
    elif ! grep -qs 'SystemdCgroup = true' "$config"; then
        rendered=$(containerd config default) || die "containerd config default failed"
        printf '%s\n' "$rendered" | sed 's/SystemdCgroup = false/SystemdCgroup = true/' |
            write_or_show "$config" "$(containerd_config_mode)"
        if "$WRITE_FILE_CHANGED"; then CONTAINERD_RESTART=true; fi
        grep -qs 'SystemdCgroup = true' "$config" || "$DRY_RUN" ||
            die "$config has no SystemdCgroup setting to turn on"
    fi
    configure_registries
    systemctl_do enable containerd
    if "$CONTAINERD_RESTART"; then systemctl_do restart containerd; else systemctl_do start containerd; fi
}

# hosts.toml of one registry: containerd resolves and pulls HOST[:PORT]'s
# images there (http: plain HTTP; https: verified with CA when given).
render_registry_hosts() {
    local url=$1 ca=$2
    printf 'server = "%s"\n\n[host."%s"]\n  capabilities = ["pull", "resolve"]\n' "$url" "$url"
    [[ -z $ca ]] || printf '  ca = "%s"\n' "$ca"
}

# /etc/hosts without the lines this script added before, then -G's; each
# marked, so a later run replaces them rather than adding more.
render_hosts_file() {
    grep -v -- " $HOSTS_MARK\$" "$HOSTS_FILE" || true
    local line
    for line in "${HOSTS_LINES[@]}"; do printf '%s %s\n' "$line" "$HOSTS_MARK"; done
}

# /etc/hosts is rewritten in place, not renamed over: a container's or
# namespace's /etc/hosts is a mount point.
write_hosts_file() {
    local content
    content=$(render_hosts_file)
    printf '%s\n' "$content" | same_content "$HOSTS_FILE" && return 0
    if "$DRY_RUN"; then
        printf '# would write %s:\n%s\n' "$HOSTS_FILE" "$content" >&4
        return 0
    fi
    printf '%s\n' "$content" >"$HOSTS_FILE"
}

configure_registries() {
    if [[ ${#REGISTRIES[@]} -eq 0 && ${#HOSTS_LINES[@]} -eq 0 ]]; then
        grep -qs " $HOSTS_MARK\$" "$HOSTS_FILE" || return 0
    fi
    local config=$CONTAINERD_CONFIG spec url ca hostport dir trusted=false
    if [[ ${#REGISTRIES[@]} -gt 0 ]] && ! grep -qs "config_path = \"$CERTS_D\"" "$config"; then
        sed "s#config_path = \"\"#config_path = \"$CERTS_D\"#" "$config" | write_or_show "$config" "$(containerd_config_mode)"
        if "$WRITE_FILE_CHANGED"; then CONTAINERD_RESTART=true; fi
        grep -qs "config_path = \"$CERTS_D\"" "$config" || "$DRY_RUN" ||
            die "$config has no registry config_path to point at $CERTS_D"
    fi
    for spec in "${REGISTRIES[@]}"; do
        url=${spec%%,*} ca=''
        [[ $spec == *,* ]] && ca=${spec#*,}
        hostport=${url#*://}
        dir=$CERTS_D/$hostport
        if [[ -n $ca ]]; then
            [[ -r $ca ]] || "$DRY_RUN" || die "the CA certificate $ca of registry $hostport is not on this node"
            write_or_show "$dir/ca.crt" 0644 <"$ca"
            write_or_show "$CA_DIR/k8s-mgmt-${hostport//:/_}.crt" 0644 <"$ca"
            if "$WRITE_FILE_CHANGED"; then trusted=true; fi
            render_registry_hosts "$url" "$dir/ca.crt" | write_or_show "$dir/hosts.toml" 0644
        else
            render_registry_hosts "$url" "" | write_or_show "$dir/hosts.toml" 0644
        fi
        log "registry $url: $dir/hosts.toml${ca:+ with its CA}"
    done
    if "$trusted"; then run update-ca-certificates >&2; fi
    configure_registry_auth
    write_hosts_file
}

# containerd's configuration without the credentials block this script
# wrote before, then the registries' credentials (CRI's registry.configs
# auth: containerd sends them when the registry asks). The file is then
# readable by root only.
render_containerd_auth() {
    local config=$1 plugin='io.containerd.grpc.v1.cri' index hostport
    # containerd 2's configuration (version 3) moved the image service.
    grep -qs '^version = 3' "$config" && plugin='io.containerd.cri.v1.images'
    sed "/^$AUTH_BEGIN\$/,/^$AUTH_END\$/d" "$config"
    [[ ${#REGISTRY_AUTHS[@]} -gt 0 ]] || return 0
    printf '%s\n' "$AUTH_BEGIN"
    for index in $(printf '%s\n' "${!REGISTRY_AUTHS[@]}" | sort -n); do
        hostport=${REGISTRIES[index - 1]%%,*}
        hostport=${hostport#*://}
        printf '[plugins."%s".registry.configs."%s".auth]\n  auth = "%s"\n' \
            "$plugin" "$hostport" "${REGISTRY_AUTHS[$index]}"
    done
    printf '%s\n' "$AUTH_END"
}

# containerd's configuration is readable by root only while it holds
# credentials (also while a run without them removes them).
containerd_config_mode() {
    if [[ ${#REGISTRY_AUTHS[@]} -gt 0 ]] || grep -qsx -- "$AUTH_BEGIN" "$CONTAINERD_CONFIG"; then
        echo 0600
    else
        echo 0644
    fi
}

configure_registry_auth() {
    local config=$CONTAINERD_CONFIG mode=0644
    [[ ${#REGISTRY_AUTHS[@]} -gt 0 ]] && mode=0600
    if [[ ${#REGISTRY_AUTHS[@]} -eq 0 ]] && ! grep -qsx -- "$AUTH_BEGIN" "$config"; then
        return 0
    fi
    if "$DRY_RUN"; then
        printf '# would write the credentials of %d registr(y/ies) into %s (mode %s)\n' \
            "${#REGISTRY_AUTHS[@]}" "$config" "$mode" >&4
        return 0
    fi
    render_containerd_auth "$config" | write_or_show "$config" "$mode"
    if "$WRITE_FILE_CHANGED"; then CONTAINERD_RESTART=true; fi
    log "registry credentials: ${#REGISTRY_AUTHS[@]} registr(y/ies) in $config (mode $mode)"
}

# The release a helm binary reports, e.g. v3.16.2 ("" when it cannot say).
helm_release() {
    "$1" version --template '{{.Version}}' 2>/dev/null || true
}

# Helm from its release archive (a URL, fetched through the proxy, or a file
# the driver uploaded), checked against -M, its binary installed where
# /usr/local/bin puts it on PATH; nothing when that release is there.
install_helm() {
    local want=v$HELM_VERSION archive work found
    if proxy_configured; then export_proxy_env; fi
    if [[ -x $HELM_BIN && $(helm_release "$HELM_BIN") == "$want" ]]; then
        log "Helm $want already installed"
        return 0
    fi
    if "$DRY_RUN"; then
        run install -m 0755 "helm from $HELM_SOURCE" "$HELM_BIN"
        return 0
    fi
    work=$(mktemp -d /tmp/k8s-mgmt-helm.XXXXXX)
    archive=$work/helm.tar.gz
    if is_http "$HELM_SOURCE"; then
        curl -fsSL --retry 3 --connect-timeout 10 -o "$archive" "$HELM_SOURCE" 2>"$work/err" ||
            die "cannot fetch the Helm archive from $HELM_SOURCE: $(last_line "$work/err")"
    else
        [[ -r $HELM_SOURCE ]] || die "the Helm archive $HELM_SOURCE is not on this node"
        cp -- "$HELM_SOURCE" "$archive"
    fi
    if [[ -n $HELM_SHA256 ]]; then
        found=$(sha256sum <"$archive" | cut -d' ' -f1)
        [[ $found == "$HELM_SHA256" ]] ||
            die "the Helm archive from $HELM_SOURCE has sha256:$found, not the expected sha256:$HELM_SHA256"
    fi
    tar -xzf "$archive" -C "$work" --wildcards '*/helm' 2>"$work/err" ||
        die "the Helm archive from $HELM_SOURCE holds no helm binary: $(last_line "$work/err")"
    found=$(helm_release "$work"/*/helm)
    [[ $found == "$want" ]] || die "the Helm archive from $HELM_SOURCE holds ${found:-an unknown release}, not $want"
    install -m 0755 -- "$work"/*/helm "$HELM_BIN"
    rm -rf -- "$work"
    log "Helm $want installed in $HELM_BIN"
}

# The exact package version to install: -V's, else the newest of the minor
# the repository offers (apt-cache madison: one line per version).
pick_version() {
    local want=${K8S_VERSION:-$K8S_MINOR} version
    local -a offered=()
    if "$DRY_RUN"; then
        printf '%s\n' "$want-*"
        return 0
    fi
    while IFS='|' read -r _ version _; do
        version=${version//[[:space:]]/}
        [[ -n $version ]] && offered+=("$version")
    done < <(apt-cache madison kubeadm 2>/dev/null)
    version=$(printf '%s\n' "${offered[@]}" | grep -E "^${want//./\\.}[.-]" | sort -V | tail -n 1) || true
    [[ -n $version ]] ||
        die "the Kubernetes package repository $(repo_minor_url) has no kubeadm $want (it offers: ${offered[*]:-nothing})"
    printf '%s\n' "$version"
}

# Unhold, install at the exact version and hold again in one step: apt
# changes held packages only when told so, and the hold follows at once.
install_k8s_packages() {
    if [[ ${#NEEDED_K8S[@]} -eq 0 ]]; then
        log "kubeadm, kubelet and kubectl $K8S_MINOR already installed; kept"
        hold_k8s_packages
        return 0
    fi
    local tool
    local -a wanted=()
    PINNED_VERSION=$(pick_version)
    for tool in "${NEEDED_K8S[@]}"; do wanted+=("$tool=$PINNED_VERSION"); done
    apt_get install --allow-change-held-packages "${wanted[@]}"
    hold_k8s_packages
    systemctl_do enable kubelet
}

# Hold only what dpkg knows (stand-ins and hand-installed binaries are not
# packages). dpkg's selections are where apt-mark keeps holds; reading and
# setting them directly skips loading apt's cache (~0.5 s CPU per apt-mark).
hold_k8s_packages() {
    local pkg want state
    local -a to_hold=()
    # One query for the three (a package dpkg does not know prints no line).
    while read -r pkg want state; do
        if [[ $state == installed && $want != hold ]]; then
            to_hold+=("$pkg")
        fi
    done < <(dpkg-query -W -f='${Package} ${db:Status-Want} ${db:Status-Status}\n' \
        kubeadm kubelet kubectl 2>/dev/null || true)
    [[ ${#to_hold[@]} -gt 0 ]] || return 0
    log "holding ${to_hold[*]} at the installed version"
    # A here-string, not a pipe: a dry run's "run" reads no stdin.
    run dpkg --set-selections <<<"$(printf '%s hold\n' "${to_hold[@]}")"
}

# Leftovers of a failed first attempt that never produced a kubeconfig hold
# no cluster state yet, so kubeadm reset is safe and lets the attempt repeat.
reset_leftovers() {
    if compgen -G "$K8S_DIR/manifests/*.yaml" >/dev/null || [[ -e $CA_CERT ]]; then
        log "removing leftovers of an unfinished attempt (kubeadm reset)"
        run kubeadm reset -f
    fi
}

kubeadm_init() {
    local marker=$STATE_DIR/init.done config=$KUBEADM_CONFIG_DIR/kubeadm-init.yaml
    render_init_config | write_or_show "$config" 0600
    if [[ -f $ADMIN_CONF ]]; then
        poll_until "the API server (admin.conf exists)" api_answers
        [[ -f $marker ]] && { log "kubeadm init already done; skipped"; return 0; }
        resume_init "$config"
    else
        reset_leftovers
        # Its output goes to stderr, which the driver may show: the token
        # and the certificate key stay out of it (print-join hands out join
        # data as JSON on stdout).
        local -a flags=(--config "$config" --skip-token-print)
        "$HA" && flags+=(--upload-certs --skip-certificate-key-print)
        run kubeadm init "${flags[@]}" >&2
    fi
    mark_done "$marker"
}

# admin.conf exists and the API answers, but init stopped before the end:
# run the phases that follow the control plane's start (all idempotent).
resume_init() {
    local config=$1 phase
    log "continuing an interrupted kubeadm init"
    local -a skip
    for phase in "upload-config all" mark-control-plane bootstrap-token "kubelet-finalize all" "addon all"; do
        skip=()
        # This phase prints the token it makes unless told not to.
        [[ $phase == bootstrap-token ]] && skip=(--skip-token-print)
        # shellcheck disable=SC2086 # phase names are fixed words
        run kubeadm init phase $phase --config "$config" "${skip[@]}" >&2
    done
}

mark_done() {
    run mkdir -p -- "$STATE_DIR"
    run touch -- "$1"
}

kubeadm_join() {
    local marker=$STATE_DIR/join.done
    [[ -f $marker ]] && { log "node already joined; skipped"; return 0; }
    write_join_config
    local config=$JOIN_CONFIG
    if [[ -f $KUBELET_CONF && $MODE == join-worker ]]; then
        log "kubelet.conf exists: worker already joined"
    elif [[ -f $KUBELET_CONF ]]; then
        log "continuing an interrupted control-plane join"
        run kubeadm join phase control-plane-join all --config "$config" >&2
    else
        reset_leftovers
        run kubeadm join --config "$config" >&2
    fi
    "$DRY_RUN" || rm -f -- "$config"
    mark_done "$marker"
}

# The join config holds the token: a 0600 file on tmpfs, removed on exit.
write_join_config() {
    if "$DRY_RUN"; then
        JOIN_CONFIG=$RUN_DIR/k8s-mgmt-join.yaml
    else
        JOIN_CONFIG=$(mktemp "$RUN_DIR"/k8s-mgmt-join.XXXXXX)
        TEMP_FILES+=("$JOIN_CONFIG")
    fi
    render_join_config | write_or_show "$JOIN_CONFIG" 0600
}

install_user_kubeconfig() {
    local user=${SUDO_USER:-} home
    [[ -n $user && $user != root ]] || return 0
    home=$(getent passwd "$user" | cut -d: -f6)
    [[ -n $home ]] || return 0
    "$DRY_RUN" || [[ -f $ADMIN_CONF ]] || return 0
    run install -d -m 0700 -o "$user" -- "$home/.kube"
    run install -m 0600 -o "$user" -- "$ADMIN_CONF" "$home/.kube/config"
}

# A manifest's source: an http(s) URL, or a file (a path of safe
# characters; relative: from where the script runs, as the driver uploads
# it).
is_manifest_source() {
    if is_http "$1"; then
        [[ $1 =~ ^https?://[^[:space:]\"\'\`$\\]+$ ]]
    else
        [[ $1 =~ ^[A-Za-z0-9/._+-]+$ && $1 != -* && /$1/ != */../* ]]
    fi
}

validate_multus() {
    [[ -z $MULTUS_MANIFEST && -z $MULTUS_SHA256 && -z $MULTUS_TAG ]] && return 0
    is_manifest_source "$MULTUS_MANIFEST" ||
        usage_error "bad Multus manifest (want an http(s) URL or a file): '$MULTUS_MANIFEST'"
    [[ $MULTUS_SHA256 =~ ^[0-9a-f]{64}$ ]] || usage_error "bad or missing Multus SHA-256 (-Y): '$MULTUS_SHA256'"
    [[ -z $MULTUS_TAG || $MULTUS_TAG =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || usage_error "bad Multus image tag: '$MULTUS_TAG'"
    [[ $CNI_MANIFEST != none ]] || usage_error "Multus needs a CNI beside it (-c is none)"
}

# fetch_manifest WHAT SOURCE SHA256 DEST: the manifest at SOURCE (a URL or
# a file) in DEST, checked against SHA256 when one is given. A mismatch
# names both checksums as sha256:HEX: the driver masks a bare 64-digit hex
# run in what it reports (a certificate key has that shape), a digest
# after "sha256:" it keeps.
fetch_manifest() {
    local what=$1 source=$2 sum=$3 dest=$4 found
    if ! is_http "$source"; then
        cp -- "$source" "$dest" || die "cannot read the $what manifest $source"
    else
        curl -fsSL "${CURL_OPTS[@]}" -o "$dest" "$source" || die "cannot download the $what manifest $source"
    fi
    [[ -n $sum ]] || return 0
    found=$(sha256sum "$dest" | cut -d' ' -f1)
    [[ $found == "$sum" ]] ||
        die "the $what manifest $source has sha256:$found, not the pinned sha256:$sum: refused"
}

# edit_once FILE WHAT OLD NEW: replace the text OLD by NEW in FILE, which
# must hold OLD (a manifest checked against its pin does).
edit_once() {
    local file=$1 what=$2 old=$3 new=$4 text
    text=$(<"$file")
    [[ $text == *"$old"* ]] || die "$what: the manifest has no '$old' to change"
    printf '%s\n' "${text//"$old"/"$new"}" >"$file"
    log "$what: '$old' is now '$new'"
}

# apply_once NAME WHAT SOURCE SUM EDIT: the manifest at SOURCE applied
# once (STATE_DIR/NAME.applied remembers SOURCE), checked against SUM and
# then changed by the function EDIT (none when empty).
apply_once() {
    local name=$1 what=$2 source=$3 sum=$4 edit=$5
    local marker=$STATE_DIR/$name.applied manifest
    if [[ -f $marker && $(cat -- "$marker") == "$source" ]]; then
        log "$what manifest already applied; skipped"
        return 0
    fi
    if "$DRY_RUN"; then
        run kubectl --kubeconfig "$ADMIN_CONF" apply -f "$source"
        return 0
    fi
    manifest=$(mktemp "/tmp/k8s-mgmt-$name.XXXXXX")
    TEMP_FILES+=("$manifest")
    fetch_manifest "$what" "$source" "$sum" "$manifest"
    [[ -z $edit ]] || "$edit" "$manifest"
    admin_kubectl apply -f "$manifest" >&2
    mkdir -p -- "$STATE_DIR"
    printf '%s\n' "$source" >"$marker"
}

install_cni() {
    [[ $CNI_MANIFEST == none ]] && { log "CNI: none requested"; return 0; }
    apply_once cni CNI "$CNI_MANIFEST" "$CNI_SHA256" "${CNI_EDIT:+flannel_network}"
}

# flannel's manifest hard-wires its pod network; the cluster's is -P.
flannel_network() {
    edit_once "$1" "flannel's pod network" '"Network": "10.244.0.0/16"' "\"Network\": \"$POD_CIDR\""
}

# Multus as a meta-plugin in front of the CNI: its daemonset, checked
# against its pin, its floating image pinned to the release's tag.
install_multus() {
    [[ -n $MULTUS_MANIFEST ]] || return 0
    apply_once multus Multus "$MULTUS_MANIFEST" "$MULTUS_SHA256" "${MULTUS_TAG:+multus_image}"
}

multus_image() {
    edit_once "$1" "Multus's image" 'multus-cni:snapshot' "multus-cni:$MULTUS_TAG"
}

# ---------------------------------------------------- master read-outs

require_master() {
    [[ -f $ADMIN_CONF ]] || die "$ADMIN_CONF not found: run $MODE on an initialised master"
    "$DRY_RUN" && return 0
    poll_until "the API server" api_answers
}

ca_cert_hash() {
    local hash
    hash=$(openssl x509 -pubkey -noout -in "$CA_CERT" | openssl pkey -pubin -outform der | sha256sum) ||
        die "cannot hash $CA_CERT"
    printf 'sha256:%s\n' "${hash%% *}"
}

# Upload the control-plane certificates under a fresh key; the key goes to
# kubeadm in a 0600 config file, not on its command line.
upload_certs() {
    local config
    CERTIFICATE_KEY=$(kubeadm certs certificate-key) || die "kubeadm certs certificate-key failed"
    [[ $CERTIFICATE_KEY =~ ^[0-9a-f]{64}$ ]] || die "kubeadm printed no certificate key"
    config=$(mktemp "$RUN_DIR"/k8s-mgmt-upload-certs.XXXXXX)
    TEMP_FILES+=("$config")
    render_upload_certs_config >"$config"
    kubeadm init phase upload-certs --upload-certs --config "$config" --skip-certificate-key-print >/dev/null ||
        die "kubeadm init phase upload-certs failed"
}

print_join() {
    require_master
    join_json
}

# The join data as one JSON object (print-join, init -R).
join_json() {
    local token hash
    if "$DRY_RUN"; then
        run kubeadm token create --ttl 2h
        "$HA" && run kubeadm init phase upload-certs --upload-certs --config "$RUN_DIR/k8s-mgmt-upload-certs.yaml" \
            --skip-certificate-key-print
        return 0
    fi
    token=$(kubeadm token create --ttl 2h) || die "kubeadm token create failed"
    [[ $token =~ ^[a-z0-9]{6}\.[a-z0-9]{16}$ ]] || die "kubeadm printed no bootstrap token"
    hash=$(ca_cert_hash)
    "$HA" && upload_certs
    printf '{"token": %s, "ca_cert_hash": %s' "$(json_string "$token")" "$(json_string "$hash")"
    "$HA" && printf ', "certificate_key": %s' "$(json_string "$CERTIFICATE_KEY")"
    printf '}\n'
}

render_vim_account() {
    cat <<EOF
apiVersion: v1
kind: ServiceAccount
metadata:
  name: $SA_NAME
  namespace: kube-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: $SA_NAME
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: ServiceAccount
  name: $SA_NAME
  namespace: kube-system
---
apiVersion: v1
kind: Secret
metadata:
  name: $SA_NAME-token
  namespace: kube-system
  annotations:
    kubernetes.io/service-account.name: $SA_NAME
type: kubernetes.io/service-account-token
EOF
}

# The VIM Secret's token and CA (base64) in one request, into SECRET_TOKEN
# and SECRET_CA; true once the token controller has filled the token in.
SECRET_TOKEN='' SECRET_CA=''
read_vim_secret() {
    local out
    # "|| true" inside: with set -E a failing command in a substitution
    # would run the ERR trap (a false "step failed" line) while not found.
    out=$(admin_kubectl -n kube-system get secret "$SA_NAME-token" \
        -o 'jsonpath={.data.token}{"|"}{.data.ca\.crt}' 2>/dev/null || true)
    IFS='|' read -r SECRET_TOKEN SECRET_CA <<<"$out" || true
    [[ -n $SECRET_TOKEN ]]
}

token_secret() {
    require_master
    vim_json
}

# init -R: the VIM's ServiceAccount is applied in the background while the
# CNI goes in, so that the token controller has filled its Secret in by the
# time vim_json reads it. VIM_APPLY_PID: the apply's process.
VIM_APPLY_PID=''

# The VIM's ServiceAccount, binding and token Secret in a temporary file:
# VIM_MANIFEST.
VIM_MANIFEST=''
write_vim_manifest() {
    VIM_MANIFEST=$(mktemp /tmp/k8s-mgmt-vim.XXXXXX)
    TEMP_FILES+=("$VIM_MANIFEST")
    render_vim_account >"$VIM_MANIFEST"
}

start_vim_account() {
    "$DRY_RUN" && return 0
    write_vim_manifest
    # Its failure is vim_json's to report (no ERR trap in the job).
    (trap - ERR; admin_kubectl apply -f "$VIM_MANIFEST" >&2) &
    VIM_APPLY_PID=$!
    BACKGROUND_PIDS+=("$VIM_APPLY_PID")
}

# The VIM's ServiceAccount token and CA as one JSON object (token-secret,
# init -R).
vim_json() {
    local token ca
    if "$DRY_RUN"; then
        render_vim_account
        run kubectl --kubeconfig "$ADMIN_CONF" apply -f -
        return 0
    fi
    if [[ -n $VIM_APPLY_PID ]]; then
        wait "$VIM_APPLY_PID" || die "kubectl apply of the VIM ServiceAccount failed"
        VIM_APPLY_PID='' BACKGROUND_PIDS=()
    else
        write_vim_manifest
        admin_kubectl apply -f "$VIM_MANIFEST" >&2 || die "kubectl apply of the VIM ServiceAccount failed"
    fi
    poll_until "the token of Secret kube-system/$SA_NAME-token" read_vim_secret
    token=$(base64 -d <<<"$SECRET_TOKEN") || die "cannot decode the token"
    ca=$(base64 -d <<<"$SECRET_CA") || die "cannot decode the CA"
    [[ -n $ca ]] || ca=$(cat -- "$CA_CERT")
    printf '{"namespace": "kube-system", "service_account": %s, "secret": %s, "token": %s, "ca_cert": %s}\n' \
        "$(json_string "$SA_NAME")" "$(json_string "$SA_NAME-token")" \
        "$(json_string "$token")" "$(json_string "$ca")"
}

# init -R: both read-outs from the run that made the cluster, instead of two
# more runs of this script, as one JSON object {"join": ..., "vim": ...}.
# Its first line holds the join data whole ({"join": {...}), printed as soon
# as kubeadm init is done (feature join-first): the driver starts the joins
# on it while the CNI and the VIM's account go in.
# Not through command substitutions: their subshells would leave the
# temporary files (one holds the certificate key) out of the cleanup.
report_join() {
    "$DRY_RUN" || printf '{"join": '
    join_json
}

report_vim() {
    "$DRY_RUN" || printf ', "vim": '
    vim_json
    "$DRY_RUN" || printf '}\n'
}

# ------------------------------------------------------------------ main

JOIN_CONFIG=""
CONTAINERD_RESTART=false
HELM_VERSION=""
HELM_SOURCE=""
HELM_SHA256=""
HELM_BIN=/usr/local/bin/helm
REGISTRIES=()
HOSTS_LINES=()
# -s's registry_auth_N, at index N (the N-th -g registry).
REGISTRY_AUTHS=()

# -p: the prepare mode ran on this node moments ago with these options (in
# the driver's same operation), so its checks are not run again; only what
# this process needs from it is set: the proxy environment kubeadm sees.
prepare_node_or_skip() {
    if "$PREPARED"; then
        log "prepared by this operation's prepare run; its checks skipped"
        if proxy_configured; then export_proxy_env; fi
        return 0
    fi
    prepare_node
}

prepare_node() {
    run_step "check OS" check_os
    run_step proxy configure_proxy
    run_step "kernel modules and sysctls" configure_kernel
    run_step "swap off" disable_swap
    run_step "Kubernetes package repository" add_k8s_apt_repo
    run_step containerd install_containerd
    run_step "Kubernetes packages" install_k8s_packages
}

main() {
    ORIGINAL_ARGS=("$@")
    exec 4>&1 # dry-run output, kept apart from the commands' own stdout
    parse_args "$@"
    validate_args
    [[ -n $RENDER_DIR ]] || ensure_root
    read_secrets
    validate_secrets
    trap 'on_error $? $LINENO' ERR
    trap cleanup EXIT
    if [[ -n $RENDER_DIR ]]; then
        CURRENT_STEP="render"
        render_into_dir "$RENDER_DIR"
        return 0
    fi
    case $MODE in
        init)
            prepare_node_or_skip
            run_step "kubeadm init" kubeadm_init
            if "$REPORT"; then
                run_step "VIM account" start_vim_account
                run_step "join data" report_join
            fi
            run_step "user kubeconfig" install_user_kubeconfig
            run_step CNI install_cni
            run_step Multus install_multus
            if "$REPORT"; then run_step report report_vim; fi ;;
        join-master)
            prepare_node_or_skip
            run_step "kubeadm join (control plane)" kubeadm_join
            run_step "user kubeconfig" install_user_kubeconfig ;;
        join-worker)
            prepare_node_or_skip
            run_step "kubeadm join (worker)" kubeadm_join ;;
        print-join) run_step print-join print_join ;;
        prepare) prepare_node ;;
        token-secret) run_step token-secret token_secret ;;
        helm) run_step Helm install_helm ;;
        upgrade-* | certs-*) run_upgrade_mode ;;
    esac
    CURRENT_STEP=finished
}

# Sourced (by the bats tests) it only defines its functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
