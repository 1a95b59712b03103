"""The lab: an OpenStack-shaped sandbox on one Linux machine.

Lab VMs are network namespaces on one bridge, each with its own hostname, PID
namespace, copy-on-write root filesystem and a real OpenSSH server (see
``net``, ``rootfs``, ``vm``); ``cleanup`` removes everything the lab made,
also after the controlling process crashed. Everything here needs root.
"""

import subprocess

from k8s_mgmt import secrets


class LabError(Exception):
    """A lab operation failed; the message is one line a user can act on."""

    def __init__(self, message):
        super().__init__(secrets.redact(message))


def run(argv, input=None, check=True):
    """Run a host command, raising LabError with its stderr when it fails."""
    proc = subprocess.run(argv, input=input, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise LabError('%s failed (exit %d): %s' % (
            ' '.join(argv), proc.returncode, proc.stderr.strip()[-500:]))
    return proc
