"""PlaybookCall argv/environment, event parsing, errors.

The remote command is checked by running its rendered text in a real local
shell with a stand-in ``ansible-playbook`` that prints the argv and
environment it got; real ansible-core parses hostile extra vars in
tests/functional/kubespray. :func:`playbook.run` is driven here by a
stand-in session (it hands scripted lines to ``on_line``) to reach exit
statuses a real run gives only slowly; the real SSH path is the functional
tests'.
"""

import json
import logging
import os
import re
import subprocess

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.ansible import events
from k8s_mgmt.ansible import playbook
from k8s_mgmt.ssh.target import Result

HOSTILE = ['$(reboot)', "it's", 'a b', '{{ lookup("pipe", "id") }}',
           'l1\nl2', 'ünï', '', '"q"', '\\', 'x=1 y=2', '--help']
INV_DIR = '/srv/inventories/k8s-mgmt-abc'

FAKE_PLAYBOOK = """#!/bin/sh
pwd > "$OUT/cwd"
printf '%s\\0' "$@" > "$OUT/argv"
env | grep '^ANSIBLE_' | sort > "$OUT/env"
"""


def test_argv_of_a_plain_call():
    call = playbook.PlaybookCall('cluster.yml')
    assert call.argv('/inv/hosts.yaml') == [
        'ansible-playbook', '-i', '/inv/hosts.yaml', '--become',
        '--become-user=root', 'cluster.yml']


def test_argv_with_limit_and_extra_vars():
    call = playbook.PlaybookCall(
        'remove-node.yml', limit=['worker1', 'worker12'],
        extra_vars=[('node', 'worker1,worker12'),
                    ('skip_confirmation', 'yes')])
    assert call.limit == ('worker1', 'worker12')
    assert call.argv('/i/hosts.yaml')[5:] == [
        '--limit=worker1,worker12', '-e', 'node=worker1,worker12',
        '-e', 'skip_confirmation=yes', 'remove-node.yml']
    assert call.display('/i/hosts.yaml') == (
        'ansible-playbook -i /i/hosts.yaml --become --become-user=root '
        '--limit=worker1,worker12 -e node=worker1,worker12 '
        '-e skip_confirmation=yes remove-node.yml')


def ansible_reads(arg):
    """What ansible-core's own -e parsing makes of ``arg``."""
    pytest.importorskip('ansible')
    from ansible import context
    from ansible.module_utils.common.collections import ImmutableDict
    from ansible.parsing.dataloader import DataLoader
    from ansible.utils import vars as ansible_vars

    saved = context.CLIARGS
    context.CLIARGS = ImmutableDict(extra_vars=(arg,))
    ansible_vars.load_extra_vars.extra_vars = None
    try:
        return ansible_vars.load_extra_vars(DataLoader())
    finally:
        ansible_vars.load_extra_vars.extra_vars = None
        context.CLIARGS = saved


@pytest.mark.parametrize('value', HOSTILE + ['worker1,worker12', 'yes'])
def test_ansible_reads_every_extra_var_back_exactly(value):
    from ansible.utils.unsafe_proxy import AnsibleUnsafe

    arg = playbook.extra_var('note', value)
    assert ansible_reads(arg) == {'note': value}
    plain = arg == 'note=' + value
    # Anything but a plain word is never rendered as a template.
    assert plain or isinstance(ansible_reads(arg)['note'], AnsibleUnsafe)
    assert not plain or value in ('worker1,worker12', 'yes', '--help')


@pytest.mark.parametrize('bad', [
    dict(playbook='/etc/cluster.yml'), dict(playbook='../x.yml'),
    dict(playbook='cluster'), dict(playbook='a b.yml'),
    dict(playbook='cluster.yml', limit=['a,b']),
    dict(playbook='cluster.yml', limit=['!a']),
    dict(playbook='cluster.yml', extra_vars=[('a-b', 'x')]),
    dict(playbook='cluster.yml', extra_vars=[('a', 1)]),
    dict(playbook='cluster.yml', extra_vars=[('a',)]),
])
def test_bad_calls_are_refused_naming_the_field(bad):
    with pytest.raises(ValueError) as info:
        playbook.PlaybookCall(**bad)
    assert 'PlaybookCall.' in str(info.value)


def test_the_environment_turns_host_key_checking_on():
    env = playbook.environment(INV_DIR)
    assert env['ANSIBLE_HOST_KEY_CHECKING'] == 'True'
    args = env['ANSIBLE_SSH_ARGS'].split()
    assert '-o' in args and 'StrictHostKeyChecking=yes' in args
    assert 'UserKnownHostsFile=%s/known_hosts' % INV_DIR in args
    assert 'GlobalKnownHostsFile=/dev/null' in args
    assert 'StrictHostKeyChecking=no' not in args
    assert env['ANSIBLE_PRIVATE_KEY_FILE'] == INV_DIR + '/id_ed25519'
    assert env['ANSIBLE_STDOUT_CALLBACK'] == 'k8s_mgmt_events'
    assert env['ANSIBLE_CALLBACK_PLUGINS'].split(':') == [
        INV_DIR + '/callback_plugins', '~/.ansible/plugins/callback',
        '/usr/share/ansible/plugins/callback']
    assert env['ANSIBLE_SSH_CONTROL_PATH_DIR'] == INV_DIR + '/cp'
    assert (env['ANSIBLE_NOCOLOR'], env['ANSIBLE_RETRY_FILES_ENABLED']) == \
        ('1', 'False')


def test_each_run_has_its_own_master_connections():
    """A master connection outlives its run (ControlPersist): a later run
    must not reach a healed VM, same address, through the old VM's."""
    first, second = (playbook.command(playbook.PlaybookCall('scale.yml'),
                                      root='/opt/k', inventory_dir=INV_DIR,
                                      timeout=60).display()
                     for _ in range(2))
    dirs = [re.search(r'ANSIBLE_SSH_CONTROL_PATH_DIR=(\S+)', text).group(1)
            for text in (first, second)]
    assert dirs[0] != dirs[1]
    assert all(d.startswith(INV_DIR + '/cp/') for d in dirs)
    with pytest.raises(ValueError):
        playbook.environment(INV_DIR, '../x')


def test_a_long_directory_keeps_control_sockets_in_ansibles_default():
    env = playbook.environment('/' + 'd' * 80)
    assert 'ANSIBLE_SSH_CONTROL_PATH_DIR' not in env


@pytest.mark.parametrize('bad', ['relative/dir', '/a b', "/a'b"])
def test_the_environment_refuses_unusable_directories(bad):
    with pytest.raises(ValueError):
        playbook.environment(bad)


def test_the_rendered_command_runs_in_the_root_with_env_and_argv(tmp_path):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    fake = bin_dir / 'ansible-playbook'
    fake.write_text(FAKE_PLAYBOOK)
    fake.chmod(0o755)
    root = tmp_path / 'kubespray root'
    root.mkdir()
    call = playbook.PlaybookCall(
        'cluster.yml', limit=['w1'],
        extra_vars=[('v%d' % i, v) for i, v in enumerate(HOSTILE)])
    cmd = playbook.command(call, root=str(root), inventory_dir=INV_DIR,
                           timeout=60, run_id='0a1b2c3d')
    env = dict(os.environ, PATH='%s:%s' % (bin_dir, os.environ['PATH']),
               OUT=str(tmp_path))
    subprocess.run(['sh', '-c', cmd.render()], env=env, check=True,
                   timeout=30)
    assert (tmp_path / 'cwd').read_text().strip() == str(root)
    argv = (tmp_path / 'argv').read_bytes().decode().split('\0')[:-1]
    assert argv == call.argv(INV_DIR + '/hosts.yaml')[1:]
    got = dict(line.split('=', 1) for line in
               (tmp_path / 'env').read_text().splitlines())
    assert got == playbook.environment(INV_DIR, '0a1b2c3d')
    assert got['ANSIBLE_SSH_CONTROL_PATH_DIR'] == INV_DIR + '/cp/0a1b2c3d'
    assert cmd.display().startswith("cd -- '%s' && timeout -k 10s 60s env "
                                    % root)


# Events -----------------------------------------------------------------

def line(**event):
    return events.PREFIX + json.dumps(event)


def test_parse_event_reads_only_well_formed_event_lines():
    assert events.parse_event(line(event='task_start', task='t')) == {
        'event': 'task_start', 'task': 't'}
    for text in ('', 'TASK [x] ****', 'K8SMGMT-EVENT {broken',
                 'K8SMGMT-EVENT [1, 2]', 'K8SMGMT-EVENT {"event": 3}',
                 ' ' + line(event='ok')):
        assert events.parse_event(text) is None, text


def test_recap_uses_our_field_names():
    recap = events.recap_from({'event': 'stats', 'hosts': {'w1': {
        'ok': 3, 'changed': 1, 'failures': 2, 'unreachable': 0,
        'skipped': 4, 'rescued': 0, 'ignored': 1}}})
    assert recap == {'w1': {'ok': 3, 'changed': 1, 'failed': 2,
                            'unreachable': 0, 'skipped': 4, 'rescued': 0,
                            'ignored': 1}}


def test_progress_logs_tasks_and_failures_and_hands_on_events(caplog):
    token = secrets.Secret('s3cr3t-token-value')
    seen = []
    progress = events.Progress('cluster.yml', 'ansible-server', seen.append)
    caplog.set_level(logging.DEBUG)
    for text in [
            'PLAY RECAP noise with %s' % token.reveal(),
            line(event='task_start', task='install'),
            line(event='failed', host='w2', task='install',
                 msg='x' * 1000 + ' the reason'),
            line(event='failed', host='w1', task='install', msg='meh',
                 ignored=True),
            line(event='unreachable', host='w3', task='install',
                 msg='ssh: Host key verification failed.'),
            line(event='stats', hosts={'w2': {'failures': 1},
                                       'w4': {'unreachable': 1}})]:
        progress.line(text)
    assert [e['event'] for e in seen] == [
        'task_start', 'failed', 'failed', 'unreachable', 'stats']
    assert [(f.host, f.task) for f in progress.failures] == [
        ('w2', 'install'), ('w3', 'install')]
    assert len(progress.failures[0].message) <= events.MESSAGE_LIMIT
    assert progress.failures[0].message.endswith('the reason')
    assert progress.failed_hosts() == ['w2', 'w3', 'w4']
    assert 'ansible-server cluster.yml: TASK install' in caplog.text
    assert 'w3 UNREACHABLE in TASK install' in caplog.text
    assert token.reveal() not in caplog.text
    assert 'PLAY RECAP noise with ***' in caplog.text


def test_playbook_failed_names_hosts_tasks_and_messages():
    progress = events.Progress('scale.yml', 'p')
    progress.line(line(event='task_start', task='join'))
    progress.line(line(event='failed', host='w1', task='join',
                       msg='kubeadm join failed'))
    progress.line(line(event='stats', hosts={
        'w1': {'failures': 1}, 'w2': {'unreachable': 1}, 'm1': {'ok': 9}}))
    err = playbook.PlaybookFailed('ansible-server', 'scale.yml', 2,
                                  progress, stderr='x' * 100000)
    assert isinstance(err, exceptions.SSHError)
    assert str(err) == (
        'ansible-server: playbook: scale.yml failed (exit status 2):\n'
        '- w1: TASK join: kubeadm join failed\n'
        '- w2: failed or unreachable (play recap)')
    assert err.result.recap['m1']['ok'] == 9


def test_playbook_failed_without_events_shows_the_stderr_tail():
    progress = events.Progress('cluster.yml', 'p')
    err = playbook.PlaybookFailed(
        'ansible-server', 'cluster.yml', 1, progress,
        stderr='\n'.join('noise %d' % i for i in range(100)) +
        '\nERROR! the playbook: cluster.yml could not be found\n')
    text = str(err)
    assert 'last stderr lines' in text and 'could not be found' in text
    assert 'noise 10\n' not in text


class StandInSession(object):
    """Hands scripted stdout lines to on_line, then returns a Result."""

    node = 'ansible-server'

    def __init__(self, lines, status, raise_timeout=False):
        self.lines = lines
        self.status = status
        self.raise_timeout = raise_timeout
        self.calls = []

    def run(self, cmd, step, timeout, check, on_line):
        self.calls.append((cmd, timeout, check))
        for text in self.lines:
            on_line(text)
        if self.raise_timeout:
            raise exceptions.CommandTimeout(node=self.node, step=step,
                                            timeout=timeout)
        return Result(self.status, '\n'.join(self.lines), '', 0.1)


RECAP = line(event='stats', hosts={'w1': {'ok': 2, 'changed': 1}})


def run(session, timeout=100):
    return playbook.run(session, playbook.PlaybookCall('scale.yml'),
                        root='/opt/ks', inventory_dir=INV_DIR,
                        timeout=timeout, log_prefix='ansible-server')


def test_run_returns_the_recap_and_waits_longer_than_the_remote_limit():
    session = StandInSession([line(event='task_start', task='a'), RECAP], 0)
    result = run(session)
    assert result.touched == {'w1'}
    assert result.recap['w1']['changed'] == 1
    cmd, timeout, check = session.calls[0]
    assert 'timeout -k 10s 100s' in cmd.display() and timeout > 100
    assert check is False


def test_run_without_a_recap_is_a_failure():
    with pytest.raises(playbook.PlaybookFailed) as info:
        run(StandInSession(['plain output'], 0))
    assert 'no play recap' in str(info.value)


def test_run_deadlines_name_the_last_task(monkeypatch):
    lines = [line(event='task_start', task='download images')]
    with pytest.raises(playbook.PlaybookTimeout) as info:
        run(StandInSession(lines, 0, raise_timeout=True), timeout=5)
    assert str(info.value) == (
        'ansible-server: playbook: scale.yml did not finish within 5 s '
        'and was stopped; last task started: download images')
    # Exit status 124: the remote `timeout` stopped it.
    clock = iter([0.0, 6.0])
    monkeypatch.setattr(playbook.time, 'monotonic', lambda: next(clock))
    with pytest.raises(playbook.PlaybookTimeout):
        run(StandInSession(lines, 124), timeout=5)


def test_run_failure_is_not_a_deadline_when_quick(monkeypatch):
    clock = iter([0.0, 1.0])
    monkeypatch.setattr(playbook.time, 'monotonic', lambda: next(clock))
    with pytest.raises(playbook.PlaybookFailed) as info:
        run(StandInSession([RECAP], 137), timeout=5)
    assert not isinstance(info.value, playbook.PlaybookTimeout)
