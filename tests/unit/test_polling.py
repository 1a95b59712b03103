"""Backoff against a deadline, on a fake clock: attempts, delays, the end."""

import pytest

from k8s_mgmt import polling


class FakeClock(object):
    def __init__(self):
        self.now = 100.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def _poll(clock, timeout, **kwargs):
    return polling.Poll(timeout, clock=clock, sleep=clock.sleep, **kwargs)


def test_delays_double_up_to_the_maximum_without_jitter():
    clock = FakeClock()
    poll = _poll(clock, 100, first=1, maximum=4, jitter=False)
    for attempt in poll:
        if attempt == 5:
            break
    assert clock.slept == [1, 2, 4, 4]
    assert poll.attempts == 5


def test_the_last_delay_is_cut_to_the_deadline_then_one_last_attempt():
    clock = FakeClock()
    poll = _poll(clock, 2.5, first=1, maximum=4, jitter=False)
    attempts = list(poll)
    # t=0, t=1, t=2.5 (the 2 s delay cut to 1.5 s): then the deadline.
    assert attempts == [1, 2, 3]
    assert clock.slept == [1, 1.5]
    assert poll.expired() and poll.remaining() == 0.0


def test_on_wait_hears_each_delay_before_it_is_slept_not_after_the_end():
    clock = FakeClock()
    heard = []

    def on_wait(seconds):
        heard.append((seconds, len(clock.slept)))

    poll = _poll(clock, 2.5, first=1, maximum=4, jitter=False,
                 on_wait=on_wait)
    assert list(poll) == [1, 2, 3]
    # Each delay is announced before its sleep; none after attempt 3.
    assert heard == [(1, 0), (1.5, 1)]


def test_jittered_delays_stay_within_half_and_full_delay():
    clock = FakeClock()
    poll = _poll(clock, 1000, first=2, maximum=8)
    for attempt in poll:
        if attempt == 6:
            break
    for got, nominal in zip(clock.slept, [2, 4, 8, 8, 8]):
        assert nominal / 2 <= got <= nominal


def test_zero_timeout_still_tries_once():
    clock = FakeClock()
    assert list(_poll(clock, 0)) == [1]
    assert clock.slept == []


@pytest.mark.parametrize('timeout', [None, -1])
def test_a_poll_needs_a_deadline(timeout):
    with pytest.raises(ValueError, match='timeout'):
        polling.Poll(timeout)
