"""Polling with backoff against a deadline: the one way this project waits.

Every wait (an SSH connect while a VM boots, a node becoming Ready, an
eviction the disruption budget refuses, a console that has no host keys
yet, a lab VM's sshd) is a loop of attempts separated by growing delays,
ended by a deadline rather than by a count::

    poll = polling.Poll(timeout, first=0.5, maximum=5.0)
    for attempt in poll:
        if done():
            return
    raise SomeError('not done within %.0f s (%d attempts)'
                    % (timeout, poll.attempts))

The loop body runs at once, then again after each delay; a delay never
runs past the deadline, and the loop ends when the deadline has passed
after an attempt. Delays double (``factor``) up to ``maximum``; with
``jitter`` each is drawn from [d/2, d] so that many pollers started
together do not hit a server in step. ``on_wait(seconds)``, when given,
is called before each sleep with the seconds about to be slept (to log
"retrying in ..."): it is not called after the last attempt. The clock
and the sleep can be replaced for tests.
"""

import random
import time


class Poll(object):
    """An iterable of attempt numbers (1, 2, ...) paced by backoff."""

    def __init__(self, timeout, first=0.5, maximum=5.0, factor=2.0,
                 jitter=True, clock=time.monotonic, sleep=time.sleep,
                 on_wait=None):
        if timeout is None or timeout < 0:
            raise ValueError('a poll needs a timeout >= 0, not %r'
                             % (timeout,))
        self.timeout = timeout
        self.first = first
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self._clock = clock
        self._sleep = sleep
        self._on_wait = on_wait
        self.deadline = clock() + timeout
        self.attempts = 0

    def remaining(self):
        """Seconds left before the deadline (never negative)."""
        return max(self.deadline - self._clock(), 0.0)

    def expired(self):
        return self._clock() >= self.deadline

    def delays(self):
        """The endless sequence of delays this poll waits between
        attempts (before cutting them to the deadline)."""
        delay = self.first
        while True:
            if self.jitter:
                yield delay / 2 + random.uniform(0, delay / 2)
            else:
                yield delay
            delay = min(delay * self.factor, self.maximum)

    def __iter__(self):
        delays = self.delays()
        while True:
            self.attempts += 1
            yield self.attempts
            remaining = self.deadline - self._clock()
            if remaining <= 0:
                return
            delay = min(next(delays), remaining)
            if self._on_wait is not None:
                self._on_wait(delay)
            self._sleep(delay)
