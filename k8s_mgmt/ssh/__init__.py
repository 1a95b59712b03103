"""SSH to the cluster VMs: quoted commands, pinned host keys, one session.

Typical use::

    from k8s_mgmt import ssh

    with ssh.SSHSession(target) as session:
        session.put(script_bytes, '/tmp/install.sh', mode=0o755)
        session.run(ssh.Command('bash', '/tmp/install.sh', '--role', 'worker')
                    .sudo(), step='install')
"""

from k8s_mgmt.ssh.client import SSHSession
from k8s_mgmt.ssh.command import Command
from k8s_mgmt.ssh.command import ShellCommand
from k8s_mgmt.ssh.hostkeys import HostKeyStore
from k8s_mgmt.ssh.hostkeys import fingerprint
from k8s_mgmt.ssh.target import Result
from k8s_mgmt.ssh.target import SSHTarget
from k8s_mgmt.ssh.target import load_private_key


__all__ = ['Command', 'HostKeyStore', 'Result', 'SSHSession', 'SSHTarget',
           'ShellCommand', 'fingerprint', 'load_private_key']
