#!/usr/bin/env bats
# apt_turn SECONDS CMD... of k8s_mgmt_lib.sh: our scripts take turns at
# apt-get on a node (flock on one lock file).

load helpers

setup() {
    load_library
    APT_TURN_LOCK=$BATS_TEST_TMPDIR/apt.lock
    D=$BATS_TEST_TMPDIR
}

# hold_turn: takes the turn, says so (held), keeps it until told to let go
# (release), then notes it has finished (done).
hold_turn() {
    apt_turn 5 bash -c 'touch "$0/held"; until [ -e "$0/release" ]; do sleep 0.02; done; touch "$0/done"' "$D" &
    HOLDER=$!
    until [ -e "$D/held" ]; do sleep 0.02; done
}

@test "the command runs with its arguments and gives its status" {
    run apt_turn 5 bash -c 'echo "$1"; exit 3' - 'an argument'
    [ "$status" -eq 3 ]
    [ "$output" = 'an argument' ]
}

@test "a second caller runs only once the first has finished" {
    hold_turn
    # The waiter records whether the holder had finished when it ran.
    apt_turn 5 bash -c '[ -e "$0/done" ]' "$D" &
    local waiter=$!
    touch "$D/release"
    wait "$HOLDER"
    wait "$waiter"
}

@test "a caller that cannot get its turn in time fails without running" {
    hold_turn
    run apt_turn 1 touch "$D/ran"
    touch "$D/release"
    wait "$HOLDER"
    [ "$status" -eq 1 ]
    [ ! -e "$D/ran" ]
}
