"""Command rendering: quoting, explicit shell composition, secret masking.

Round trips go through a real local shell (``sh -c``), since what matters is
what a shell makes of the rendered text, not what the text looks like.
"""

import subprocess

import pytest

from k8s_mgmt import secrets
from k8s_mgmt.ssh.command import Command

HOSTILE = [
    '$(reboot)', '`reboot`', "it's", 'say "hi"', 'a;b', 'a && b', 'a | b',
    '*', '/*', '?', '[ab]', '~root', 'l1\nl2', '\r', '\t', '', ' ', '-n',
    '--', 'ünïcödé ✓ 日本', '$HOME', '${IFS}', '\\', '\\n', '!', '#c',
    '>f', '<f', '&', "'", '"', "'\"'\"'", 'x=1',
]


def sh(text, stdin=None):
    """Run shell text locally with /bin/sh and return stdout."""
    return subprocess.run(['sh', '-c', text], input=stdin,
                          capture_output=True, check=True).stdout


def nul_split(data):
    return data.decode('utf-8').split('\0')[:-1]


def test_every_hostile_argument_survives_a_real_shell():
    cmd = Command('printf', '%s\\0', *HOSTILE)
    assert nul_split(sh(cmd.render())) == HOSTILE


def test_rendering_quotes_each_element():
    assert Command('echo', 'a b', '$(x)').render() == "echo 'a b' '$(x)'"
    assert Command('ls', '-l', '/tmp').render() == 'ls -l /tmp'


def test_secrets_are_masked_in_display_and_revealed_in_render():
    token = secrets.Secret('abcdef.0123456789abcdef')
    cmd = Command('kubeadm', 'join', '--token', token, '10.0.0.1:6443')
    assert cmd.render() == ('kubeadm join --token abcdef.0123456789abcdef '
                            '10.0.0.1:6443')
    assert cmd.display() == 'kubeadm join --token *** 10.0.0.1:6443'
    assert 'abcdef.0123' not in str(cmd) + repr(cmd)
    assert cmd.secrets() == [token]


def test_secret_with_shell_characters_is_quoted_when_rendered():
    pw = secrets.Secret("p'w $(id) ;")
    out = sh(Command('printf', '%s', pw).render())
    assert out.decode() == "p'w $(id) ;"


def test_pipe_and_lists(tmp_path):
    cmd = Command('printf', 'b\\na\\n').pipe(Command('sort'))
    assert cmd.render() == "printf 'b\\na\\n' | sort"
    assert sh(cmd.render()) == b'a\nb\n'
    assert sh(Command('false').or_else(Command('echo', 'x')).render()) == \
        b'x\n'
    assert sh(Command('true').and_then(Command('echo', 'y')).render()) == \
        b'y\n'


def test_redirects_cover_a_whole_list(tmp_path):
    out = tmp_path / 'out file'
    cmd = (Command('echo', 'one').and_then(Command('echo', 'two'))
           .redirect_stdout(str(out)))
    sh(cmd.render())
    assert out.read_text() == 'one\ntwo\n'
    sh(Command('echo', 'three').redirect_stdout(str(out), append=True)
       .render())
    assert out.read_text() == 'one\ntwo\nthree\n'


def test_stderr_redirect_and_merge(tmp_path):
    err = tmp_path / 'err'
    sh(Command('sh', '-c', 'echo e >&2').redirect_stderr(str(err)).render())
    assert err.read_text() == 'e\n'
    merged = Command('sh', '-c', 'echo e >&2').merge_stderr()
    assert sh(merged.render()) == b'e\n'


def test_redirect_stdin(tmp_path):
    src = tmp_path / 'in'
    src.write_text('data')
    assert sh(Command('cat').redirect_stdin(str(src)).render()) == b'data'


def test_env_values_are_quoted_and_secret_values_masked():
    token = secrets.Secret('s3cret-value')
    cmd = Command('sh', '-c', 'printf "%s|%s" "$A" "$T"').with_env(
        A='x y $(id)', T=token)
    assert sh(cmd.render()) == b'x y $(id)|s3cret-value'
    assert cmd.display() == ("env 'A=x y $(id)' T=*** sh -c "
                             "'printf \"%s|%s\" \"$A\" \"$T\"'")


def test_env_on_a_pipeline_covers_every_part():
    cmd = Command('printenv', 'V').pipe(Command('tr', 'a', 'b')).with_env(
        V='aaa')
    assert sh(cmd.render()) == b'bbb\n'


def test_sudo_forms():
    assert Command('id').sudo().render() == 'sudo -n -- id'
    assert Command('id').sudo(user='kube').render() == \
        'sudo -n -u kube -- id'
    assert Command('id').with_env(A='1').sudo().render() == \
        'sudo -n -- env A=1 id'
    piped = Command('cat', 'f').pipe(Command('tee', '/etc/x')).sudo()
    assert piped.render() == "sudo -n -- sh -c 'cat f | tee /etc/x'"
    redirected = Command('echo', 'x').redirect_stdout('/etc/y').sudo()
    assert redirected.render() == "sudo -n -- sh -c 'echo x > /etc/y'"


def test_nested_sh_c_keeps_hostile_bytes():
    # env wraps compound commands the same way sudo does (sh -c), without
    # needing root for the test.
    cmd = Command('printf', '%s\\0', *HOSTILE).pipe(Command('cat')) \
        .with_env(Z='1').pipe(Command('cat')).with_env(Y='2')
    assert nul_split(sh(cmd.render())) == HOSTILE


def test_display_of_nested_secret_is_masked():
    token = secrets.Secret('nested-token-42')
    cmd = Command('echo', token).pipe(Command('cat')).sudo()
    assert 'nested-token-42' in cmd.render()
    assert 'nested-token-42' not in cmd.display()
    assert '***' in cmd.display()


@pytest.mark.parametrize('bad', [
    lambda: Command(),
    lambda: Command('echo', 1),
    lambda: Command('echo', b'bytes'),
    lambda: Command('echo', 'a\x00b'),
    lambda: Command('echo').with_env(**{'A-B': '1'}),
    lambda: Command('echo').with_env(**{'1A': '1'}),
    lambda: Command('echo').sudo(user='root; reboot'),
    lambda: Command('echo').pipe('cat'),
    lambda: Command('echo').and_then('rm -rf /'),
])
def test_shell_text_cannot_be_pasted_in(bad):
    with pytest.raises((TypeError, ValueError)):
        bad()


def test_commands_are_immutable():
    base = Command('echo', 'x')
    base.redirect_stdout('/tmp/f')
    base.sudo()
    assert base.render() == 'echo x'


def test_in_dir_runs_the_command_in_a_hostile_directory(tmp_path):
    for name in ('a b', '$(reboot)', '-n', "it's"):
        directory = tmp_path / name
        directory.mkdir()
        cmd = Command('pwd').with_env(X='1').in_dir(str(directory))
        assert sh(cmd.render()).decode().strip() == str(directory)
    assert Command('ls').in_dir('/srv/a b').render() == \
        "cd -- '/srv/a b' && ls"


def test_in_dir_does_not_run_the_command_when_cd_fails(tmp_path):
    marker = tmp_path / 'ran'
    cmd = Command('touch', str(marker)).in_dir(str(tmp_path / 'missing'))
    proc = subprocess.run(['sh', '-c', cmd.render()], capture_output=True)
    assert proc.returncode != 0 and not marker.exists()


def test_time_limit_renders_timeout_around_the_whole_command():
    # Run for real (a second waited): tests/functional/ssh/
    # test_ssh_time_limit.py.
    cmd = Command('sh', '-c', 'sleep 30; echo late').time_limit(0.2)
    assert cmd.render().startswith('timeout -k 10s 1s sh -c ')
    # A list goes whole under the limit (through sh -c).
    listed = Command('true').and_then(Command('true')).time_limit(5, 1)
    assert listed.render() == "timeout -k 1s 5s sh -c 'true && true'"


@pytest.mark.parametrize('bad', [0, -1, None, '5', True])
def test_time_limit_needs_a_positive_number(bad):
    with pytest.raises(ValueError):
        Command('true').time_limit(bad)
