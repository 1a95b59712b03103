"""SSHSession against a real SSH server (paramiko server side on loopback)."""

import hashlib
import stat
import time

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.ssh.command import Command

HOSTILE = [
    '$(reboot)', '`id`', "it's", 'say "hi"', 'a;b', 'x && y', '*', '?',
    '[a-z]*', '~', 'line1\nline2', '\ttab', '', ' ', '-n', '--help',
    'ünïcödé ✓ 日本', '$HOME', '${PATH}', '\\', '!!', '>out', '|', '#',
]


# Commands, exit status, stdin, timeouts ---------------------------------

def test_stdout_and_exit_status_zero(session):
    began = time.monotonic()
    result = session.run(Command('echo', 'hello'), step='greet')
    took = time.monotonic() - began
    assert (result.status, result.stdout, result.stderr) == (0, 'hello\n', '')
    # The command was timed, within the call that ran it.
    assert 0 < result.seconds <= took


def test_stderr_with_exit_zero_is_success(session):
    cmd = Command('sh', '-c', 'echo warning: deprecated >&2; echo done')
    result = session.run(cmd, step='warn')
    assert result.status == 0
    assert result.stderr == 'warning: deprecated\n'
    assert result.stdout == 'done\n'


def test_nonzero_exit_raises_with_node_step_status_and_stderr_tail(session):
    script = 'for i in $(seq 1 30); do echo "err line $i" >&2; done; exit 7'
    with pytest.raises(exceptions.RemoteCommandError) as info:
        session.run(Command('bash', '-c', script), step='join')
    text = str(info.value)
    assert text.startswith('node-1: join: exit status 7')
    assert 'err line 30' in text and 'err line 11' in text
    assert 'err line 10\n' not in text  # only the last 20 lines
    assert info.value.result.status == 7


def test_on_line_gets_each_stdout_line_while_the_command_runs(
        session, tmp_path):
    flag = tmp_path / 'first-line-seen'
    # The command prints its second line only once the caller has seen the
    # first (it waits up to 10 s for the flag the callback makes).
    script = ('echo first; echo to-stderr >&2; i=0; '
              'while [ ! -e "$1" ] && [ $i -lt 200 ]; do '
              'sleep 0.05; i=$((i + 1)); done; '
              'if [ -e "$1" ]; then echo saw-flag; else echo no-flag; fi; '
              'printf "x\\r\\n\\nno newline"')
    lines = []

    def on_line(line):
        lines.append(line)
        if line == 'first':
            flag.touch()

    result = session.run(Command('sh', '-c', script, 'sh', str(flag)),
                         on_line=on_line)
    assert lines == ['first', 'saw-flag', 'x', '', 'no newline']
    assert result.stdout == 'first\nsaw-flag\nx\r\n\nno newline'
    assert result.stderr == 'to-stderr\n'


def test_nonzero_exit_without_check_returns_result(session):
    result = session.run(Command('false'), check=False)
    assert result.status == 1 and not result.ok


def test_quoting_round_trip_through_real_shell(session):
    result = session.run(Command('printf', '%s\\0', *HOSTILE))
    assert result.stdout.split('\0')[:-1] == HOSTILE


def test_hostile_strings_in_sudo_and_pipe_compositions(session, tmp_path):
    # sh -c nesting must keep every byte too (sudo is replaced by env, which
    # wraps the same way and needs no root).
    out = str(tmp_path / 'piped out')
    cmd = (Command('printf', '%s\\0', *HOSTILE)
           .pipe(Command('cat')).redirect_stdout(out).with_env(X='1'))
    session.run(cmd)
    with open(out, encoding='utf-8') as f:
        assert f.read().split('\0')[:-1] == HOSTILE


def test_stdin_delivery(session):
    data = b'first line\nsecond \x00 binary \xff\n'
    result = session.run(Command('sha256sum'), stdin=data)
    assert result.stdout.split()[0] == hashlib.sha256(data).hexdigest()


def test_stdin_secret_reaches_command(session):
    token = secrets.Secret('abcdef.0123456789abcdef')
    result = session.run(Command('cat'), stdin=token)
    assert result.stdout == token.reveal()


def test_command_that_ignores_large_stdin(session):
    result = session.run(Command('sh', '-c', 'echo early; exit 3'),
                         stdin=b'x' * (8 * 1024 * 1024), check=False,
                         timeout=30)
    assert (result.status, result.stdout) == (3, 'early\n')


def test_command_without_stdin_gets_eof(session):
    result = session.run(Command('cat'), timeout=5)
    assert result.stdout == ''


def test_timeout_raises_and_session_stays_usable(session, ssh_server):
    with pytest.raises(exceptions.CommandTimeout) as info:
        session.run(Command('sleep', '30'), step='wait', timeout=0.5)
    assert 'node-1: wait: no exit after 0.5 s' in str(info.value)
    assert session.run(Command('echo', 'still here')).stdout == 'still here\n'


def test_commands_and_uploads_share_a_connection(session, ssh_server,
                                                 tmp_path):
    for _ in range(5):
        session.run(Command('true'))
    session.put(b'x', str(tmp_path / 'a'))
    session.put(b'y', str(tmp_path / 'b'))
    assert session.run(Command('cat', str(tmp_path / 'a'),
                               str(tmp_path / 'b'))).stdout == 'xy'
    assert ssh_server.connections == 1


# SFTP --------------------------------------------------------------------

def test_put_bytes_content_and_mode(session, tmp_path):
    target = tmp_path / 'etc' / 'config.yaml'
    target.parent.mkdir()
    session.put(b'key: value\n', str(target), mode=0o640)
    assert target.read_bytes() == b'key: value\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in target.parent.iterdir()] == ['config.yaml']


def test_put_replaces_existing_file_atomically(session, tmp_path):
    upload_dir = tmp_path / 'bin'
    upload_dir.mkdir()
    target = upload_dir / 'script.sh'
    target.write_text('old')
    session.put(b'#!/bin/sh\necho new\n', str(target), mode=0o755)
    assert session.run(Command(str(target))).stdout == 'new\n'
    assert [p.name for p in upload_dir.iterdir()] == ['script.sh']


def test_put_local_file_and_secret(session, tmp_path):
    local = tmp_path / 'local.bin'
    local.write_bytes(bytes(range(256)) * 100)
    session.put(str(local), str(tmp_path / 'copy.bin'))
    assert (tmp_path / 'copy.bin').read_bytes() == local.read_bytes()
    session.put(secrets.Secret('s3cr3t-key'), str(tmp_path / 'key'),
                mode=0o600)
    assert (tmp_path / 'key').read_text() == 's3cr3t-key'
    assert stat.S_IMODE((tmp_path / 'key').stat().st_mode) == 0o600


def test_put_into_missing_directory_fails_clearly(session, tmp_path):
    with pytest.raises(exceptions.SSHError) as info:
        session.put(b'x', str(tmp_path / 'nope' / 'f'), step='copy')
    assert str(info.value).startswith('node-1: copy: upload to')
