"""A command's time limit, run for real: the whole command stops at the
limit (rounded up to a second) with status 124 (the rendering is checked in
tests/unit/ssh/test_ssh_command.py)."""

import subprocess

from k8s_mgmt.ssh.command import Command


def test_time_limit_stops_the_whole_command_with_status_124():
    cmd = Command('sh', '-c', 'sleep 30; echo late').time_limit(0.2)
    proc = subprocess.run(['sh', '-c', cmd.render()], capture_output=True,
                          timeout=20)
    assert (proc.returncode, proc.stdout) == (124, b'')
