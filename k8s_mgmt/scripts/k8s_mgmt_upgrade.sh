# shellcheck shell=bash
# k8s_mgmt_upgrade.sh: the upgrade modes of install_k8s_cluster.sh, which
# sources this file (the driver uploads it next to the script). Each mode
# prints one JSON object on stdout; kubeadm's and apt's output go to
# stderr.
#
#   upgrade-check  -k MINOR [-V VERSION] [-r URL] [-K KEY]
#       changes nothing: the installed versions, the control plane's (its
#       static pods' image tags), and what the target minor's repository
#       offers, read with a throwaway apt configuration
#   upgrade-apply  -k MINOR -V VERSION -a IP -H NAME [-r URL] [-K KEY]
#       on the first master: kubeadm at VERSION, "kubeadm upgrade apply",
#       then kubelet and kubectl; each skipped when already there
#   upgrade-node   -k MINOR -V VERSION -H NAME [-r URL] [-K KEY]
#       on every other node: the same with "kubeadm upgrade node"
#   certs-check    -k MINOR
#       on a master: kubeadm's certificate expiry tables, as kubeadm prints
#       them (changes nothing)
#   certs-renew    -k MINOR
#       on a master: kubeadm certs renew all, then its control plane's
#       static pods restarted one by one (their containers stopped: the
#       kubelet starts them again with the new certificates), the API
#       waited for; then the tables, as certs-check prints them
#
# The packages are held at VERSION afterwards, as install leaves them.

readonly CONTROL_PLANE_PODS="kube-apiserver kube-controller-manager kube-scheduler"
readonly KUBELET_HEALTHZ=http://127.0.0.1:10248/healthz
readonly UPGRADE_MODES="upgrade-check upgrade-apply upgrade-node certs-check certs-renew"
# The static pods that read the certificates, in the order they restart.
readonly CERT_PODS="etcd kube-apiserver kube-controller-manager kube-scheduler"

is_upgrade_mode() {
    [[ " $UPGRADE_MODES " == *" $1 "* ]]
}

validate_upgrade_needs() {
    is_upgrade_mode "$MODE" || return 0
    ! "$PREPARED" || usage_error "-p is for init and the joins only"
    [[ $MODE == upgrade-check || $MODE == certs-* || -n $K8S_VERSION ]] ||
        usage_error "$MODE needs -V VERSION (the exact version, such as ${K8S_MINOR:-1.36}.1)"
    [[ $MODE == upgrade-check || $MODE == certs-* || -n $NODE_NAME ]] ||
        usage_error "$MODE needs -H (the node's name)"
    [[ $MODE != upgrade-apply || -n $ADVERTISE_ADDRESS ]] || usage_error "upgrade-apply needs -a (advertise address)"
}

# The image tag of a static pod manifest (v1.36.1), "" without one.
manifest_tag() {
    local file=$1 line
    [[ -f $file ]] || return 0
    while IFS= read -r line; do
        if [[ $line =~ ^[[:space:]]*image:[[:space:]]*[^[:space:]]+:(v1\.[0-9]+\.[0-9]+)[[:space:]]*$ ]]; then
            printf '%s\n' "${BASH_REMATCH[1]}"
            return 0
        fi
    done <"$file"
}

# The oldest tag of the control plane's static pods; "" on a worker, or
# when one of them names no tag.
control_plane_version() {
    local pod tag
    local -a tags=()
    for pod in $CONTROL_PLANE_PODS; do
        [[ -f $K8S_DIR/manifests/$pod.yaml ]] || continue
        tag=$(manifest_tag "$K8S_DIR/manifests/$pod.yaml")
        [[ -n $tag ]] || return 0
        tags+=("$tag")
    done
    [[ ${#tags[@]} -gt 0 ]] || return 0
    printf '%s\n' "${tags[@]}" | sort -V | head -n 1
}

# The kubeadm versions the target minor's repository offers, into
# OFFERED_VERSIONS, read into a throwaway apt configuration: the node's
# sources, lists and keyring stay as they are. UPGRADE_APT_ERROR says why
# none could be read.
OFFERED_VERSIONS=()
UPGRADE_APT_ERROR=""
offered_versions() {
    local dir location out version
    local -a opts
    OFFERED_VERSIONS=()
    UPGRADE_APT_ERROR=""
    dir=$(mktemp -d /tmp/k8s-mgmt-upgrade-apt.XXXXXX)
    TEMP_DIRS+=("$dir")
    mkdir -p "$dir/parts" "$dir/lists/partial" "$dir/cache/archives/partial"
    location=$(repo_key_location)
    if is_http "$location"; then
        if ! out=$(curl -fsS "${CURL_OPTS[@]}" -o "$dir/key" "$location" 2>&1); then
            UPGRADE_APT_ERROR="cannot fetch the repository's signing key from $location: $(last_line "$out")"
            return 0
        fi
    elif ! cp -- "$location" "$dir/key" 2>/dev/null; then
        UPGRADE_APT_ERROR="cannot read the repository's signing key $location"
        return 0
    fi
    if grep -q -- '-----BEGIN PGP PUBLIC KEY BLOCK-----' "$dir/key"; then
        if ! gpg --dearmor --batch --yes -o "$dir/keyring.gpg" "$dir/key" 2>/dev/null; then
            UPGRADE_APT_ERROR="the signing key from $location is no OpenPGP key"
            return 0
        fi
    else
        cp -- "$dir/key" "$dir/keyring.gpg"
    fi
    chmod 0644 "$dir/keyring.gpg"
    printf 'deb [signed-by=%s] %s /\n' "$dir/keyring.gpg" "$(repo_minor_url)" >"$dir/sources.list"
    opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=$dir/parts"
        -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
        -o "Acquire::http::Timeout=$APT_FETCH_SECONDS" -o "Acquire::https::Timeout=$APT_FETCH_SECONDS"
        -o Acquire::Retries=3)
    if ! out=$(timeout -k 5 "$WAIT_SECONDS" apt-get -q "${opts[@]}" update 2>&1); then
        printf '%s\n' "$out" >&2
        UPGRADE_APT_ERROR="cannot read the Kubernetes package repository $(repo_minor_url): $(apt_error "$out")"
        return 0
    fi
    while IFS= read -r version; do
        [[ -n $version ]] && OFFERED_VERSIONS+=("$version")
    done < <(apt-cache "${opts[@]}" madison kubeadm 2>/dev/null |
        while IFS='|' read -r _ version _; do
            version=${version//[[:space:]]/}
            [[ $version =~ ^(1\.[0-9]+\.[0-9]+)- ]] && printf '%s\n' "${BASH_REMATCH[1]}"
        done | sort -uV)
}

json_list() {
    local item first=true
    printf '['
    for item in "$@"; do
        "$first" || printf ', '
        first=false
        json_string "$item"
    done
    printf ']'
}

upgrade_check() {
    offered_versions
    printf '{"node": %s, "kubeadm": %s, "kubelet": %s, "kubectl": %s, "control_plane": %s, "offered": %s, "apt_error": %s}\n' \
        "$(json_string "$(hostname)")" \
        "$(json_string "$(installed_version kubeadm)")" \
        "$(json_string "$(installed_version kubelet)")" \
        "$(json_string "$(installed_version kubectl)")" \
        "$(json_string "$(control_plane_version)")" \
        "$(json_list "${OFFERED_VERSIONS[@]}")" \
        "$(json_string "$UPGRADE_APT_ERROR")"
}

# The node's apt source switched to the target minor (its key installed).
switch_apt_source() {
    install_repo_key
    render_apt_source | write_or_show "$APT_SOURCE" 0644
    apt_get update
}

# tool=PIN for each of TOOLS not at the target; installed, all held.
upgrade_packages() {
    local tool pin
    local -a wanted=()
    for tool in "$@"; do
        [[ $(installed_version "$tool") == "v$K8S_VERSION" ]] || wanted+=("$tool")
    done
    if [[ ${#wanted[@]} -eq 0 ]]; then
        log "$* already at $K8S_VERSION"
        UPGRADE_PACKAGES=kept
        return 0
    fi
    pin=$(pick_version)
    apt_get install --allow-change-held-packages "${wanted[@]/%/=$pin}"
    hold_k8s_packages
    UPGRADE_PACKAGES=installed
}

# The kubeadm step: apply (the first master) or node; skipped when the
# node's part is at the target already (a re-run).
UPGRADE_KUBEADM=""
upgrade_kubeadm() {
    local plane
    plane=$(control_plane_version)
    if [[ $MODE == upgrade-apply ]]; then
        if [[ $plane == "v$K8S_VERSION" ]] && kubeadm_config_at_target; then
            log "the control plane runs $K8S_VERSION already; kubeadm upgrade apply skipped"
            UPGRADE_KUBEADM=already
            return 0
        fi
        run kubeadm upgrade apply "v$K8S_VERSION" --yes >&2
    else
        if [[ -z $plane && -f $KUBELET_CONF ]] && [[ $(installed_version kubelet) == "v$K8S_VERSION" ]]; then
            log "kubelet runs $K8S_VERSION already; kubeadm upgrade node skipped"
            UPGRADE_KUBEADM=already
            return 0
        fi
        if [[ $plane == "v$K8S_VERSION" ]]; then
            log "the control plane runs $K8S_VERSION already; kubeadm upgrade node skipped"
            UPGRADE_KUBEADM=already
            return 0
        fi
        run kubeadm upgrade node >&2
    fi
    UPGRADE_KUBEADM=applied
}

# kubeadm-config names the target (the cluster's version).
kubeadm_config_at_target() {
    admin_kubectl -n kube-system get configmap kubeadm-config \
        -o jsonpath='{.data.ClusterConfiguration}' 2>/dev/null |
        grep -qE "^kubernetesVersion: \"?v?${K8S_VERSION//./\\.}\"?\$"
}

restart_kubelet() {
    systemctl_do daemon-reload
    systemctl_do restart kubelet
    "$DRY_RUN" || poll_until "kubelet's health endpoint" curl -fsS -o /dev/null --max-time 5 "$KUBELET_HEALTHZ"
    if [[ -n $(control_plane_version) ]] && ! "$DRY_RUN"; then
        poll_until "the API server to answer" api_answers
    fi
}

UPGRADE_PACKAGES=""
upgrade_node() {
    # The proxy as install configured it (apt's and containerd's files).
    if proxy_configured; then export_proxy_env; fi
    run_step "Kubernetes $K8S_MINOR package repository" switch_apt_source
    run_step "kubeadm $K8S_VERSION" upgrade_packages kubeadm
    run_step "kubeadm upgrade" upgrade_kubeadm
    run_step "kubelet and kubectl $K8S_VERSION" upgrade_packages kubelet kubectl
    run_step "kubelet restart" restart_kubelet
    [[ -z $(control_plane_version) ]] || run_step "user kubeconfig" install_user_kubeconfig
    printf '{"node": %s, "mode": %s, "version": %s, "kubeadm": %s, "packages": %s}\n' \
        "$(json_string "$NODE_NAME")" "$(json_string "$MODE")" \
        "$(json_string "$K8S_VERSION")" "$(json_string "$UPGRADE_KUBEADM")" \
        "$(json_string "$UPGRADE_PACKAGES")"
}

# kubeadm's tables on stdout, its notes with them (the driver reads the
# tables: k8s_mgmt/kube_certs.py).
certs_check() {
    [[ -f $ADMIN_CONF ]] || die "no $ADMIN_CONF: certs-check runs on a master"
    timeout -k 5 "$WAIT_SECONDS" kubeadm certs check-expiration
}

# The id of NAME's running container ("" when none runs).
container_of() {
    crictl --runtime-endpoint "$CRI_SOCKET" ps --name "$1" -q 2>/dev/null | head -n 1 || true
}

another_container() {
    local id
    id=$(container_of "$1")
    [[ -n $id && $id != "$2" ]]
}

# Stop NAME's container; the kubelet starts the static pod again (with
# what is on disk now), and a new container runs.
restart_static_pod() {
    local name=$1 old
    old=$(container_of "$name")
    if [[ -z $old ]]; then
        log "skipped: no running $name container to restart"
        return 0
    fi
    run crictl --runtime-endpoint "$CRI_SOCKET" stop "$old" >&2
    "$DRY_RUN" || poll_until "a new $name container" another_container "$name" "$old"
}

certs_renew() {
    [[ -f $ADMIN_CONF ]] || "$DRY_RUN" || die "no $ADMIN_CONF: certs-renew runs on a master"
    run kubeadm certs renew all >&2
    local pod
    for pod in $CERT_PODS; do
        restart_static_pod "$pod"
    done
    "$DRY_RUN" || poll_until "the API server to answer" api_answers
    install_user_kubeconfig
    "$DRY_RUN" || certs_check
}

run_upgrade_mode() {
    case $MODE in
        certs-check) certs_check ;;
        certs-renew) certs_renew ;;
        upgrade-check)
            if proxy_configured; then export_proxy_env; fi
            upgrade_check ;;
        upgrade-apply | upgrade-node) upgrade_node ;;
    esac
}
