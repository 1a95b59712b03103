#!/usr/bin/env bats
# setup_registry.sh's arguments and its TLS step, each on its own (the lab
# runs the whole script against Debian's docker-registry).

load helpers

setup() {
    load_script setup_registry.sh
    SERVICE_USER=root
    DIR=$BATS_TEST_TMPDIR/registry
    ADDRESS=10.0.0.9 PORT=5000
}

@test "arguments: listen, dir and one TLS source, each checked" {
    parse_args --listen 10.0.0.9:5000 --dir /srv/registry --self-signed registry.lab,reg
    validate_args
    [ "$ADDRESS" = 10.0.0.9 ] && [ "$PORT" = 5000 ]
    local key=$BATS_TEST_TMPDIR/key.pem
    : >"$key"
    chmod 0644 "$key"
    for args in "--dir /srv/r --self-signed r" \
        "--listen 10.0.0.9 --dir /srv/r --self-signed r" \
        "--listen 10.0.0.300:5000 --dir /srv/r --self-signed r" \
        "--listen 10.0.0.9:70000 --dir /srv/r --self-signed r" \
        "--listen 10.0.0.9:5000 --dir srv/r --self-signed r" \
        "--listen 10.0.0.9:5000 --dir /srv/../etc --self-signed r" \
        "--listen 10.0.0.9:5000 --dir /srv/r" \
        "--listen 10.0.0.9:5000 --dir /srv/r --self-signed r;id" \
        "--listen 10.0.0.9:5000 --dir /srv/r --self-signed r --key $key" \
        "--listen 10.0.0.9:5000 --dir /srv/r --certificate /etc/hostname --ca /etc/hostname --key $key" \
        "--listen 10.0.0.9:5000 --dir /srv/r --self-signed r -w soon" \
        "--listen 10.0.0.9:5000 --dir /srv/r --self-signed r --self-signed-ip" \
        "--listen 10.0.0.9:5000 --dir /srv/r --self-signed-ip --certificate /etc/hostname --ca /etc/hostname" \
        "--listen 10.0.0.9:5000 --dir /srv/r --certificate /etc/hostname" \
        "--listen 10.0.0.9:5000 --dir /srv/r --self-signed-ip -s $key"; do
        LISTEN="" DIR="" SELF_SIGNED="" CERTIFICATE="" CA_FILE="" KEY_FILE="" WAIT_SECONDS=120
        TLS_MODE="" SECRETS_SOURCE=""
        # shellcheck disable=SC2086 # the words of each case
        parse_args $args
        bats_run --separate-stderr validate_args
        [ "$status" -eq 2 ] || { echo "accepted: $args"; false; }
    done
}

@test "--self-signed-ip: the address alone" {
    parse_args --listen 10.0.0.9:5000 --dir /srv/registry --self-signed-ip --print-ca --require-mount
    validate_args
    [ "$TLS_MODE" = self-signed ] && [ -z "$SELF_SIGNED" ]
    [ "$PRINT_CA" = true ] && [ "$REQUIRE_MOUNT" = true ]
    [ "$(wanted_names)" = IP:10.0.0.9 ]
}

@test "the secrets input: proxy URLs and the operator's key, checked before anything changes" {
    local work=$BATS_TEST_TMPDIR/pki key
    mkdir -p "$work"
    openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:P-256 -out "$work/k.pem" 2>/dev/null
    key=$(base64 -w0 <"$work/k.pem")
    parse_args --listen 10.0.0.9:5000 --dir /srv/r --certificate /etc/hostname --ca /etc/hostname -s -
    validate_args
    read_secret_lines - store_secret <<<"http_proxy=http://p:3128
tls_key_base64=$key"
    check_key_source
    [ "$HTTP_PROXY_URL" = http://p:3128 ]
    cmp <(key_pem) "$work/k.pem"
    KEY_BASE64=$(printf 'not a key' | base64)
    bats_run --separate-stderr check_key_source
    [ "$status" -eq 2 ] && [[ $stderr == *"not a PEM private key"* ]]
    KEY_BASE64='%%%'
    bats_run --separate-stderr check_key_source
    [ "$status" -eq 2 ] && [[ $stderr == *"not base64"* ]]
    KEY_BASE64=""
    bats_run --separate-stderr check_key_source
    [[ $stderr == *"needs its key"* ]]
    bats_run --separate-stderr store_secret password x
    [ "$status" -eq 2 ] && [[ $stderr == *"unknown secrets key 'password'"* ]]
    # A self-signed one takes no key.
    TLS_MODE=self-signed KEY_BASE64=$key
    bats_run --separate-stderr check_key_source
    [[ $stderr == *"goes with --certificate"* ]]
}

@test "--require-mount: not a mount point stops before anything changes; a mount gets the drop-in" {
    DIR=$BATS_TEST_TMPDIR/registry REQUIRE_MOUNT=true
    DROP_IN=$BATS_TEST_TMPDIR/drop-in/k8s-mgmt.conf
    mkdir -p "$DIR"
    bats_run --separate-stderr check_mount
    [ "$status" -ne 0 ] && [[ $stderr == *"is not a mount point"* ]]
    [ ! -e "$DROP_IN" ]
    mountpoint() { return 0; }
    systemctl() { echo "systemctl $*" >>"$BATS_TEST_TMPDIR/calls"; }
    check_mount
    grep -qx "RequiresMountsFor=$DIR" "$DROP_IN"
    grep -qx 'systemctl daemon-reload' "$BATS_TEST_TMPDIR/calls"
    # Unchanged: no reload.
    : >"$BATS_TEST_TMPDIR/calls"
    check_mount
    [ ! -s "$BATS_TEST_TMPDIR/calls" ]
}

@test "self-signed: made for the address and names, then kept" {
    SELF_SIGNED=registry.lab TLS_MODE=self-signed
    tls_self_signed
    [ "$TLS_OUTCOME" = "certificate made" ]
    [ -z "$(names_missing "$DIR/tls/tls.crt")" ]
    [ "$(mode_of "$DIR/tls/tls.key")" = 640 ]
    openssl verify -CAfile "$DIR/tls/tls.crt" "$DIR/tls/tls.crt"
    local before
    before=$(sha256sum <"$DIR/tls/tls.crt")
    tls_self_signed
    [ "$TLS_OUTCOME" = "certificate kept" ]
    [ "$(sha256sum <"$DIR/tls/tls.crt")" = "$before" ]
}

@test "self-signed: one that lacks a name is refused, never replaced" {
    SELF_SIGNED=registry.lab TLS_MODE=self-signed
    tls_self_signed
    local before
    before=$(sha256sum <"$DIR/tls/tls.crt")
    SELF_SIGNED=registry.lab,mirror.lab ADDRESS=10.0.0.10
    bats_run --separate-stderr tls_self_signed
    [ "$status" -ne 0 ]
    [[ $stderr == *"does not name IP:10.0.0.10 DNS:mirror.lab: it is kept"* ]]
    [ "$(sha256sum <"$DIR/tls/tls.crt")" = "$before" ]
}

@test "given: checked against its CA and the address, installed, key private" {
    local work=$BATS_TEST_TMPDIR/pki
    mkdir -p "$work"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=test-ca -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=reg \
        -keyout "$work/reg.key" -out "$work/reg.csr" 2>/dev/null
    printf 'subjectAltName=IP:10.0.0.9\n' >"$work/ext"
    openssl x509 -req -in "$work/reg.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
        -CAcreateserial -days 2 -extfile "$work/ext" -out "$work/reg.crt" 2>/dev/null
    chmod 0600 "$work/reg.key"
    CERTIFICATE=$work/reg.crt CA_FILE=$work/ca.crt KEY_FILE=$work/reg.key TLS_MODE=given
    tls_given
    [ "$TLS_OUTCOME" = "certificate installed" ]
    cmp "$work/reg.crt" "$DIR/tls/tls.crt"
    [ "$(mode_of "$DIR/tls/tls.key")" = 640 ]
    tls_given
    [ "$TLS_OUTCOME" = "certificate kept" ]
    # Another address, or a CA that did not sign it: refused.
    ADDRESS=10.0.0.10
    bats_run --separate-stderr tls_given
    [[ $stderr == *"does not name IP:10.0.0.10"* ]]
    ADDRESS=10.0.0.9 CA_FILE=$DIR/tls/tls.crt
    bats_run --separate-stderr tls_given
    [[ $stderr == *"is not signed by the CA in"* ]]
}

@test "the configuration keeps images and TLS under the directory" {
    DIR=/srv/registry
    render_config >"$BATS_TEST_TMPDIR/config.yml"
    grep -q '^    rootdirectory: /srv/registry/data$' "$BATS_TEST_TMPDIR/config.yml"
    grep -q '^  addr: 10.0.0.9:5000$' "$BATS_TEST_TMPDIR/config.yml"
    grep -q '^    key: /srv/registry/tls/tls.key$' "$BATS_TEST_TMPDIR/config.yml"
    grep -q '^    enabled: false$' "$BATS_TEST_TMPDIR/config.yml"
}
