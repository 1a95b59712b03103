#!/usr/bin/env bats
# Messages, exits, value checks and the secrets input of k8s_mgmt_lib.sh.

load helpers

setup() {
    load_library
    CURRENT_STEP="some step"
}

@test "log: 'PROG: message' on stderr, nothing on stdout" {
    run --separate-stderr log hello "big world"
    [ "$status" -eq 0 ]
    [ "$output" = "" ]
    [ "$stderr" = "test-prog: hello big world" ]
}

@test "die: names the step, exits 1" {
    run --separate-stderr die "cannot go on"
    [ "$status" -eq 1 ]
    [ "$output" = "" ]
    [ "$stderr" = "test-prog: some step: cannot go on" ]
}

@test "usage_error: points at -h, exits 2" {
    run --separate-stderr usage_error "bad -x"
    [ "$status" -eq 2 ]
    [ "$stderr" = "test-prog: bad -x (see -h)" ]
}

@test "on_error: the step, the status and the line; exits with the status" {
    run --separate-stderr on_error 7 42
    [ "$status" -eq 7 ]
    [ "$stderr" = "test-prog: step some step failed (exit 7, line 42)" ]
}

@test "the ERR trap names the failing step and keeps the status" {
    run --separate-stderr bash -c 'set -Eeuo pipefail; PROG=p; source "$1"
        trap '\''on_error $? $LINENO'\'' ERR
        CURRENT_STEP=copy; (exit 5); echo reached' _ "$LIBRARY"
    [ "$status" -eq 5 ]
    [ "$output" = "" ]
    [[ $stderr == "p: step copy failed (exit 5, line "*")" ]]
}

@test "PROG defaults to the script's name when the script sets none" {
    run --separate-stderr bash -c 'source "$1"; log hi' my-script "$LIBRARY"
    [ "$stderr" = "my-script: hi" ]
}

@test "cleanup removes the temporary files" {
    local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
    touch "$a" "$b" "$BATS_TEST_TMPDIR/kept"
    TEMP_FILES+=("$a" "$b")
    cleanup
    [ ! -e "$a" ]
    [ ! -e "$b" ]
    [ -e "$BATS_TEST_TMPDIR/kept" ]
    TEMP_FILES=()
    cleanup
}

@test "is_ipv4 accepts dotted quads of 0-255 without leading zeros" {
    local ip
    for ip in 0.0.0.0 10.0.0.1 192.168.100.254 255.255.255.255 1.22.203.4; do
        is_ipv4 "$ip" || { echo "refused $ip"; false; }
    done
}

@test "is_ipv4 refuses everything else" {
    local ip
    for ip in '' 256.0.0.1 1.2.3.256 300.1.1.1 1000.1.1.1 01.2.3.4 1.2.3.04 \
        1.2.3 1.2.3.4.5 1..2.3 a.b.c.d 1.2.3.4/24 ' 1.2.3.4' '1.2.3.4 ' \
        $'1.2.3.4\n' ::1 fe80::1 -1.2.3.4 '1.2.3.+4'; do
        if is_ipv4 "$ip"; then echo "accepted '$ip'"; false; fi
    done
}

@test "in_range and is_port" {
    in_range 1 1 255
    in_range 255 1 255
    in_range 010 1 255
    run ! in_range 0 1 255
    run ! in_range 256 1 255
    run ! in_range -1 0 9
    run ! in_range '' 0 9
    run ! in_range 123456 0 999999
    is_port 1
    is_port 6443
    is_port 65535
    run ! is_port 0
    run ! is_port 65536
    run ! is_port 80a
}

# record KEY VALUE: what read_secret_lines handed over, one line each.
record() {
    printf '%s=[%s]\n' "$1" "$2" >>"$BATS_TEST_TMPDIR/stored"
}

@test "read_secret_lines: KEY=VALUE from stdin, comments, blanks and CRs skipped" {
    read_secret_lines - record < <(printf '# a comment\n\na=1\r\nb=x=y\nc=')
    [ "$(cat "$BATS_TEST_TMPDIR/stored")" = $'a=[1]\nb=[x=y]\nc=[]' ]
}

@test "read_secret_lines: a line without '=' is a usage error naming the form" {
    run --separate-stderr read_secret_lines - record <<<'s3cret'
    [ "$status" -eq 2 ]
    [ "$stderr" = "test-prog: secrets input line without '=' (want KEY=VALUE) (see -h)" ]
    run --separate-stderr read_secret_lines - record 'auth_pass=...' <<<'s3cret'
    [[ $stderr == *"(want auth_pass=...)"* ]]
    [[ $stderr != *s3cret* ]]
}

@test "read_secret_lines: a file others can read is refused, a private one read" {
    local file=$BATS_TEST_TMPDIR/secrets
    printf 'k=v\n' >"$file"
    chmod 0640 "$file"
    run --separate-stderr read_secret_lines "$file" record
    [ "$status" -eq 2 ]
    [ "$stderr" = "test-prog: secrets file $file has mode 640; want 0600 or stricter (see -h)" ]
    [ ! -e "$BATS_TEST_TMPDIR/stored" ]
    chmod 0400 "$file"
    read_secret_lines "$file" record
    [ "$(cat "$BATS_TEST_TMPDIR/stored")" = 'k=[v]' ]
    run -2 read_secret_lines "$BATS_TEST_TMPDIR/missing" record
}
