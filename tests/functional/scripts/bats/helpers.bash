# Loaded by every .bats file here: where the scripts are, and how to load
# them. Sourcing a script defines its functions without running it.
bats_require_minimum_version 1.5.0

SCRIPTS_DIR=$(cd "$BATS_TEST_DIRNAME/../../../../k8s_mgmt/scripts" && pwd)
LIBRARY=$SCRIPTS_DIR/k8s_mgmt_lib.sh

load_library() {
    PROG=test-prog
    # shellcheck source=../../../../k8s_mgmt/scripts/k8s_mgmt_lib.sh
    source "$LIBRARY"
}

# install_k8s_cluster.sh has a "run" of its own (every command that changes
# the node goes through it), which replaces bats' run: bats' stays callable
# as bats_run.
eval "$(declare -f run | sed '1s/^run /bats_run /')"

load_script() {
    # shellcheck disable=SC1090
    source "$SCRIPTS_DIR/$1"
}

# mtime_of FILE: seconds since the epoch, with the fraction.
mtime_of() {
    stat -c '%.9Y' -- "$1"
}

mode_of() {
    stat -c '%a' -- "$1"
}

# In a test body only a failing command on its own stops the test: a
# failure on the left of && does not (set -e), so checks stand one a line.

# The files install_k8s_cluster.sh's configure_registries writes, all under
# the test's directory (install_functions.bats, install_registry_auth.bats).
fake_registry_files() {
    CERTS_D=$BATS_TEST_TMPDIR/certs.d
    CA_DIR=$BATS_TEST_TMPDIR/ca-certificates
    HOSTS_FILE=$BATS_TEST_TMPDIR/hosts
    CONTAINERD_CONFIG=$BATS_TEST_TMPDIR/config.toml
    printf '127.0.0.1 localhost\n10.0.0.5 node-1\n' >"$HOSTS_FILE"
    printf '[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = ""\n' >"$CONTAINERD_CONFIG"
    printf -- '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' >"$BATS_TEST_TMPDIR/ca.crt"
    # update-ca-certificates is the system's: recorded, not run.
    run() { printf '%s\n' "$*" >>"$BATS_TEST_TMPDIR/ran"; }
}
