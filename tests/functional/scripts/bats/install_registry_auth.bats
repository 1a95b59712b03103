#!/usr/bin/env bats
# install_k8s_cluster.sh: a private registry's credentials (registry_auth_N
# on the secrets input) in containerd's configuration, readable by root
# only, and never anywhere else.

load helpers

setup() {
    export K8S_MGMT_STATE_DIR=$BATS_TEST_TMPDIR/state
    load_script install_k8s_cluster.sh
    fake_registry_files
    # containerd's own config has its version line, and others may read it.
    printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = ""\n' >"$CONTAINERD_CONFIG"
    chmod 0644 "$CONTAINERD_CONFIG"
    # base64 of "robot$lab:S3cret-pw"
    AUTH=cm9ib3QkbGFiOlMzY3JldC1wdw==
}

secrets() {
    printf '%s\n' "$@" >"$BATS_TEST_TMPDIR/secrets"
    chmod 0600 "$BATS_TEST_TMPDIR/secrets"
    SECRETS_SOURCE=$BATS_TEST_TMPDIR/secrets
    read_secrets
}

@test "registry_auth_N: base64, for an https -g registry that exists" {
    REGISTRIES=("https://reg.example:5000,$BATS_TEST_TMPDIR/ca.crt" http://10.0.0.9:5000)
    secrets "registry_auth_1=$AUTH"
    [ "${REGISTRY_AUTHS[1]}" = "$AUTH" ]
    MODE=prepare validate_secrets
    for bad in 'registry_auth_1=not base64!' 'registry_auth_0=YQ==' 'registry_auth_x=YQ=='; do
        bats_run --separate-stderr secrets "$bad"
        [ "$status" -eq 2 ]
        [[ $stderr != *'not base64!'* ]]
    done
    REGISTRY_AUTHS=()
    secrets "registry_auth_2=$AUTH"
    bats_run --separate-stderr eval 'MODE=prepare validate_secrets'
    [ "$status" -eq 2 ]
    [[ $stderr == *"secret 'registry_auth_2' is for an http registry: credentials go over https only"* ]]
    REGISTRY_AUTHS=()
    secrets "registry_auth_3=$AUTH"
    bats_run --separate-stderr eval 'MODE=prepare validate_secrets'
    [ "$status" -eq 2 ]
    [[ $stderr == *"secret 'registry_auth_3' names no -g registry (there are 2)"* ]]
    [[ $stderr != *"$AUTH"* ]]
}

@test "configure_registries: credentials in containerd's configuration, root only, replaced not added" {
    REGISTRIES=("https://reg.example:5000,$BATS_TEST_TMPDIR/ca.crt")
    REGISTRY_AUTHS=([1]=$AUTH)
    bats_run --separate-stderr configure_registries
    [ "$status" -eq 0 ]
    [[ $stderr != *"$AUTH"* ]]
    [[ $stderr == *"registry credentials: 1 registr(y/ies) in $CONTAINERD_CONFIG (mode 0600)"* ]]
    configure_registries 2>/dev/null
    [ "$(stat -c %a "$CONTAINERD_CONFIG")" = 600 ]
    [ "$(sed -n '/credentials begin/,/credentials end/p' "$CONTAINERD_CONFIG")" = "# k8s-mgmt: registry credentials begin
[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"reg.example:5000\".auth]
  auth = \"$AUTH\"
# k8s-mgmt: registry credentials end" ]
    grep -qxF "  config_path = \"$CERTS_D\"" "$CONTAINERD_CONFIG"
    # Again: nothing changes, no restart.
    CONTAINERD_RESTART=false
    configure_registries 2>/dev/null
    [ "$CONTAINERD_RESTART" = false ]
    [ "$(grep -c 'credentials begin' "$CONTAINERD_CONFIG")" -eq 1 ]
    # Without credentials they are removed, and the file is readable again.
    REGISTRY_AUTHS=()
    configure_registries 2>/dev/null
    [ "$CONTAINERD_RESTART" = true ]
    ! grep -q 'auth' "$CONTAINERD_CONFIG"
    [ "$(stat -c %a "$CONTAINERD_CONFIG")" = 644 ]
}

@test "containerd 2's configuration (version 3): the image service's plugin" {
    printf 'version = 3\n' >"$CONTAINERD_CONFIG"
    REGISTRIES=("https://reg.example:5000")
    REGISTRY_AUTHS=([1]=$AUTH)
    rendered=$(render_containerd_auth "$CONTAINERD_CONFIG")
    grep -qxF '[plugins."io.containerd.cri.v1.images".registry.configs."reg.example:5000".auth]' \
        <<<"$rendered"
}

@test "a dry run shows no credentials" {
    REGISTRIES=("https://reg.example:5000")
    REGISTRY_AUTHS=([1]=$AUTH)
    DRY_RUN=true
    exec 4>"$BATS_TEST_TMPDIR/shown"
    configure_registry_auth 2>/dev/null
    exec 4>&-
    grep -q 'would write the credentials of 1 registr' "$BATS_TEST_TMPDIR/shown"
    ! grep -q "$AUTH" "$BATS_TEST_TMPDIR/shown"
    ! grep -q 'credentials begin' "$CONTAINERD_CONFIG"
}
