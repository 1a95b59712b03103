#!/usr/bin/env bats
# setup_storage.sh: the managed blocks of /etc/fstab and /etc/exports.

load helpers

setup() {
    load_script setup_storage.sh
    DIR=$BATS_TEST_TMPDIR
    BLOCK=$'# BEGIN k8s-mgmt storage\nnew 1\nnew 2\n# END k8s-mgmt storage\n'
}

@test "with_block: appended to a file without one, the file's lines kept" {
    printf 'first\n\n# a comment\nlast without newline' >"$DIR/f"
    run -0 with_block "$DIR/f" "$BLOCK"
    [ "$output" = $'first\n\n# a comment\nlast without newline\n# BEGIN k8s-mgmt storage\nnew 1\nnew 2\n# END k8s-mgmt storage' ]
    # A missing file: the block alone.
    run -0 with_block "$DIR/missing" "$BLOCK"
    [ "$output" = "${BLOCK%$'\n'}" ]
}

@test "with_block: the old block is rebuilt in its place, twice gives the same" {
    printf 'before\n# BEGIN k8s-mgmt storage\nold 1\nold 2\nold 3\n# END k8s-mgmt storage\nafter\n' >"$DIR/f"
    with_block "$DIR/f" "$BLOCK" >"$DIR/once"
    [ "$(cat "$DIR/once")" = $'before\n# BEGIN k8s-mgmt storage\nnew 1\nnew 2\n# END k8s-mgmt storage\nafter' ]
    with_block "$DIR/once" "$BLOCK" >"$DIR/twice"
    cmp "$DIR/once" "$DIR/twice"
}

@test "with_block: a broken block is refused, not guessed at" {
    printf 'a\n# BEGIN k8s-mgmt storage\nx\n' >"$DIR/f"
    run -1 with_block "$DIR/f" "$BLOCK"
    [[ $output == *"has '# BEGIN k8s-mgmt storage' without '# END k8s-mgmt storage'"* ]]
    printf 'a\n# END k8s-mgmt storage\n' >"$DIR/f"
    run -1 with_block "$DIR/f" "$BLOCK"
    [[ $output == *"has '# END k8s-mgmt storage' without '# BEGIN k8s-mgmt storage'"* ]]
    printf '# BEGIN k8s-mgmt storage\n# END k8s-mgmt storage\n# BEGIN k8s-mgmt storage\n# END k8s-mgmt storage\n' >"$DIR/f"
    run -1 with_block "$DIR/f" "$BLOCK"
    [[ $output == *"has two '# BEGIN k8s-mgmt storage' lines"* ]]
    printf '# BEGIN k8s-mgmt storage\n# BEGIN k8s-mgmt storage\n# END k8s-mgmt storage\n' >"$DIR/f"
    run -1 with_block "$DIR/f" "$BLOCK"
}

@test "install_block: written once, then left alone (same bytes, mtime, inode)" {
    printf 'LABEL=root / ext4 defaults 0 1\n' >"$DIR/fstab"
    install_block "$DIR/fstab" "$BLOCK"
    [ "$WRITE_FILE_CHANGED" = true ]
    [ "$(mode_of "$DIR/fstab")" = 644 ]
    [ "$(head -n 1 "$DIR/fstab")" = 'LABEL=root / ext4 defaults 0 1' ]
    local mtime inode
    mtime=$(mtime_of "$DIR/fstab")
    inode=$(stat -c %i "$DIR/fstab")
    install_block "$DIR/fstab" "$BLOCK"
    [ "$WRITE_FILE_CHANGED" = false ]
    [ "$(mtime_of "$DIR/fstab")" = "$mtime" ]
    [ "$(stat -c %i "$DIR/fstab")" = "$inode" ]
    # A broken block stops the step and leaves the file.
    printf '# END k8s-mgmt storage\n' >>"$DIR/fstab"
    cp "$DIR/fstab" "$DIR/before"
    CURRENT_STEP=mount
    run --separate-stderr -1 install_block "$DIR/fstab" "$BLOCK"
    [[ $stderr == *"setup_storage.sh: mount: not changing $DIR/fstab: its managed block is broken; fix it by hand" ]]
    cmp "$DIR/fstab" "$DIR/before"
}

@test "refuse_foreign: a line outside the block for a managed path stops the run" {
    cat >"$DIR/fstab" <<'FSTAB'
# /srv/nfs was on /dev/vdb
LABEL=root / ext4 defaults 0 1
/dev/vdc /srv/other ext4 defaults 0 2
# BEGIN k8s-mgmt storage
UUID=1234 /srv/nfs ext4 defaults,nofail 0 2
# END k8s-mgmt storage
FSTAB
    # Comments, other mount points and the block's own lines are no conflict.
    run -0 refuse_foreign "$DIR/fstab" 2 /srv/nfs /srv/data
    run -0 refuse_foreign "$DIR/missing" 2 /srv/nfs
    printf '/dev/vdb  /srv/data\text4 defaults 0 0\n' >>"$DIR/fstab"
    CURRENT_STEP=mount
    run --separate-stderr -1 refuse_foreign "$DIR/fstab" 2 /srv/nfs /srv/data
    [ "$stderr" = "setup_storage.sh: mount: $DIR/fstab has a line for /srv/data outside the '# BEGIN k8s-mgmt storage' block: '/dev/vdb  /srv/data	ext4 defaults 0 0'; remove it, this script manages /srv/data" ]
    # /etc/exports: the path is the first word, maybe quoted.
    printf '"/srv/nfs/pv1" 10.0.0.0/8(ro)\n/srv/nfs/pv2 *(rw)\n' >"$DIR/exports"
    run -0 refuse_foreign "$DIR/exports" 1 /srv/nfs/pv3
    run -1 refuse_foreign "$DIR/exports" 1 /srv/nfs/pv1
    [[ $output == *"has a line for /srv/nfs/pv1 outside"* ]]
}

@test "render_fstab_block: one line per volume, by UUID, nofail, nosuid, nodev" {
    VOLUME_MOUNTS=(/srv/nfs /srv/two)
    FS_UUIDS=(1111-aa 2222-bb)
    FS_TYPES=(ext4 xfs)
    run -0 render_fstab_block
    [ "$output" = "# BEGIN k8s-mgmt storage
# Rebuilt by setup_storage.sh on every run; edit outside this block.
UUID=1111-aa /srv/nfs ext4 defaults,nofail,nosuid,nodev 0 2
UUID=2222-bb /srv/two xfs defaults,nofail,nosuid,nodev 0 2
# END k8s-mgmt storage" ]
}

@test "render_exports_block: one line per directory, each client range with its squash" {
    parse_args server --volume v,,/srv/nfs --export /srv/nfs/a,10.0.0.0/24 \
        --export /srv/nfs/b,10.0.0.0/24,no_root_squash --export /srv/nfs/a,fd00::/64,root_squash
    validate_args
    run -0 render_exports_block
    [ "$output" = "# BEGIN k8s-mgmt storage
# Rebuilt by setup_storage.sh on every run; edit outside this block.
/srv/nfs/a 10.0.0.0/24(rw,sync,no_subtree_check,root_squash) fd00::/64(rw,sync,no_subtree_check,root_squash)
/srv/nfs/b 10.0.0.0/24(rw,sync,no_subtree_check,no_root_squash)
# END k8s-mgmt storage" ]
}

@test "-o DIR moves /etc/fstab and /etc/exports only" {
    ROOT_DIR=/tmp/render
    [ "$(path_of /etc/fstab)" = /tmp/render/etc/fstab ]
    ROOT_DIR=""
    [ "$(path_of /etc/exports)" = /etc/exports ]
    # Devices and mount points never go through path_of.
    [ "$(grep -c 'path_of ' "$SCRIPTS_DIR/setup_storage.sh")" -eq 2 ]
    grep -q 'fstab=$(path_of /etc/fstab)' "$SCRIPTS_DIR/setup_storage.sh"
    grep -q 'exports=$(path_of /etc/exports)' "$SCRIPTS_DIR/setup_storage.sh"
}
