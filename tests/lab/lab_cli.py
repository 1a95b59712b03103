"""`k8s-mgmt lab ...` run as an operator runs it, on a lab of the test's own.

Each test module gets its own state dir, bridge and tag, so its lab never
meets another module's or an operator's.
"""

import contextlib
import subprocess
import sys


class LabCLI(object):
    """``cli('up', '--flavour', 'simple')`` runs ``k8s-mgmt lab --state-dir
    ... up --flavour simple`` in a child process and returns it finished;
    with ``check`` a nonzero exit fails the test with the stderr tail."""

    def __init__(self, state_dir, bridge, tag, timeout=300):
        self.state_dir = state_dir
        self.bridge = bridge
        self.tag = tag
        self.timeout = timeout

    @property
    def global_args(self):
        return ['--state-dir', self.state_dir, '--bridge', self.bridge,
                '--tag', self.tag]

    def __call__(self, *args, check=True, stdin=None):
        proc = subprocess.run(
            [sys.executable, '-m', 'k8s_mgmt', 'lab'] + self.global_args +
            list(args), input=stdin, capture_output=True, text=True,
            timeout=self.timeout)
        if check:
            assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    @contextlib.contextmanager
    def fresh(self, assert_lab_clean):
        """No lab before (an interrupted run's is taken down), none after,
        whatever the test's outcome; checked clean."""
        self('down')
        try:
            yield self
        finally:
            self('down')
            assert_lab_clean(self.state_dir, self.tag, self.bridge)
