"""The driver's progress lines, as tacker-conductor logs them, shown while
an operation runs: what ``lab instantiate`` prints on a lab that runs
Tacker (the driver runs in the conductor, not in the CLI's process).

Each conductor's log is followed from its end when the operation starts;
every line a ``k8s_mgmt`` logger wrote goes to ``out`` without oslo.log's
prefix (date, pid, level and logger stay, the request id goes).
"""

import os
import re
import sys
import threading

# "2026-11-27 07:40:01.123 4242 INFO k8s_mgmt.engine.phases [req-...] text"
_LINE = re.compile(r'^(?P<time>\S+ \S+) \d+ (?P<level>[A-Z]+) '
                   r'(?P<logger>k8s_mgmt[\w.]*) (?:\[[^\]]*\] )?(?P<text>.*)$')
# Seconds between two reads of the log: a tail's period, not a wait for
# a state (the operation's end is polled by the caller).
PERIOD = 0.5


def driver_line(line):
    """``line`` shortened to time, level and text when the driver wrote
    it, else None."""
    found = _LINE.match(line.rstrip('\n'))
    if not found:
        return None
    return '%s %s %s' % (found['time'].split(' ')[-1][:8], found['level'],
                         found['text'])


class ConductorProgress(object):
    """``with ConductorProgress(paths):`` shows the driver's new lines of
    each log in ``paths`` (one path, or a list: every conductor's, since an
    operation lands on any one of them). With several logs each line
    starts with its log's name (``tacker-conductor-2``)."""

    def __init__(self, log_paths, out=None):
        if isinstance(log_paths, str):
            log_paths = [log_paths]
        self.log_paths = list(log_paths)
        self.out = out or sys.stderr
        self._stop = threading.Event()
        self._thread = None
        self._tails = []

    def __enter__(self):
        for path in self.log_paths:
            try:
                with open(path, 'rb') as handle:
                    offset = handle.seek(0, 2)
            except OSError:
                offset = 0        # no log yet: all of it, once written
            self._tails.append(_Tail(path, offset, self._tag(path)))
        if self._tails:
            self._thread = threading.Thread(target=self._follow,
                                            daemon=True)
            self._thread.start()
        return self

    def _tag(self, path):
        if len(self.log_paths) == 1:
            return ''
        return '[%s] ' % os.path.basename(path).rsplit('.log', 1)[0]

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return False

    def _follow(self):
        while True:
            stopping = self._stop.is_set()
            for tail in self._tails:
                for shown in tail.new_lines():
                    self.out.write(shown + '\n')
                    self.out.flush()
            if stopping:
                return
            self._stop.wait(PERIOD)


class _Tail(object):
    """One log followed from ``offset``: the driver's lines written since
    the last read."""

    def __init__(self, path, offset, tag):
        self.path, self.offset, self.tag = path, offset, tag
        self.pending = b''

    def new_lines(self):
        try:
            with open(self.path, 'rb') as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except OSError:
            chunk = b''
        self.offset += len(chunk)
        self.pending += chunk
        *lines, self.pending = self.pending.split(b'\n')
        found = []
        for raw in lines:
            shown = driver_line(raw.decode('utf-8', 'replace'))
            if shown:
                found.append(self.tag + shown)
        return found
