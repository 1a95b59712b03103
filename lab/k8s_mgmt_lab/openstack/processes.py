"""The processes a control plane runs: each started in its own session
(so a stop reaches its whole process group), its output appended to its
log, its PID and start time recorded in a file; stopped by that PID with
SIGTERM, then SIGKILL after a deadline."""

import collections
import os
import signal
import subprocess
import time

from k8s_mgmt import polling

TAIL_LINES = 5

# What a control plane runs: ``ready()`` says whether the started process
# serves yet (it may raise NotReady with a reason); ``timeout`` bounds the
# wait for it, ``stop_timeout`` the wait between SIGTERM and SIGKILL.
Service = collections.namedtuple(
    'Service', 'name argv cwd env ready timeout stop_timeout')


class ServiceFailed(Exception):
    """A service did not come up: one line naming it, its log and the
    log's last lines."""


def log_tail(path, lines=TAIL_LINES):
    try:
        with open(path, 'rb') as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(handle.tell() - 8192, 0))
            text = handle.read().decode('utf-8', 'replace')
    except OSError:
        return '(no log)'
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    return ' | '.join(kept[-lines:]) or '(empty log)'


def _start_time(pid):
    """The kernel's start time of ``pid`` (clock ticks since boot), which
    tells a recorded process from a later one that reused its PID."""
    try:
        with open('/proc/%d/stat' % pid) as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat.rsplit(')', 1)[1].split()[19]


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def group_alive(pgid):
    """Whether any process of the group led by ``pgid`` is left."""
    _reap(pgid)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


class Supervisor(object):
    """Starts services, records them under ``run_dir`` and stops them by
    the recorded PIDs (also from another process than the one that
    started them)."""

    def __init__(self, run_dir, log_dir, clock=time.monotonic):
        self.run_dir = run_dir
        self.log_dir = log_dir
        self._clock = clock

    def log_path(self, name):
        return os.path.join(self.log_dir, name + '.log')

    def _pid_path(self, name):
        return os.path.join(self.run_dir, name + '.pid')

    def start(self, service):
        """Start ``service`` and wait until it is ready; on failure stop
        it and raise ServiceFailed."""
        os.makedirs(self.run_dir, mode=0o700, exist_ok=True)
        os.makedirs(self.log_dir, mode=0o700, exist_ok=True)
        log = self.log_path(service.name)
        with open(log, 'ab') as out:
            proc = subprocess.Popen(
                service.argv, cwd=service.cwd, env=service.env,
                stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True)
        with open(self._pid_path(service.name), 'w') as handle:
            handle.write('%d %s\n' % (proc.pid, _start_time(proc.pid)))
        reason = self._wait_ready(service, proc)
        if reason:
            self.stop(service.name, service.stop_timeout)
            raise ServiceFailed(
                '%s did not come up (%s); log %s: %s'
                % (service.name, reason, log, log_tail(log)))
        return proc.pid

    def _wait_ready(self, service, proc):
        """None once ready, else why not."""
        reason = 'not ready'
        poll = polling.Poll(service.timeout, first=0.1, maximum=1.0,
                            clock=self._clock)
        for _attempt in poll:
            code = proc.poll()
            if code is not None:
                return 'exited with code %d after %.1f s' % (
                    code, service.timeout - poll.remaining())
            try:
                if service.ready():
                    return None
            except NotReady as error:
                reason = str(error)
        return 'not ready within %.0f s: %s' % (service.timeout, reason)

    def pid(self, name):
        """The recorded PID of ``name`` if that process still runs."""
        try:
            with open(self._pid_path(name)) as handle:
                pid_text, started = handle.read().split()
        except (OSError, ValueError):
            return None
        pid = int(pid_text)
        now = _start_time(pid)
        # A leader that exited may leave members of its group behind.
        if now == started or (now is None and group_alive(pid)):
            return pid
        return None

    def alive(self, name):
        pid = self.pid(name)
        return pid is not None and group_alive(pid) and \
            _state(pid) not in ('Z', 'X', None)

    def stop(self, name, timeout):
        """SIGTERM to the service's process group, SIGKILL to it after
        ``timeout`` seconds; returns the signal that ended it (or None
        when nothing ran)."""
        pid = self.pid(name)
        used = None
        if pid is not None and group_alive(pid):
            used = _signal_group(pid, signal.SIGTERM)
            if not self._wait_gone(pid, timeout):
                used = _signal_group(pid, signal.SIGKILL)
                self._wait_gone(pid, 10.0)
        try:
            os.remove(self._pid_path(name))
        except FileNotFoundError:
            pass
        return used

    def _wait_gone(self, pgid, timeout):
        for _attempt in polling.Poll(timeout, first=0.05, maximum=0.5,
                                     clock=self._clock):
            if not group_alive(pgid):
                return True
        return False


class NotReady(Exception):
    """Why a readiness check said no (shown when the deadline passes)."""


def _signal_group(pgid, signum):
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass
    return signum


def _state(pid):
    try:
        with open('/proc/%d/stat' % pid) as handle:
            return handle.read().rsplit(')', 1)[1].split()[0]
    except OSError:
        return None
