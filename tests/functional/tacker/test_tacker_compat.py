"""Tacker compatibility, in a Python process of its own.

Importing all of Tacker's objects (``objects.register_all()``) swaps eventlet's
green locks into ``threading`` for later users in the same process, which
hangs unrelated tests that run threaded servers afterwards. The cases in
``tacker_cases.py`` (the driver as Tacker loads and calls it) and
``user_data_cases.py`` (the sample package's UserData through Tacker's
code path) therefore run in a separate pytest process; this test fails
with that run's output when any case fails.
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
CASES = [os.path.join(HERE, name)
         for name in ('tacker_cases.py', 'user_data_cases.py',
                      'modify_info_cases.py')]


def test_tacker_compatibility_cases_pass_in_a_clean_process():
    pytest.importorskip('tacker', reason='tacker extra not installed')
    proc = subprocess.run(
        [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
         '-rfE', '--rootdir', REPO] + CASES,
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert ' passed' in summary and 'skipped' not in summary, summary
