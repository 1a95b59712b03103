"""A real OpenSSH sshd on 127.0.0.1 for tests, with its own config, host key
and authorized_keys in a temp dir; key login as root only.

Used by tests/functional/ssh/test_ssh_openssh.py and the kubespray
functional tests. Needs /usr/sbin/sshd (Debian openssh-server) and root.
"""

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from k8s_mgmt import polling

SSHD = '/usr/sbin/sshd'
SKIP_REASON = 'needs OpenSSH sshd (apt install openssh-server) and root'


def available():
    return os.path.exists(SSHD) and os.geteuid() == 0


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def ed25519_pair():
    """(OpenSSH private key text, public key line) of a new key."""
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()
    return private, public


def write(path, text, mode):
    with open(os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                      mode), 'w') as f:
        f.write(text)


def children(pid):
    try:
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            return f.read().split()
    except OSError:
        return []


def wait_until(predicate, deadline=10.0):
    poll = polling.Poll(deadline, first=0.01, maximum=0.5)
    return any(predicate() for _ in poll)


def processes_with(text):
    """Pids whose command line holds ``text``."""
    found = []
    for pid in os.listdir('/proc'):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                if text.encode() in f.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def kill_groups_of(text):
    """SIGKILL the process groups of the processes whose command line holds
    ``text`` (never the test's own group)."""
    for pid in processes_with(text):
        try:
            group = os.getpgid(int(pid))
            if group != os.getpgid(0):
                os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


@dataclasses.dataclass
class Server(object):
    port: int
    dir: object                 # pathlib.Path of its files
    host_private: str           # its host key
    host_public: str            # 'ssh-ed25519 AAAA...'
    client_private: str         # a key authorized for root
    client_public: str
    process: object

    def authorize(self, public_line):
        """Add a key line to the server's authorized_keys."""
        with open(self.dir / 'authorized_keys', 'a') as f:
            f.write(public_line.strip() + '\n')


@contextlib.contextmanager
def running_sshd(directory, extra_config=(), extra_authorized_files=()):
    """Start sshd with its files in ``directory``; yield a :class:`Server`.

    ``extra_config``: more sshd_config lines (e.g. ``SetEnv ...``);
    ``extra_authorized_files``: more AuthorizedKeysFile paths (``%h``
    allowed), read after the server's own authorized_keys.

    The caller waits for it to listen (an SSHSession's connect retry does).
    On exit its per-connection children are reaped before it is stopped:
    one outliving the listener would be reparented to PID 1, which in this
    sandbox never reaps it.
    """
    # sshd refuses to start without its privilege separation directory.
    os.makedirs('/run/sshd', mode=0o755, exist_ok=True)
    host_private, host_public = ed25519_pair()
    client_private, client_public = ed25519_pair()
    write(directory / 'host_key', host_private, 0o600)
    write(directory / 'host_key.pub', host_public + '\n', 0o644)
    write(directory / 'authorized_keys', client_public + '\n', 0o600)
    port = free_port()
    config = '\n'.join([
        'Port %d' % port, 'ListenAddress 127.0.0.1',
        'HostKey %s' % (directory / 'host_key'),
        'PidFile %s' % (directory / 'sshd.pid'),
        'AuthorizedKeysFile %s' % ' '.join(
            [str(directory / 'authorized_keys')] +
            [str(p) for p in extra_authorized_files]),
        'PermitRootLogin prohibit-password', 'PasswordAuthentication no',
        'KbdInteractiveAuthentication no', 'UsePAM no', 'StrictModes no',
        'MaxStartups 100', 'MaxSessions 100',
        'Subsystem sftp internal-sftp'] + list(extra_config) + [''])
    write(directory / 'sshd_config', config, 0o600)
    with open(directory / 'sshd.log', 'wb') as log:
        process = subprocess.Popen(
            [SSHD, '-D', '-e', '-f', str(directory / 'sshd_config')],
            stdout=subprocess.DEVNULL, stderr=log)
    server = Server(port, directory, host_private, host_public,
                    client_private, client_public, process)
    try:
        yield server
    finally:
        wait_until(lambda: not children(process.pid))
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
