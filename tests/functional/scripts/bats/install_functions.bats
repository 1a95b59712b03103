#!/usr/bin/env bats
# Functions of install_k8s_cluster.sh, each on its own.

load helpers

# "run" is the script's own here (see helpers.bash): bats' is bats_run.

setup() {
    export K8S_MGMT_STATE_DIR=$BATS_TEST_TMPDIR/state
    load_script install_k8s_cluster.sh
    # The installed kubeadm, as the rendering reads it.
    installed_version() { echo v1.35.2; }
}

@test "parse_args: the mode, then options" {
    parse_args join-master -e 10.0.0.100:16443 -a 10.0.0.12 -A -w 42 -H m-2 \
        -t "sha256:$(printf 'ab%.0s' {1..32})" -s - -n
    [ "$MODE" = join-master ]
    [ "$ENDPOINT" = 10.0.0.100:16443 ]
    [ "$ADVERTISE_ADDRESS" = 10.0.0.12 ]
    [ "$HA" = true ]
    [ "$DRY_RUN" = true ]
    [ "$WAIT_SECONDS" = 42 ]
    [ "$NODE_NAME" = m-2 ]
    [ "$SECRETS_SOURCE" = - ]
}

@test "parse_args: a missing or unknown mode or option is a usage error" {
    bats_run --separate-stderr parse_args
    [ "$status" -eq 2 ]
    [[ $stderr == *"missing mode"* ]]
    bats_run --separate-stderr parse_args upgrade
    [ "$status" -eq 2 ]
    [[ $stderr == *"unknown mode: upgrade"* ]]
    bats_run --separate-stderr parse_args -a 10.0.0.1
    [ "$status" -eq 2 ]
    [[ $stderr == *"missing mode before option -a"* ]]
    bats_run --separate-stderr parse_args init -Z
    [ "$status" -eq 2 ]
    [[ $stderr == *"unknown option -Z"* ]]
    bats_run --separate-stderr parse_args init -k
    [ "$status" -eq 2 ]
    [[ $stderr == *"option -k needs a value"* ]]
    bats_run --separate-stderr parse_args init extra
    [ "$status" -eq 2 ]
    [[ $stderr == *"unexpected argument: extra"* ]]
    bats_run -0 parse_args -h
    [[ ${lines[0]} == "Usage: install_k8s_cluster.sh MODE [options]" ]]
}

@test "validate_version: supported minors only" {
    K8S_MINOR=1.30 validate_version
    K8S_MINOR=1.37 validate_version
    K8S_MINOR=1.29 bats_run -2 validate_version
    K8S_MINOR=1.38 bats_run -2 validate_version
    K8S_MINOR=v1.35 bats_run -2 validate_version
    K8S_MINOR=1.35.2 bats_run -2 validate_version
}

@test "is_cidr: a network without host bits" {
    local value
    for value in 10.0.0.0/24 192.168.0.0/16 10.96.0.0/12 0.0.0.0/0 10.0.0.5/32; do
        is_cidr "$value" || { echo "refused $value"; false; }
    done
    for value in 10.0.0.5/24 10.0.0.0/33 10.0.0.0 10.0.0.0/ 10.0.0.0/a 010.0.0.0/8 /24; do
        if is_cidr "$value"; then echo "accepted $value"; false; fi
    done
}

@test "is_host_port: HOST:PORT with a port of 1-65535" {
    is_host_port 10.0.0.100:16443
    is_host_port api.example:6443
    bats_run ! is_host_port 10.0.0.100
    bats_run ! is_host_port 10.0.0.100:0
    bats_run ! is_host_port 10.0.0.100:65536
    bats_run ! is_host_port 'a b:80'
    bats_run ! is_host_port '[::1]:6443'
}

@test "is_node_name and is_plain_list" {
    is_node_name master-1
    is_node_name a
    is_node_name w1.lab
    bats_run ! is_node_name Master-1
    bats_run ! is_node_name -m
    bats_run ! is_node_name m-
    is_plain_list ''
    is_plain_list 'a.example,10.0.0.0/8,*.svc'
    bats_run ! is_plain_list 'a b'
    bats_run ! is_plain_list "a'b"
    bats_run ! is_plain_list 'a"b'
}

@test "is_proxy_url: http(s), optional credentials and port, nothing else" {
    local url
    for url in http://proxy:3128 https://proxy.example/ http://u:p%40ss@10.0.0.1:8080 \
        'http://user:pa$$@proxy:3128'; do
        is_proxy_url "$url" || { echo "refused $url"; false; }
    done
    for url in ftp://proxy:21 http:// http://proxy:0 http://proxy:99999 \
        http://proxy/path http://300.1.1.1:80 'http://u p@proxy' http://-bad-:80; do
        if is_proxy_url "$url"; then echo "accepted $url"; false; fi
    done
}

@test "json_string escapes quotes, backslashes and control characters" {
    [ "$(json_string 'plain')" = '"plain"' ]
    [ "$(json_string 'a"b\c')" = '"a\"b\\c"' ]
    [ "$(json_string $'l1\nl2\r\tx')" = '"l1\nl2\r\tx"' ]
    # What python reads back is the original.
    local text=$'-----BEGIN-----\nQUJD\n"x"\\\n-----END-----'
    [ "$(json_string "$text" | python3 -c 'import json,sys; print(json.load(sys.stdin), end="")')" = "$text" ]
}

@test "api_version and kubelet extra args follow the minor" {
    ADVERTISE_ADDRESS=10.0.0.11
    K8S_MINOR=1.30
    [ "$(api_version)" = kubeadm.k8s.io/v1beta3 ]
    [ "$(render_kubelet_extra_args)" = $'  kubeletExtraArgs:\n    node-ip: "10.0.0.11"' ]
    K8S_MINOR=1.31
    [ "$(api_version)" = kubeadm.k8s.io/v1beta4 ]
    [ "$(render_kubelet_extra_args)" = $'  kubeletExtraArgs:\n  - name: node-ip\n    value: "10.0.0.11"' ]
    ADVERTISE_ADDRESS=""
    [ -z "$(render_kubelet_extra_args)" ]
}

@test "render_init_config: the whole kubeadm config of an HA first master" {
    MODE=init ADVERTISE_ADDRESS=10.0.0.11 NODE_NAME=master-1
    ENDPOINT=10.0.0.100:16443 EXTRA_SANS=api.example,10.0.0.100
    bats_run -0 render_init_config
    [ "$output" = 'apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: "10.0.0.11"
  bindPort: 6443
nodeRegistration:
  name: "master-1"
  criSocket: "unix:///run/containerd/containerd.sock"
  kubeletExtraArgs:
  - name: node-ip
    value: "10.0.0.11"
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: "v1.35.2"
controlPlaneEndpoint: "10.0.0.100:16443"
networking:
  podSubnet: "192.168.0.0/16"
  serviceSubnet: "10.96.0.0/12"
  dnsDomain: cluster.local
apiServer:
  certSANs:
  - "api.example"
  - "10.0.0.100"
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd' ]
}

@test "kubernetesVersion is the release label when kubeadm has another minor" {
    installed_version() { echo v1.34.1; }
    [ "$(kubernetes_version)" = stable-1.35 ]
}

@test "render_join_config: a worker's has no control plane, a master's has its key" {
    ENDPOINT=10.0.0.100:16443 NODE_NAME=worker-1 ADVERTISE_ADDRESS=""
    JOIN_TOKEN=abcdef.0123456789abcdef CA_CERT_HASH=sha256:c4c4
    CERTIFICATE_KEY=$(printf '3f%.0s' {1..32})
    MODE=join-worker
    bats_run -0 render_join_config
    [[ $output == *'    apiServerEndpoint: "10.0.0.100:16443"'* ]]
    [[ $output == *'    token: "abcdef.0123456789abcdef"'* ]]
    [[ $output == *'    - "sha256:c4c4"'* ]]
    [[ $output != *controlPlane* && $output != *"$CERTIFICATE_KEY"* ]]
    MODE=join-master ADVERTISE_ADDRESS=10.0.0.12
    bats_run -0 render_join_config
    [[ $output == *$'controlPlane:\n  localAPIEndpoint:\n    advertiseAddress: "10.0.0.12"\n    bindPort: 6443\n  certificateKey: "'"$CERTIFICATE_KEY"'"'* ]]
}

@test "no_proxy_list: fixed entries, networks, the endpoint host, -x; no repeats" {
    ENDPOINT=10.0.0.100:16443 NODE_CIDR=10.0.0.0/24
    EXTRA_NO_PROXY=.example,localhost,,10.0.0.100,registry
    [ "$(no_proxy_list)" = 'localhost,127.0.0.1,.svc,.cluster.local,192.168.0.0/16,10.96.0.0/12,10.0.0.100,10.0.0.0/24,.example,registry' ]
}

@test "render_containerd_proxy: systemd lines, % doubled, no quotes" {
    HTTP_PROXY_URL=http://u:p%40ss@proxy:3128
    bats_run -0 render_containerd_proxy
    [ "${lines[0]}" = '[Service]' ]
    [ "${lines[1]}" = 'Environment="http_proxy=http://u:p%%40ss@proxy:3128"' ]
    [[ $output != *"'"* ]]
    [[ $output == *'Environment="NO_PROXY=localhost,'* ]]
}

@test "mask_secrets hides tokens, keys and proxy credentials" {
    bats_run -0 mask_secrets <<'EOF2'
    token: "abcdef.0123456789abcdef"
  certificateKey: "3f3f"
Acquire::http::Proxy "http://user:pw@proxy:3128";
  name: "kept"
EOF2
    [ "$output" = '    token: "***"
  certificateKey: "***"
Acquire::http::Proxy "http://***:***@proxy:3128";
  name: "kept"' ]
}

@test "store_secret: values by shape; messages name the key, not the value" {
    store_secret token abcdef.0123456789abcdef
    [ "$JOIN_TOKEN" = abcdef.0123456789abcdef ]
    store_secret https_proxy http://proxy:3128
    [ "$HTTPS_PROXY_URL" = http://proxy:3128 ]
    bats_run --separate-stderr store_secret token not-a-token-s3cret
    [ "$status" -eq 2 ]
    [[ $stderr == *"secret 'token' is not a bootstrap token"* ]]
    [[ $stderr != *s3cret* ]]
    bats_run --separate-stderr store_secret certificate_key abc
    [ "$status" -eq 2 ]
    bats_run --separate-stderr store_secret password s3cret
    [ "$status" -eq 2 ]
    [[ $stderr == *"unknown key in secrets input: 'password'"* ]]
}

@test "write_or_show in a dry run shows the file, masked, and writes nothing" {
    local dest=$BATS_TEST_TMPDIR/etc/join.yaml out=$BATS_TEST_TMPDIR/shown
    DRY_RUN=true
    printf '    token: "abcdef.0123456789abcdef"\n' | write_or_show "$dest" 0600 4>"$out"
    [ "$WRITE_FILE_CHANGED" = true ]
    [ ! -e "$dest" ]
    [ ! -e "$BATS_TEST_TMPDIR/etc" ]
    [ "$(cat "$out")" = "# would write $dest (mode 0600):
    token: \"***\"" ]
    # The same content already there: nothing to show.
    mkdir -p "$(dirname "$dest")"
    printf 'same\n' >"$dest"
    printf 'same\n' | write_or_show "$dest" 0600 4>"$out"
    [ "$WRITE_FILE_CHANGED" = false ]
    [ ! -s "$out" ]
}

@test "write_or_show outside a dry run is write_file" {
    local dest=$BATS_TEST_TMPDIR/etc/f.conf
    DRY_RUN=false
    printf 'x=1\n' | write_or_show "$dest" 0644 4>/dev/null
    [ "$WRITE_FILE_CHANGED" = true ]
    [ "$(cat "$dest")" = x=1 ]
    printf 'x=1\n' | write_or_show "$dest" 0644 4>/dev/null
    [ "$WRITE_FILE_CHANGED" = false ]
}

@test "poll_until: backoff until the deadline, then a timed-out failure" {
    CURRENT_STEP=print-join WAIT_SECONDS=1
    bats_run --separate-stderr poll_until "the API server" false
    [ "$status" -eq 1 ]
    [ "$stderr" = "install_k8s_cluster.sh: print-join: timed out after 1s waiting for the API server" ]
    poll_until "a quick thing" true
}

@test "the rendered files of -o are the render functions' output" {
    MODE=init ADVERTISE_ADDRESS=10.0.0.11 NODE_NAME=master-1
    bats_run -0 render_into_dir "$BATS_TEST_TMPDIR/out"
    [ "$(cat "$BATS_TEST_TMPDIR/out/kubeadm-init.yaml")" = "$(render_init_config)" ]
    [ "$(cat "$BATS_TEST_TMPDIR/out/sysctl-k8s.conf")" = "$(render_sysctl)" ]
    [ "$(mode_of "$BATS_TEST_TMPDIR/out/kubernetes.list")" = 600 ]
}

# The next two run steps whose files are under the host's /etc: a dry run
# must not write them, and if it tried, this stand-in refuses.
refuse_writes() {
    write_file() {
        echo "write_file $1 in a dry run" >&2
        return 1
    }
}

@test "a changed proxy drop-in reloads systemd and restarts containerd (dry run)" {
    refuse_writes
    DRY_RUN=true
    HTTP_PROXY_URL=http://proxy:3128
    configure_proxy 4>"$BATS_TEST_TMPDIR/out"
    grep -qF '# would write /etc/systemd/system/containerd.service.d/http-proxy.conf' "$BATS_TEST_TMPDIR/out"
    grep -qxF '+ systemctl daemon-reload' "$BATS_TEST_TMPDIR/out"
    [ "$CONTAINERD_RESTART" = true ]
}

# A /proc/sys of the test's own: ip_forward off, the bridge settings on.
fake_sysctls() {
    SYSCTL_DIR=$BATS_TEST_TMPDIR/sys
    mkdir -p "$SYSCTL_DIR/net/ipv4" "$SYSCTL_DIR/net/bridge"
    echo 0 >"$SYSCTL_DIR/net/ipv4/ip_forward"
    echo 1 >"$SYSCTL_DIR/net/bridge/bridge-nf-call-iptables"
    echo 1 >"$SYSCTL_DIR/net/bridge/bridge-nf-call-ip6tables"
}

@test "only the sysctls that differ are set (dry run)" {
    refuse_writes
    fake_sysctls
    DRY_RUN=true
    module_present() { true; }
    configure_kernel 4>"$BATS_TEST_TMPDIR/out"
    grep -qxF '+ sysctl -q -w net.ipv4.ip_forward=1' "$BATS_TEST_TMPDIR/out"
    [ "$(grep -c '^+ sysctl' "$BATS_TEST_TMPDIR/out")" -eq 1 ]
}

@test "a sysctl the kernel lacks or keeps read-only is reported skipped, with the reason" {
    refuse_writes
    fake_sysctls
    rm "$SYSCTL_DIR/net/bridge/bridge-nf-call-ip6tables"
    DRY_RUN=true
    module_present() { true; }
    sysctl_writable() { [[ $1 != */ip_forward ]]; }
    bats_run --separate-stderr -0 configure_kernel 4>"$BATS_TEST_TMPDIR/out"
    [[ $stderr == *"skipped: sysctl net.bridge.bridge-nf-call-ip6tables: this kernel has no such setting here"* ]]
    [[ $stderr == *"skipped: sysctl net.ipv4.ip_forward = 1: read-only here (it is 0)"* ]]
    ! grep -q '^+ sysctl' "$BATS_TEST_TMPDIR/out"
}

@test "in a container, a missing module and the host's swap are skipped with the reason" {
    refuse_writes
    fake_sysctls
    echo k8s-mgmt-lab >"$BATS_TEST_TMPDIR/container"
    CONTAINER_FILE=$BATS_TEST_TMPDIR/container
    DRY_RUN=true
    module_present() { [[ $1 == overlay ]]; }
    bats_run --separate-stderr -0 configure_kernel 4>"$BATS_TEST_TMPDIR/out"
    [[ $stderr == *"skipped: kernel module br_netfilter is not loaded, and this node is a container (k8s-mgmt-lab)"* ]]
    ! grep -q modprobe "$BATS_TEST_TMPDIR/out"
    # Outside a container the module is loaded.
    CONTAINER_FILE=$BATS_TEST_TMPDIR/none
    configure_kernel 4>"$BATS_TEST_TMPDIR/out"
    grep -qxF '+ modprobe br_netfilter' "$BATS_TEST_TMPDIR/out"
}

@test "the repository: per-minor source with signed-by, key from the minor's directory by default" {
    parse_args prepare -k 1.34 -r http://10.254.3.1:8088/core:/stable: -V 1.34.1
    validate_version
    validate_repository
    [ "$REPO_URL" = http://10.254.3.1:8088/core:/stable:/ ]
    [ "$(render_apt_source)" = "deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] http://10.254.3.1:8088/core:/stable:/v1.34/deb/ /" ]
    [ "$(repo_key_location)" = http://10.254.3.1:8088/core:/stable:/v1.34/deb/Release.key ]
    # The defaults: pkgs.k8s.io.
    REPO_URL=$DEFAULT_REPO_URL K8S_MINOR=1.35
    [ "$(render_apt_source)" = "deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v1.35/deb/ /" ]
}

@test "the repository: a bad URL, key or version is a usage error naming it" {
    local bad
    for bad in 'ftp://mirror/k8s/' 'http://mirror/k8s dir/' 'http://mirror/$(id)/' "http://mirror/k8s'/" 'http:///x'; do
        REPO_URL=$bad
        bats_run --separate-stderr validate_repository
        [ "$status" -eq 2 ]
        [[ $stderr == *"bad -r repository URL"* ]]
    done
    REPO_URL=http://mirror/k8s/ REPO_KEY=$BATS_TEST_TMPDIR/missing.key
    bats_run --separate-stderr validate_repository
    [ "$status" -eq 2 ]
    [[ $stderr == *"-K: no readable key file"* ]]
    REPO_KEY='key;rm'
    bats_run --separate-stderr validate_repository
    [ "$status" -eq 2 ]
    K8S_MINOR=1.35 K8S_VERSION=1.34.2
    bats_run --separate-stderr validate_version
    [ "$status" -eq 2 ]
    [[ $stderr == *"bad -V '1.34.2' (want 1.35.PATCH"* ]]
    K8S_VERSION=1.35.2
    validate_version
}

@test "pick_version: -V's exact version, else the newest of the minor; none is one line naming the URL" {
    apt-cache() {
        printf '   kubeadm | 1.35.1-1.1 | http://m/ Packages\n'
        printf '   kubeadm | 1.35.0-1.1 | http://m/ Packages\n'
        printf '   kubeadm | 1.34.9-1.1 | http://m/ Packages\n'
    }
    K8S_MINOR=1.35 K8S_VERSION=""
    [ "$(pick_version)" = 1.35.1-1.1 ]
    K8S_VERSION=1.35.0
    [ "$(pick_version)" = 1.35.0-1.1 ]
    K8S_VERSION=1.35.7 REPO_URL=http://m/
    bats_run --separate-stderr pick_version
    [ "$status" -eq 1 ]
    [ "$stderr" = "install_k8s_cluster.sh: arguments: the Kubernetes package repository http://m/v1.35/deb/ has no kubeadm 1.35.7 (it offers: 1.35.1-1.1 1.35.0-1.1 1.34.9-1.1)" ]
}

@test "the packages: unhold, install at the exact version and hold, in one step (dry run)" {
    DRY_RUN=true
    NEEDED_K8S=(kubeadm kubelet kubectl)
    K8S_VERSION=1.35.1
    install_k8s_packages 4>"$BATS_TEST_TMPDIR/out"
    grep -qF 'apt-get -y -q' "$BATS_TEST_TMPDIR/out"
    grep -qE -- '--allow-change-held-packages kubeadm=1\.35\.1-\\\* kubelet=1\.35\.1-\\\* kubectl=1\.35\.1-\\\*$' "$BATS_TEST_TMPDIR/out"
}

@test "apt_error: apt's first error on one line" {
    local out=$'Hit:1 file:/x ./ InRelease\nErr:2 http://10.0.0.1:8088/v1.35/deb  InRelease\n  Could not connect to 10.0.0.1:8088 (10.0.0.1). - connect (111: Connection refused)\nE: Failed to fetch http://10.0.0.1:8088/v1.35/deb/InRelease'
    [ "$(apt_error "$out")" = "Err:2 http://10.0.0.1:8088/v1.35/deb  InRelease" ]
    [ "$(apt_error $'a\nlast words\n\n')" = "last words" ]
}

@test "install_repo_key: an armored key is de-armored into the keyring; the same key again changes nothing" {
    command -v gpg >/dev/null || skip "no gpg"
    export GNUPGHOME=$BATS_TEST_TMPDIR/gnupg
    mkdir -m 0700 "$GNUPGHOME"
    gpg --batch --quiet --passphrase '' --quick-gen-key 'k8s-mgmt test <test@invalid>' ed25519 sign never 2>/dev/null
    gpg --batch --export --armor >"$BATS_TEST_TMPDIR/Release.key"
    gpgconf --kill all
    APT_KEYRING=$BATS_TEST_TMPDIR/keyrings/kubernetes-apt-keyring.gpg
    REPO_KEY=$BATS_TEST_TMPDIR/Release.key
    bats_run --separate-stderr -0 install_repo_key
    [[ $stderr == *"signing key of the Kubernetes package repository from $REPO_KEY installed"* ]]
    [ "$(head -c 1 "$APT_KEYRING" | od -An -tx1 | tr -d ' ')" != 2d ]   # binary, not "-----"
    bats_run --separate-stderr -0 install_repo_key
    [ -z "$stderr" ]
}

@test "install_repo_key: an unreachable key URL is one line naming it" {
    REPO_KEY=http://127.0.0.1:9/Release.key
    APT_KEYRING=$BATS_TEST_TMPDIR/keyrings/k.gpg
    bats_run --separate-stderr install_repo_key
    [ "$status" -eq 1 ]
    [[ $stderr == "install_k8s_cluster.sh: arguments: cannot fetch the signing key of the Kubernetes package repository from http://127.0.0.1:9/Release.key: curl: (7)"* ]]
    [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
}

# start_vim_account, then vim_json, in one shell (the one that waits for the
# background apply must be the one that started it, as in main).
vim_report() { start_vim_account; vim_json; }

@test "init -R: the VIM account applied in the background, its failure reported by vim_json" {
    admin_kubectl() { sleep 0.2; echo "applied $*" >"$BATS_TEST_TMPDIR/apply"; return 3; }
    start_vim_account
    [ -n "$VIM_APPLY_PID" ]
    [ "${BACKGROUND_PIDS[*]}" = "$VIM_APPLY_PID" ]
    wait "$VIM_APPLY_PID" || true
    bats_run --separate-stderr vim_report
    [ "$status" -ne 0 ]
    [[ $stderr == *"kubectl apply of the VIM ServiceAccount failed"* ]]
    [[ $stderr != *"failed (exit"* ]]  # the job ran no ERR trap
    [[ $(cat "$BATS_TEST_TMPDIR/apply") == "applied apply -f "* ]]
}

@test "init -R: vim_json waits for the background apply, then reads the Secret" {
    admin_kubectl() {
        case $1 in
            apply) sleep 0.2; touch "$BATS_TEST_TMPDIR/applied" ;;
            *) [ -e "$BATS_TEST_TMPDIR/applied" ] || return 1
               printf '%s|%s' "$(printf tok | base64)" "$(printf ca | base64)" ;;
        esac
    }
    bats_run --separate-stderr vim_report
    [ "$status" -eq 0 ]
    [[ $output == *'"token": "tok"'* ]]
    [[ $output == *'"ca_cert": "ca"'* ]]
}

@test "init -R: the first line of the report is the whole join data (join-first)" {
    join_json() { printf '{"token": "t", "ca_cert_hash": "h"}\n'; }
    vim_json() { printf '{"token": "v"}\n'; }
    bats_run --separate-stderr report_join
    [ "$status" -eq 0 ]
    [ "$output" = '{"join": {"token": "t", "ca_cert_hash": "h"}' ]
    report() { report_join; report_vim; }
    bats_run --separate-stderr report
    [ "${lines[0]}" = '{"join": {"token": "t", "ca_cert_hash": "h"}' ]
    python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert d["join"]["token"] == "t" and d["vim"]["token"] == "v"' "$output"
}

@test "cleanup stops a background job and what it runs" {
    (trap - ERR; sleep 30; true) &  # "; true": sleep runs as a child
    local job=$!
    BACKGROUND_PIDS+=("$job")
    local child
    # Polled for up to 10 s each way: on a loaded machine the subshell's
    # sleep may start, and die, well after a second.
    for _ in $(seq 100); do
        child=$(pgrep -P "$job" || true)
        [ -n "$child" ] && break
        sleep 0.1
    done
    [ -n "$child" ]
    cleanup
    wait "$job" || true
    for _ in $(seq 100); do
        kill -0 "$child" 2>/dev/null || break
        sleep 0.1
    done
    ! kill -0 "$child" 2>/dev/null
}

@test "prepare_node_or_skip -p: no prepare step runs, the proxy still reaches kubeadm" {
    prepare_node() { echo "prepare ran"; }
    parse_args join-worker -p -e 10.0.0.100:16443
    HTTPS_PROXY_URL=http://proxy.example:3128
    unset https_proxy HTTPS_PROXY no_proxy
    bats_run --separate-stderr prepare_node_or_skip
    [ "$status" -eq 0 ]
    [ "$output" = '' ]
    [[ $stderr == *"its checks skipped"* ]]
    # Not in bats_run's subshell: the exports are seen by what runs next.
    prepare_node_or_skip 2>/dev/null
    [ "$https_proxy" = http://proxy.example:3128 ]
    [[ $no_proxy == *10.0.0.100* ]]
    [ "$(bash -c 'echo "$HTTPS_PROXY"')" = http://proxy.example:3128 ]
}

@test "prepare_node_or_skip without -p runs the prepare" {
    prepare_node() { echo "prepare ran"; }
    parse_args join-worker -e 10.0.0.100:16443
    bats_run prepare_node_or_skip
    [ "$output" = 'prepare ran' ]
}

@test "-g and -G: registries and hosts lines, each checked" {
    parse_args prepare -g "https://reg.example:5000,/root/ca.crt" -g http://10.0.0.9:5000 \
        -G "10.0.0.8 reg.example reg"
    [ "${REGISTRIES[*]}" = "https://reg.example:5000,/root/ca.crt http://10.0.0.9:5000" ]
    [ "${HOSTS_LINES[0]}" = "10.0.0.8 reg.example reg" ]
    validate_registries
    REGISTRIES=("https://reg,.k8s-mgmt/registry-ca-reg.crt")
    validate_registries
    for bad in reg.example:5000 ftp://reg "https://reg:0" "https://reg:5000/v2" \
        "http://reg:5000,/root/ca.crt" "https://reg,../ca.crt" "https://reg,a b.crt" \
        'https://reg;id' 'https://reg,$(id).crt'; do
        REGISTRIES=("$bad") HOSTS_LINES=()
        bats_run --separate-stderr validate_registries
        [ "$status" -eq 2 ]
        [[ $stderr == *"bad -g registry '$bad'"* ]]
    done
    for bad in "reg.example" "10.0.0.8" "10.0.0.256 reg" '10.0.0.8 reg$(id)' "10.0.0.8  reg"; do
        REGISTRIES=() HOSTS_LINES=("$bad")
        bats_run --separate-stderr validate_registries
        [ "$status" -eq 2 ]
        [[ $stderr == *"bad -G hosts line"* ]]
    done
}

@test "configure_registries: hosts.toml per registry, its CA trusted, hosts lines marked" {
    fake_registry_files
    REGISTRIES=("https://reg.example:5000,$BATS_TEST_TMPDIR/ca.crt" http://10.0.0.9:5000)
    HOSTS_LINES=("10.0.0.8 reg.example")
    configure_registries 2>/dev/null
    grep -qxF "  config_path = \"$CERTS_D\"" "$CONTAINERD_CONFIG"
    [ "$CONTAINERD_RESTART" = true ]
    [ "$(cat "$CERTS_D/reg.example:5000/hosts.toml")" = "server = \"https://reg.example:5000\"

[host.\"https://reg.example:5000\"]
  capabilities = [\"pull\", \"resolve\"]
  ca = \"$CERTS_D/reg.example:5000/ca.crt\"" ]
    cmp "$BATS_TEST_TMPDIR/ca.crt" "$CERTS_D/reg.example:5000/ca.crt"
    cmp "$BATS_TEST_TMPDIR/ca.crt" "$CA_DIR/k8s-mgmt-reg.example_5000.crt"
    [ "$(cat "$CERTS_D/10.0.0.9:5000/hosts.toml")" = 'server = "http://10.0.0.9:5000"

[host."http://10.0.0.9:5000"]
  capabilities = ["pull", "resolve"]' ]
    [ "$(cat "$BATS_TEST_TMPDIR/ran")" = update-ca-certificates ]
    [ "$(cat "$HOSTS_FILE")" = "127.0.0.1 localhost
10.0.0.5 node-1
10.0.0.8 reg.example # k8s-mgmt: private registry" ]
    # Again (a heal, a re-run): nothing changes, no restart, no CA update.
    CONTAINERD_RESTART=false
    rm "$BATS_TEST_TMPDIR/ran"
    configure_registries 2>/dev/null
    [ "$CONTAINERD_RESTART" = false ]
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    [ "$(grep -c 'k8s-mgmt: private registry' "$HOSTS_FILE")" -eq 1 ]
    # Another hosts line replaces the old one; none removes it.
    HOSTS_LINES=("10.0.0.7 reg.example")
    configure_registries 2>/dev/null
    [ "$(grep 'k8s-mgmt' "$HOSTS_FILE")" = "10.0.0.7 reg.example # k8s-mgmt: private registry" ]
    REGISTRIES=() HOSTS_LINES=()
    configure_registries 2>/dev/null
    ! grep -q 'k8s-mgmt' "$HOSTS_FILE"
}

@test "configure_registries: a CA that is not on the node stops, naming it" {
    fake_registry_files
    REGISTRIES=("https://reg.example:5000,$BATS_TEST_TMPDIR/missing.crt")
    bats_run --separate-stderr configure_registries
    [ "$status" -ne 0 ]
    [[ $stderr == *"the CA certificate $BATS_TEST_TMPDIR/missing.crt of registry reg.example:5000 is not on this node"* ]]
}

@test "configure_registries: nothing asked, nothing touched" {
    fake_registry_files
    REGISTRIES=() HOSTS_LINES=()
    cp "$CONTAINERD_CONFIG" "$BATS_TEST_TMPDIR/before"
    configure_registries
    cmp "$CONTAINERD_CONFIG" "$BATS_TEST_TMPDIR/before"
    [ ! -e "$CERTS_D" ]
    [ "$CONTAINERD_RESTART" = false ]
}

# A Helm release archive whose helm answers "version" as Helm does.
fake_helm_archive() {
    local release=$1 dir=$BATS_TEST_TMPDIR/helm-src
    mkdir -p "$dir/linux-amd64"
    printf '#!/bin/sh\n[ "$1" = version ] && echo %s\n' "$release" >"$dir/linux-amd64/helm"
    chmod 0755 "$dir/linux-amd64/helm"
    tar -czf "$BATS_TEST_TMPDIR/helm.tar.gz" -C "$dir" linux-amd64
    sha256sum <"$BATS_TEST_TMPDIR/helm.tar.gz" | cut -d' ' -f1
}

@test "helm: -L, -m and for a URL -M, each checked" {
    parse_args helm -L 3.16.2 -m Files/helm.tar.gz
    validate_mode_needs
    for args in "-m f.tgz" "-L 3.16 -m f.tgz" "-L v3.16.2 -m f.tgz" "-L 3.16.2" \
        "-L 3.16.2 -m https://get.helm.sh/h.tgz" "-L 3.16.2 -m ../f.tgz" \
        "-L 3.16.2 -m f.tgz -M abc"; do
        HELM_VERSION="" HELM_SOURCE="" HELM_SHA256=""
        # shellcheck disable=SC2086 # the words of each case
        parse_args helm $args
        bats_run --separate-stderr validate_mode_needs
        [ "$status" -eq 2 ]
        [[ $stderr == *helm* || $stderr == *-M* || $stderr == *-m* ]]
    done
}

@test "install_helm: the archive checked and its helm installed once" {
    local sha
    sha=$(fake_helm_archive v3.16.2)
    HELM_BIN=$BATS_TEST_TMPDIR/bin/helm
    mkdir -p "$BATS_TEST_TMPDIR/bin"
    HELM_VERSION=3.16.2 HELM_SOURCE=$BATS_TEST_TMPDIR/helm.tar.gz HELM_SHA256=$sha
    install_helm 2>"$BATS_TEST_TMPDIR/err"
    [ "$("$HELM_BIN" version)" = v3.16.2 ]
    grep -q "Helm v3.16.2 installed" "$BATS_TEST_TMPDIR/err"
    bats_run --separate-stderr install_helm
    [ "$status" -eq 0 ]
    [[ $stderr == *"Helm v3.16.2 already installed"* ]]
}

@test "install_helm: a wrong SHA-256 or another release stops, naming it" {
    local sha
    sha=$(fake_helm_archive v3.15.0)
    HELM_BIN=$BATS_TEST_TMPDIR/bin/helm
    HELM_VERSION=3.16.2 HELM_SOURCE=$BATS_TEST_TMPDIR/helm.tar.gz
    HELM_SHA256=$(printf '0%.0s' {1..64})
    bats_run --separate-stderr install_helm
    [ "$status" -ne 0 ]
    [[ $stderr == *"has sha256:$sha, not the expected sha256:000"* ]]
    HELM_SHA256=$sha
    bats_run --separate-stderr install_helm
    [ "$status" -ne 0 ]
    [[ $stderr == *"holds v3.15.0, not v3.16.2"* ]]
    [ ! -e "$HELM_BIN" ]
}

# A stand-in kubectl that keeps what it was asked to apply.
applied_by_kubectl() {
    admin_kubectl() {
        [ "$1 $2" = "apply -f" ] || return 9
        cp -- "$3" "$BATS_TEST_TMPDIR/applied-$(basename "$CURRENT_MANIFEST")"
    }
}

@test "-N, -y, -Y and -T: the CNI edit and Multus, each checked" {
    local sha
    sha=$(printf 'ab%.0s' {1..32})
    parse_args init -c https://h.example/c.yaml -N flannel-network \
        -y https://h.example/m.yml -Y "$sha" -T v4.3.0
    validate_multus
    for args in "-N other" "-y https://h.example/m.yml" "-y ../m.yml -Y $sha" \
        "-y https://h.example/m.yml -Y $sha -T latest" \
        "-c none -y https://h.example/m.yml -Y $sha"; do
        CNI_MANIFEST=https://h.example/c.yaml CNI_EDIT="" MULTUS_MANIFEST=""
        MULTUS_SHA256="" MULTUS_TAG=""
        # shellcheck disable=SC2086 # the words of each case
        parse_args init -a 10.0.0.11 $args
        bats_run --separate-stderr validate_args
        [ "$status" -eq 2 ]
        [[ $stderr == *CNI* || $stderr == *Multus* ]]
    done
}

@test "the default CNI manifest is checked against its pin; another only with -d" {
    parse_args init -a 10.0.0.11
    validate_args
    [ "$CNI_MANIFEST" = "$DEFAULT_CNI_URL" ]
    [ "$CNI_SHA256" = "$DEFAULT_CNI_SHA256" ]
    CNI_SHA256=""
    parse_args init -a 10.0.0.11 -c https://h.example/c.yaml
    validate_args
    [ -z "$CNI_SHA256" ]
}

@test "-c and -y: a URL or a file, relative to where the script runs as the driver uploads it" {
    local sha ok bad
    sha=$(printf 'ab%.0s' {1..32})
    for ok in https://h.example/c.yaml /etc/k8s-mgmt-lab/cni.yaml .k8s-mgmt/cni-manifest.yaml; do
        is_manifest_source "$ok"
    done
    for bad in "-c.yaml" "../c.yaml" "a/../../c.yaml" 'c$(id).yaml' "c d.yaml" \
        "https://h.example/c d.yaml" 'https://h.example/$(id)'; do
        ! is_manifest_source "$bad"
    done
}

@test "install_cni: flannel's pod network becomes -P after the checksum" {
    applied_by_kubectl
    printf 'net-conf.json: |\n  {\n    "Network": "10.244.0.0/16",\n  }\n' \
        >"$BATS_TEST_TMPDIR/flannel.yml"
    CNI_MANIFEST=$BATS_TEST_TMPDIR/flannel.yml CURRENT_MANIFEST=cni
    CNI_SHA256=$(sha256sum "$CNI_MANIFEST" | cut -d' ' -f1)
    CNI_EDIT=flannel-network POD_CIDR=172.20.0.0/16
    install_cni 2>"$BATS_TEST_TMPDIR/err"
    grep -q '"Network": "172.20.0.0/16",' "$BATS_TEST_TMPDIR/applied-cni"
    grep -q "flannel's pod network" "$BATS_TEST_TMPDIR/err"
    # Applied once: a second run finds its marker.
    bats_run --separate-stderr install_cni
    [[ $stderr == *"already applied"* ]]
}

@test "install_cni: a manifest that is not the pinned one is refused, unapplied" {
    applied_by_kubectl
    printf 'kind: List\n' >"$BATS_TEST_TMPDIR/c.yaml"
    CNI_MANIFEST=$BATS_TEST_TMPDIR/c.yaml CURRENT_MANIFEST=cni
    CNI_SHA256=$(printf '0%.0s' {1..64})
    bats_run --separate-stderr install_cni
    [ "$status" -ne 0 ]
    # Both checksums as sha256:HEX, which the driver's redaction keeps.
    [[ $stderr == *"has sha256:$(sha256sum "$CNI_MANIFEST" | cut -d' ' -f1), not the pinned sha256:000"*"refused"* ]]
    [ ! -e "$BATS_TEST_TMPDIR/applied-cni" ]
    # A checked flannel manifest without the line to change stops too.
    CNI_SHA256=$(sha256sum "$CNI_MANIFEST" | cut -d' ' -f1)
    CNI_EDIT=flannel-network
    bats_run --separate-stderr install_cni
    [ "$status" -ne 0 ]
    [[ $stderr == *"has no '\"Network\": \"10.244.0.0/16\"' to change"* ]]
}

@test "install_multus: checked, its snapshot image pinned, applied once" {
    applied_by_kubectl
    # Not asked for: nothing.
    install_multus
    [ ! -e "$K8S_MGMT_STATE_DIR/multus.applied" ]
    printf 'image: ghcr.io/k8snetworkplumbingwg/multus-cni:snapshot\n' \
        >"$BATS_TEST_TMPDIR/m.yml"
    MULTUS_MANIFEST=$BATS_TEST_TMPDIR/m.yml CURRENT_MANIFEST=multus
    MULTUS_SHA256=$(sha256sum "$MULTUS_MANIFEST" | cut -d' ' -f1)
    MULTUS_TAG=v4.3.0
    install_multus 2>/dev/null
    [ "$(cat "$BATS_TEST_TMPDIR/applied-multus")" = \
        "image: ghcr.io/k8snetworkplumbingwg/multus-cni:v4.3.0" ]
    bats_run --separate-stderr install_multus
    [[ $stderr == *"Multus manifest already applied"* ]]
}
