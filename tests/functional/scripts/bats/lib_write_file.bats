#!/usr/bin/env bats
# write_file DEST MODE of k8s_mgmt_lib.sh: idempotent, atomic, failures fail.

load helpers

setup() {
    load_library
    DIR=$BATS_TEST_TMPDIR
}

@test "a new file gets the content and the mode, its directory is made" {
    printf 'a=1\n' | write_file "$DIR/sub/dir/new.conf" 0640
    [ "$WRITE_FILE_CHANGED" = true ]
    [ "$(cat "$DIR/sub/dir/new.conf")" = 'a=1' ]
    [ "$(mode_of "$DIR/sub/dir/new.conf")" = 640 ]
}

@test "unchanged content returns 0 and leaves the file, its mtime and inode" {
    printf 'same\n' >"$DIR/f"
    chmod 0600 "$DIR/f"
    touch -d '2001-02-03 04:05:06' "$DIR/f"
    local before inode
    before=$(mtime_of "$DIR/f")
    inode=$(stat -c %i "$DIR/f")
    WRITE_FILE_CHANGED=true
    run -0 write_file "$DIR/f" 0600 <<<'same'
    printf 'same\n' | write_file "$DIR/f" 0600
    [ "$WRITE_FILE_CHANGED" = false ]
    [ "$(mtime_of "$DIR/f")" = "$before" ]
    [ "$(stat -c %i "$DIR/f")" = "$inode" ]
}

@test "changed content replaces the file and says so" {
    printf 'old\n' >"$DIR/f"
    printf 'new\n' | write_file "$DIR/f" 0644
    [ "$WRITE_FILE_CHANGED" = true ]
    [ "$(cat "$DIR/f")" = new ]
    [ "$(mode_of "$DIR/f")" = 644 ]
}

@test "the bytes written are exactly stdin (no newline added or dropped)" {
    printf 'no newline' | write_file "$DIR/f" 0600
    [ "$(od -An -c "$DIR/f" | tr -d ' \n')" = 'nonewline' ]
    printf 'two\n\n' | write_file "$DIR/f" 0600
    [ "$(wc -c <"$DIR/f")" -eq 5 ]
    # One newline less is a change, not the same content.
    printf 'two\n' | write_file "$DIR/f" 0600
    [ "$WRITE_FILE_CHANGED" = true ]
    [ "$(wc -c <"$DIR/f")" -eq 4 ]
}

@test "the same content with another mode only gets the mode fixed" {
    printf 'x\n' >"$DIR/f"
    chmod 0644 "$DIR/f"
    touch -d '2001-02-03 04:05:06' "$DIR/f"
    local before
    before=$(mtime_of "$DIR/f")
    printf 'x\n' | write_file "$DIR/f" 0600
    [ "$WRITE_FILE_CHANGED" = false ]
    [ "$(mode_of "$DIR/f")" = 600 ]
    [ "$(mtime_of "$DIR/f")" = "$before" ]
}

@test "a directory that cannot be made is a failure" {
    printf 'a file\n' >"$DIR/plain"
    run write_file "$DIR/plain/sub/f" 0600 <<<'content'
    [ "$status" -ne 0 ]
    [[ $output == *'Not a directory'* ]]
}

@test "a directory at DEST is a failure, and nothing is left behind" {
    mkdir "$DIR/taken"
    run write_file "$DIR/taken" 0600 <<<'content'
    [ "$status" -ne 0 ]
    [ -z "$(ls -A "$DIR/taken")" ]
    [ "$(ls -A "$DIR")" = taken ]
}

@test "a failed write stops a set -e script at the pipeline" {
    printf 'a file\n' >"$DIR/plain"
    run bash -c 'set -euo pipefail; PROG=t; source "$1"
        printf "x\n" | write_file "$2" 0600
        echo reached' _ "$LIBRARY" "$DIR/plain/f"
    [ "$status" -ne 0 ]
    [[ $output != *reached* ]]
}

@test "no temporary file is left, whether DEST changed or not" {
    printf 'v1\n' | write_file "$DIR/f" 0600
    printf 'v2\n' | write_file "$DIR/f" 0600
    [ "$(ls -A "$DIR")" = f ]
    printf 'v2\n' | write_file "$DIR/f" 0600
    [ "$(ls -A "$DIR")" = f ]
}

@test "same_content compares stdin with a file byte for byte" {
    printf 'abc\n' >"$DIR/f"
    same_content "$DIR/f" <<<'abc'
    run ! same_content "$DIR/f" < <(printf 'abc')
    run ! same_content "$DIR/missing" <<<'abc'
}
