"""The control plane's supervision with tiny real processes (python -c
loops): a service started in its own process group, found again by its
PID file, stopped with SIGTERM or, when it ignores that, SIGKILL after
the deadline; a service that does not come up fails in one line with
its log's last lines and leaves nothing running."""

import os
import re
import signal
import sys
import time

import pytest

from k8s_mgmt_lab.openstack import processes

LOOP = 'import time\nwhile True:\n    time.sleep(0.05)\n'
# Ignores SIGTERM and starts a child that ignores it too: only a SIGKILL
# to the whole group ends both.
STUBBORN = (
    'import signal, subprocess, sys, time\n'
    'signal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
    'subprocess.Popen([sys.executable, "-c", "import signal, time; '
    'signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])\n'
    'print("stubborn up", flush=True)\n'
    'while True:\n    time.sleep(0.05)\n')


def _service(name, code, ready=lambda: True, timeout=5.0, stop=2.0):
    return processes.Service(name, [sys.executable, '-c', code], None,
                             dict(os.environ), ready, timeout, stop)


@pytest.fixture
def supervisor(tmp_path):
    made = processes.Supervisor(str(tmp_path / 'run'), str(tmp_path / 'log'))
    yield made
    for name in os.listdir(made.run_dir) if os.path.isdir(made.run_dir) \
            else []:
        made.stop(name[:-4], 0.5)


def test_a_service_runs_in_its_own_group_and_stops_on_sigterm(supervisor):
    pid = supervisor.start(_service('loop', LOOP))
    assert os.getpgid(pid) == pid != os.getpgid(0)
    assert supervisor.pid('loop') == pid and supervisor.alive('loop')
    assert supervisor.stop('loop', 5.0) == signal.SIGTERM
    assert not processes.group_alive(pid)
    assert supervisor.pid('loop') is None
    assert supervisor.stop('loop', 5.0) is None


def test_a_group_that_ignores_sigterm_is_killed_after_the_deadline(
        supervisor):
    pid = supervisor.start(_service('stubborn', STUBBORN,
                                    ready=_log_says(supervisor, 'stubborn')))
    started = time.monotonic()
    assert supervisor.stop('stubborn', 0.5) == signal.SIGKILL
    assert 0.5 <= time.monotonic() - started < 5.0
    assert not processes.group_alive(pid)


def _log_says(supervisor, name):
    def ready():
        with open(supervisor.log_path(name)) as handle:
            if ' up' not in handle.read():
                raise processes.NotReady('not up yet')
        return True
    return ready


def test_a_service_that_exits_fails_in_one_line_with_its_log(supervisor):
    code = ('import sys\nfor n in range(9):\n    print("line", n)\n'
            'sys.exit(3)\n')
    with pytest.raises(processes.ServiceFailed) as failed:
        supervisor.start(_service('quitter', code,
                                  ready=_log_says(supervisor, 'quitter')))
    message = str(failed.value)
    assert '\n' not in message
    assert re.match(r'quitter did not come up \(exited with code 3 after '
                    r'\d+\.\d s\); log ', message), message
    assert supervisor.log_path('quitter') in message
    assert message.endswith(
        'line 4 | line 5 | line 6 | line 7 | line 8')
    assert supervisor.pid('quitter') is None


def test_a_service_never_ready_is_stopped_when_its_deadline_passes(
        supervisor):
    def never():
        raise processes.NotReady('port 1: refused')
    pids = []
    real_start = processes.subprocess.Popen

    def recording(*args, **kwargs):
        proc = real_start(*args, **kwargs)
        pids.append(proc.pid)
        return proc
    processes.subprocess.Popen = recording
    try:
        started = time.monotonic()
        with pytest.raises(processes.ServiceFailed) as failed:
            supervisor.start(_service('mute', STUBBORN, ready=never,
                                      timeout=1.0, stop=0.3))
    finally:
        processes.subprocess.Popen = real_start
    assert 'mute did not come up (not ready within 1 s: port 1: refused)' \
        in str(failed.value)
    assert 'stubborn up' in str(failed.value)
    assert time.monotonic() - started < 6.0
    assert pids and not processes.group_alive(pids[0])
    assert os.listdir(supervisor.run_dir) == []


def test_a_reused_pid_is_not_taken_for_the_service(supervisor):
    pid = supervisor.start(_service('loop', LOOP))
    path = os.path.join(supervisor.run_dir, 'loop.pid')
    with open(path, 'w') as handle:
        handle.write('%d 1\n' % pid)
    assert supervisor.pid('loop') is None
    os.killpg(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
