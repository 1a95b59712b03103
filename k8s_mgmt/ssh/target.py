"""Who to connect to and what a command returned: plain data for sessions."""

import dataclasses
import io

import paramiko

from k8s_mgmt import exceptions
from k8s_mgmt import secrets


@dataclasses.dataclass(frozen=True)
class SSHTarget(object):
    """Where and as whom to connect. Credentials are held as Secrets."""

    name: str
    host: str
    username: str
    password: secrets.Secret = None
    private_key: secrets.Secret = None  # PEM/OpenSSH text, not a path
    port: int = 22
    server_id: str = None

    def __post_init__(self):
        for field in ('password', 'private_key'):
            value = getattr(self, field)
            if value is not None and not isinstance(value, secrets.Secret):
                object.__setattr__(self, field, secrets.Secret(value))
        for field in ('name', 'host', 'username'):
            if not isinstance(getattr(self, field), str) or \
                    not getattr(self, field):
                raise ValueError('SSHTarget.%s must be a non-empty string'
                                 % field)
        if not isinstance(self.port, int) or not 0 < self.port < 65536:
            raise ValueError('SSHTarget.port must be 1-65535, not %r'
                             % (self.port,))
        if not self.password and not self.private_key:
            raise ValueError('SSHTarget %s needs a password or a private key'
                             % self.name)

    @property
    def address(self):
        return '%s:%s' % (self.host, self.port)


@dataclasses.dataclass(frozen=True)
class Result(object):
    """What a remote command did. ``repr`` does not show the output."""

    status: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def ok(self):
        return self.status == 0

    def __repr__(self):
        return ('Result(status=%d, seconds=%.2f, stdout=<%d chars>, '
                'stderr=<%d chars>)' % (self.status, self.seconds,
                                        len(self.stdout), len(self.stderr)))


def load_private_key(pem, node='?'):
    """A paramiko key from PEM/OpenSSH text: Ed25519, ECDSA or RSA."""
    text = secrets.reveal(pem)
    for key_class in (paramiko.Ed25519Key, paramiko.ECDSAKey,
                      paramiko.RSAKey):
        try:
            return key_class.from_private_key(io.StringIO(text))
        except (paramiko.SSHException, ValueError, TypeError, IndexError):
            continue
    raise exceptions.SSHError(
        node=node, step='connect',
        reason='the private key is not an unencrypted RSA, ECDSA or Ed25519 '
               'key in PEM or OpenSSH format')
