"""The driver's progress lines, as tacker-conductor logs them, shown while
an operation runs: what ``lab instantiate`` prints on a lab that runs
Tacker (the driver runs in the conductor, not in the CLI's process).

The conductor's log is followed from its end when the operation starts;
every line a ``k8s_mgmt`` logger wrote goes to ``out`` without oslo.log's
prefix (date, pid, level and logger stay, the request id goes).
"""

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
    """``with ConductorProgress(path):`` shows the driver's new lines."""

    def __init__(self, log_path, out=None):
        self.log_path = log_path
        self.out = out or sys.stderr
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        try:
            with open(self.log_path, 'rb') as handle:
                self._offset = handle.seek(0, 2)
        except OSError:
            return self           # no log: nothing to show
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return False

    def _follow(self):
        pending = b''
        while True:
            stopping = self._stop.is_set()
            try:
                with open(self.log_path, 'rb') as handle:
                    handle.seek(self._offset)
                    chunk = handle.read()
            except OSError:
                chunk = b''
            self._offset += len(chunk)
            pending += chunk
            *lines, pending = pending.split(b'\n')
            for raw in lines:
                shown = driver_line(raw.decode('utf-8', 'replace'))
                if shown:
                    self.out.write(shown + '\n')
                    self.out.flush()
            if stopping:
                return
            self._stop.wait(PERIOD)
