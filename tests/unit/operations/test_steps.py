"""The step runner's failure line is redacted whatever the error type."""

import logging

import pytest

from k8s_mgmt import secrets
from k8s_mgmt.engine import phase_log

PASSWORD = secrets.Secret('s3cret-Passw0rd')


def fail_with_secret_in_text():
    # A driver bug or a library error: not one of ours, so not redacted by
    # its own constructor; the runner's log line is the last guard.
    raise RuntimeError('login with %s failed; join used token '
                       'k8smgt.0123456789abcdef' % PASSWORD.reveal())


def test_failed_step_line_is_logged_once_and_redacted(caplog):
    caplog.set_level(logging.INFO, logger='k8s_mgmt')
    runner = phase_log.PhaseLog('[instantiate vnf-1]')
    with pytest.raises(RuntimeError):
        runner.run('Join workers', fail_with_secret_in_text)
    failed = [r.getMessage() for r in caplog.records
              if r.levelno == logging.ERROR]
    assert len(failed) == 1
    line = failed[0]
    assert line.startswith('[instantiate vnf-1] <== Join workers: FAILED')
    assert 'login with *** failed' in line
    assert PASSWORD.reveal() not in line
    assert '0123456789abcdef' not in line
    assert runner.timings[-1][::2] == ('Join workers', 'failed')
