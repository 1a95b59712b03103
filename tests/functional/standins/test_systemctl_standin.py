"""The systemctl stand-in's start waits for what systemd waits for: READY=1
from a Type=notify service (the real haproxy here), a pid file standing
for it, and only without either a short window. Real processes on this
machine, nothing mocked but the directories."""

import os
import shutil
import socket
import subprocess
import sys

import pytest

from k8s_mgmt_lab.kube import systemctl

HAPROXY = shutil.which('haproxy') or '/usr/sbin/haproxy'
SERVICE = 'haproxy'


@pytest.fixture
def dirs(monkeypatch, tmp_path):
    monkeypatch.setattr(systemctl, 'PID_DIR', str(tmp_path / 'run'))
    monkeypatch.setattr(systemctl, 'LOG_DIR', str(tmp_path / 'log'))
    # The kubelet's unit, as its package installs it.
    units = tmp_path / 'units'
    units.mkdir()
    (units / 'kubelet.service').write_text(
        '[Service]\nExecStart=/usr/bin/kubelet\n')
    monkeypatch.setattr(systemctl, 'UNIT_DIRS', (str(units),))
    yield tmp_path
    for name in ('haproxy', 'keepalived'):
        systemctl.stop(name)


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _haproxy_cfg(path, port):
    path.write_text(
        'defaults\n    mode tcp\n    timeout connect 1s\n'
        '    timeout client 1s\n    timeout server 1s\n'
        'frontend f\n    bind 127.0.0.1:%d\n    default_backend b\n'
        'backend b\n    server s1 127.0.0.1:1 check\n' % port)
    return path


def _use_argv(monkeypatch, argv):
    monkeypatch.setattr(systemctl, 'service_argv', lambda name: argv)


needs_haproxy = pytest.mark.skipif(not os.path.exists(HAPROXY),
                                   reason='needs haproxy')


@needs_haproxy
def test_notify_service_is_up_once_it_says_ready(dirs, monkeypatch):
    port = _free_port()
    cfg = _haproxy_cfg(dirs / 'haproxy.cfg', port)
    _use_argv(monkeypatch, [HAPROXY, '-Ws', '-db', '-f', str(cfg)])
    assert systemctl.READINESS[SERVICE] == systemctl.NOTIFY
    assert systemctl.start(SERVICE) == 0
    assert systemctl.running_pid(SERVICE)
    # Ready means listening: the frontend takes a connection now.
    socket.create_connection(('127.0.0.1', port), timeout=5).close()


@needs_haproxy
def test_notify_service_that_exits_fails_the_start(dirs, monkeypatch,
                                                   capsys):
    cfg = dirs / 'bad.cfg'
    cfg.write_text('frontend f\n    bind 127.0.0.1:%d\n    nonsense here\n'
                   % _free_port())
    _use_argv(monkeypatch, [HAPROXY, '-Ws', '-db', '-f', str(cfg)])
    assert systemctl.start(SERVICE) == 1
    assert 'haproxy.service failed (exit status' in capsys.readouterr().err


def test_notify_service_that_never_says_ready_times_out(dirs, monkeypatch,
                                                        capsys):
    monkeypatch.setattr(systemctl, 'START_TIMEOUT', 0.5)
    _use_argv(monkeypatch, [shutil.which('sleep'), '30'])
    assert systemctl.start(SERVICE) == 1
    assert 'not ready within' in capsys.readouterr().err
    assert systemctl.running_pid(SERVICE) is None  # stopped, as systemd


def test_pid_file_readiness_waits_for_the_file(dirs, monkeypatch):
    ready_file = dirs / 'run' / 'child.pid'
    monkeypatch.setitem(systemctl.READINESS, 'keepalived', str(ready_file))
    os.makedirs(ready_file.parent, exist_ok=True)
    ready_file.write_text('stale\n')  # a killed run's file does not count
    script = ('import os, time; time.sleep(0.4); '
              'open(%r, "w").write(str(os.getpid())); time.sleep(30)'
              % str(ready_file))
    _use_argv(monkeypatch, [sys.executable, '-c', script])
    assert systemctl.start('keepalived') == 0
    assert ready_file.read_text().strip() == str(
        systemctl.running_pid('keepalived'))


def test_a_service_without_readiness_counts_alive_after_the_window(
        dirs, monkeypatch):
    monkeypatch.delitem(systemctl.READINESS, SERVICE)
    _use_argv(monkeypatch, [shutil.which('sleep'), '30'])
    assert systemctl.start(SERVICE) == 0
    assert systemctl.running_pid(SERVICE)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open('/proc/%d/stat' % pid) as f:
        return f.read().rsplit(')', 1)[1].split()[0] not in ('Z', 'X')


def test_stop_no_block_signals_and_returns_before_the_exit(
        dirs, monkeypatch):
    from k8s_mgmt.polling import Poll
    # A service that takes a second to exit on SIGTERM (keepalived does).
    script = ('import signal, sys, time\n'
              'def term(*_):\n    time.sleep(1.0)\n    sys.exit(0)\n'
              'signal.signal(signal.SIGTERM, term)\n'
              'open(%r, "w").write("up")\n'
              'while True:\n    time.sleep(1)\n'
              % str(dirs / 'up'))
    monkeypatch.delitem(systemctl.READINESS, SERVICE)
    _use_argv(monkeypatch, [sys.executable, '-c', script])
    assert systemctl.start(SERVICE) == 0
    pid = systemctl.running_pid(SERVICE)
    for _ in Poll(5, first=0.01, maximum=0.1):
        if (dirs / 'up').exists():
            break
    assert systemctl.main(['stop', '--no-block', SERVICE]) == 0
    assert _alive(pid)  # signalled, still exiting
    pid_file = os.path.join(systemctl.PID_DIR, SERVICE + '.pid')
    for _ in Poll(10, first=0.05, maximum=0.2):
        if not (_alive(pid) or os.path.exists(pid_file)):
            break
    assert not _alive(pid)
    assert not os.path.exists(pid_file)  # the queued job finished


FAST_CASES = (['is-active', 'haproxy'], ['is-active', '--quiet', 'haproxy'],
              ['is-active', '-q', 'haproxy.service'], ['start', 'haproxy'],
              ['enable', 'kubelet'])


@pytest.mark.parametrize('argv', FAST_CASES)
def test_wrapper_answers_like_the_stand_in_when_nothing_changes(
        dirs, monkeypatch, argv, capsys):
    from k8s_mgmt_lab.kube import layer
    monkeypatch.setattr(systemctl, 'ENABLED_DIR', str(dirs / 'enabled'))
    monkeypatch.delitem(systemctl.READINESS, SERVICE)
    _use_argv(monkeypatch, [shutil.which('sleep'), '30'])
    assert systemctl.start(SERVICE) == 0
    assert systemctl.main(['enable', 'kubelet']) == 0
    capsys.readouterr()
    wrapper = dirs / 'systemctl.sh'
    # What the wrapper does not answer itself says so.
    wrapper.write_text(layer.fast_systemctl() + 'echo NOT-FAST; exit 99\n')
    shell = subprocess.run(['sh', str(wrapper)] + argv, capture_output=True,
                           text=True)
    assert shell.returncode != 99, shell.stdout
    status = systemctl.main(list(argv))
    assert (shell.returncode, shell.stdout) == (status,
                                                capsys.readouterr().out)


@pytest.mark.parametrize('argv', (
    ['is-active', 'keepalived'], ['start', 'keepalived'],
    ['enable', 'haproxy'], ['stop', 'haproxy'], ['restart', 'haproxy'],
    ['is-active', 'nfs-server'], ['start', 'haproxy', 'keepalived']))
def test_wrapper_leaves_every_change_to_the_stand_in(dirs, monkeypatch,
                                                     argv):
    from k8s_mgmt_lab.kube import layer
    monkeypatch.setattr(systemctl, 'ENABLED_DIR', str(dirs / 'enabled'))
    monkeypatch.delitem(systemctl.READINESS, SERVICE)
    _use_argv(monkeypatch, [shutil.which('sleep'), '30'])
    assert systemctl.start(SERVICE) == 0   # haproxy runs, keepalived not
    wrapper = dirs / 'systemctl.sh'
    wrapper.write_text(layer.fast_systemctl() + 'echo NOT-FAST; exit 99\n')
    shell = subprocess.run(['sh', str(wrapper)] + argv, capture_output=True,
                           text=True)
    assert (shell.returncode, shell.stdout) == (99, 'NOT-FAST\n')


def test_try_restart_restarts_only_a_running_service(dirs, monkeypatch):
    """systemd's try-restart: a stopped unit stays stopped (a unit the
    driver stopped is not brought back by it); a running one restarts."""
    monkeypatch.delitem(systemctl.READINESS, SERVICE)
    _use_argv(monkeypatch, [shutil.which('sleep'), '30'])
    assert systemctl.main(['try-restart', SERVICE]) == 0
    assert systemctl.running_pid(SERVICE) is None
    assert systemctl.start(SERVICE) == 0
    before = systemctl.running_pid(SERVICE)
    assert systemctl.main(['try-restart', SERVICE]) == 0
    after = systemctl.running_pid(SERVICE)
    assert after and after != before and not _alive(before)


@needs_haproxy
def test_show_main_pid_as_systemd_prints_it(dirs, monkeypatch, capsys):
    """``systemctl show --property=MainPID --value``: the running main
    process, 0 once stopped (the scripts find haproxy's master so)."""
    monkeypatch.delitem(systemctl.READINESS, SERVICE)
    _use_argv(monkeypatch, [shutil.which('sleep'), '30'])
    assert systemctl.start(SERVICE) == 0
    pid = systemctl.running_pid(SERVICE)
    capsys.readouterr()
    assert systemctl.main(['show', '--property=MainPID', '--value',
                           SERVICE]) == 0
    assert capsys.readouterr().out == '%d\n' % pid
    assert systemctl.main(['show', '--property=MainPID,ActiveState',
                           SERVICE]) == 0
    assert capsys.readouterr().out == 'MainPID=%d\nActiveState=active\n' % pid
    systemctl.stop(SERVICE)
    assert systemctl.main(['show', '--property=MainPID', '--value',
                           SERVICE]) == 0
    assert capsys.readouterr().out == '0\n'
    assert systemctl.main(['show', '--property=Nope', SERVICE]) == 1
