#!/usr/bin/env bats
# retry_until SECONDS CMD... of k8s_mgmt_lib.sh: backoff to a deadline.

load helpers

setup() {
    load_library
    ATTEMPTS=$BATS_TEST_TMPDIR/attempts
    : >"$ATTEMPTS"
}

# succeed_on N: fails until its Nth call (calls counted in $ATTEMPTS).
succeed_on() {
    echo . >>"$ATTEMPTS"
    [ "$(wc -l <"$ATTEMPTS")" -ge "$1" ]
}

# fail_with STATUS: always fails with STATUS (calls counted).
fail_with() {
    echo . >>"$ATTEMPTS"
    return "$1"
}

attempts() {
    wc -l <"$ATTEMPTS"
}

@test "a command that succeeds at once runs once, without a pause" {
    local start
    start=$(now_ms)
    retry_until 5 succeed_on 1
    [ "$(attempts)" -eq 1 ]
    [ $(($(now_ms) - start)) -lt 150 ]
}

@test "it succeeds on the 3rd try after pauses of 0.2 s and 0.4 s" {
    local start elapsed
    start=$(now_ms)
    retry_until 5 succeed_on 3
    elapsed=$(($(now_ms) - start))
    [ "$(attempts)" -eq 3 ]
    [ "$elapsed" -ge 600 ]
    [ "$elapsed" -lt 1000 ]
}

@test "it gives up at the deadline with the command's last status" {
    local start elapsed
    start=$(now_ms)
    run -3 retry_until 2 fail_with 3
    elapsed=$(($(now_ms) - start))
    # Tries at 0, 0.2, 0.6 and 1.4 s, then once more at the deadline (2 s):
    # the last pause is cut to what is left, not a whole 1.6 s.
    [ "$(attempts)" -eq 5 ]
    [ "$elapsed" -ge 2000 ]
    [ "$elapsed" -lt 2500 ]
}

@test "with no time left it tries once and fails" {
    run -1 retry_until 0 fail_with 1
    [ "$(attempts)" -eq 1 ]
}

@test "pauses double from 0.2 s and stay at most 5 s" {
    [ "$RETRY_FIRST_DELAY_MS" -eq 200 ]
    [ "$(retry_delay_ms 200)" -eq 400 ]
    [ "$(retry_delay_ms 1600)" -eq 3200 ]
    [ "$(retry_delay_ms 3200)" -eq 5000 ]
    [ "$(retry_delay_ms 5000)" -eq 5000 ]
}

@test "while it waits, one call is cut to the time left (call_seconds)" {
    [ "$(call_seconds 30)" -eq 30 ]
    seen() {
        call_seconds 30 >"$BATS_TEST_TMPDIR/seen"
    }
    retry_until 2 seen
    [ "$(cat "$BATS_TEST_TMPDIR/seen")" -eq 2 ]
    # The deadline ends with the wait, whether it succeeded or not.
    [ -z "$RETRY_DEADLINE_MS" ]
    [ "$(call_seconds 30)" -eq 30 ]
    local status=0
    retry_until 0 fail_with 4 || status=$?
    [ "$status" -eq 4 ]
    [ -z "$RETRY_DEADLINE_MS" ]
}

@test "call_seconds is at least 1 once the deadline has passed" {
    RETRY_DEADLINE_MS=$(($(now_ms) - 5000))
    [ "$(call_seconds 30)" -eq 1 ]
}

@test "now_ms is the wall clock in milliseconds" {
    local ms
    ms=$(now_ms)
    [[ $ms =~ ^[0-9]{13}$ ]]
    [ $((ms / 1000 - $(date +%s))) -le 1 ]
}
