"""The log of one operation's phases: each logged and timed as it runs.

The phase runner (phases.run) runs each phase through it; the log shows
``[instantiate <id>] ==> Join workers`` and how long each took, and a
summary at the end. Errors keep their own message (which names the node
and the step) and are logged once, redacted.
"""

import time

from oslo_log import log as logging

from k8s_mgmt import secrets

LOG = logging.getLogger(__name__)


class PhaseLog(object):
    def __init__(self, prefix):
        self.prefix = prefix
        self.timings = []          # (title, seconds, 'ok'|'skipped'|'failed')
        self._started = time.monotonic()

    def announce(self, title):
        """The ``==>`` line of a phase about to start on another thread:
        logged here, so the lines keep the order the phases started in."""
        LOG.info('%s ==> %s', self.prefix, title)

    def run(self, title, fn, *args, announced=False, **kwargs):
        if not announced:
            self.announce(title)
        started = time.monotonic()
        try:
            result = fn(*args, **kwargs)
        except Exception as err:
            seconds = time.monotonic() - started
            self.timings.append((title, seconds, 'failed'))
            LOG.error('%s <== %s: FAILED after %.1f s: %s', self.prefix,
                      title, seconds, secrets.redact(str(err)))
            raise
        seconds = time.monotonic() - started
        self.timings.append((title, seconds, 'ok'))
        LOG.info('%s <== %s: done in %.1f s', self.prefix, title, seconds)
        return result

    def skip(self, title, reason):
        self.timings.append((title, 0.0, 'skipped'))
        LOG.info('%s ==> %s: skipped (%s)', self.prefix, title, reason)

    @property
    def total_seconds(self):
        return time.monotonic() - self._started

    def summary(self):
        parts = ['%s %.1f s%s' % (title, seconds,
                                  '' if how == 'ok' else ' (%s)' % how)
                 for title, seconds, how in self.timings]
        LOG.info('%s finished in %.1f s: %s', self.prefix,
                 self.total_seconds, '; '.join(parts))
