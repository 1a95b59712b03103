"""Commands on the lab's host (ip, mount, umount, ...)."""

import subprocess

from k8s_mgmt_lab.errors import LabError


def run(argv, input=None, check=True):
    """Run a host command, raising LabError with its stderr when it fails."""
    proc = subprocess.run(argv, input=input, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise LabError('%s failed (exit %d): %s' % (
            ' '.join(argv), proc.returncode, proc.stderr.strip()[-500:]))
    return proc
