"""SSH sessions a heal_start keeps for the heal_end of the same heal.

Tacker runs one heal as two hook calls on the same driver object in the
same conductor process: heal_start, Heat's replacement of the VMs, then
heal_end. A master heal works on the other masters in both hooks; closing
their sessions after heal_start and opening them again in heal_end costs
every such master a second SSH connection (handshake, authentication, a
login in its logs). A successful heal_start therefore hands the sessions to
the nodes it does not heal to this module, which holds them for
``[k8s_mgmt] held_session_limit`` seconds; heal_end takes them back.

Rules:

* only a hook that succeeded holds sessions (a failed heal_start gets no
  heal_end from Tacker);
* a held session is taken only for the same VNF instance and operation,
  and only for a node that is still the same VM at the same address as
  the same user (server id, host, port, username); every other one is
  closed;
* a session not taken within the limit is closed by a timer; a new hold
  for the same key closes the old one; a session whose connection dropped
  is closed and the node connected again as usual;
* an idle held session sends SSH keepalives, so that a firewall's idle
  timeout does not cut it while Heat works.

Host keys need no new check: the session checks the key in use against the
one accepted at connect before every channel it opens.
"""

import threading
import time

from oslo_log import log as logging

from k8s_mgmt import conf

LOG = logging.getLogger(__name__)

# Seconds between keepalives of a held session.
KEEPALIVE_INTERVAL = 30


def limit():
    return conf.CONF.k8s_mgmt.held_session_limit


def identity(target):
    """What must not have changed for a held session to be reused."""
    return (target.name, target.host, target.port, target.username,
            target.server_id)


class _Held(object):
    def __init__(self, sessions, seconds, deadline, timer):
        self.sessions = sessions        # name -> SSHSession
        self.seconds = seconds          # how long they are held
        self.deadline = deadline        # time.monotonic()
        self.timer = timer


class SessionHold(object):
    """Sessions held between two hooks, by (VNF instance, operation)."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._held = {}
        self._lock = threading.Lock()

    def hold(self, key, sessions, seconds):
        """Keep ``sessions`` (name -> SSHSession) under ``key`` for
        ``seconds``; returns the names held (none when ``seconds`` is 0 or
        no session is still connected)."""
        live = {}
        for name, session in sessions.items():
            if session.alive():
                live[name] = session
            else:
                _close(session)
        if not live or seconds <= 0:
            for session in live.values():
                _close(session)
            return ()
        for session in live.values():
            session.keep_alive(KEEPALIVE_INTERVAL)
        timer = threading.Timer(seconds, self._expire, (key,))
        timer.daemon = True
        entry = _Held(live, seconds, self._clock() + seconds, timer)
        with self._lock:
            old, self._held[key] = self._held.get(key), entry
        if old is not None:
            _drop(old)
        timer.start()
        LOG.debug('holding SSH sessions to %s for %.0f s (%s)',
                  ', '.join(sorted(live)), seconds, key[1])
        return tuple(sorted(live))

    def take(self, key, targets):
        """The held sessions under ``key`` whose node is in ``targets``
        (name -> SSHTarget) unchanged and still connected; every other
        held session under ``key`` is closed. Nothing stays held."""
        with self._lock:
            entry = self._held.pop(key, None)
        if entry is None:
            return {}
        entry.timer.cancel()
        taken = {}
        expired = self._clock() >= entry.deadline
        for name, session in entry.sessions.items():
            target = targets.get(name)
            if (not expired and target is not None and session.alive() and
                    identity(session.target) == identity(target)):
                session.keep_alive(0)
                taken[name] = session
            else:
                _close(session)
        return taken

    def held(self, key):
        """Names held under ``key`` (for tests and logs)."""
        with self._lock:
            entry = self._held.get(key)
            return tuple(sorted(entry.sessions)) if entry else ()

    def release_all(self):
        """Close everything held (process shutdown, tests)."""
        with self._lock:
            entries, self._held = list(self._held.values()), {}
        for entry in entries:
            _drop(entry)

    def _expire(self, key):
        with self._lock:
            entry = self._held.get(key)
            if entry is None or self._clock() < entry.deadline:
                return
            del self._held[key]
        LOG.info('closing SSH sessions to %s held for %s: not taken within '
                 '%.0f s', ', '.join(sorted(entry.sessions)), key[1],
                 entry.seconds)
        _drop(entry)


def _drop(entry):
    entry.timer.cancel()
    for session in entry.sessions.values():
        _close(session)


def _close(session):
    try:
        session.close()
    except Exception as err:  # closing must not hide anything else
        LOG.debug('%s: close failed: %s', session.node, err)


# The driver process's one hold: Tacker keeps one driver object per
# conductor, and both hooks of a heal run in that process.
HOLD = SessionHold()
