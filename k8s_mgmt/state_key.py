"""The key that seals each instance's shared state (:mod:`shared_state`).

One Fernet key (AES-128-CBC with HMAC-SHA256: what Tacker itself uses for
VIM passwords) in the file ``[k8s_mgmt] state_key_file`` names. Every
tacker-conductor host needs the same file, as it needs the same
``tacker.conf``: state sealed on one host is opened on another. The file is
the only place the key lives; it must be mode 0600 (or stricter) and
belong to the user the conductor runs as.

The key's id (the first 12 hex digits of its SHA-256) is stored beside the
sealed state, so a conductor holding another key says so, naming both ids,
instead of failing on the ciphertext.
"""

import hashlib
import os
import stat

from cryptography import fernet
from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import private_dirs

LOG = logging.getLogger(__name__)

KEY_ID_LENGTH = 12


class StateKeyError(exceptions.MgmtDriverError):
    message = 'state key %(path)s: %(problem)s'


class StateKey(object):
    """A loaded key: ``seal(bytes) -> str`` and ``open(str) -> bytes``."""

    def __init__(self, raw, path):
        try:
            self._fernet = fernet.Fernet(raw)
        except (ValueError, TypeError):
            raise StateKeyError(path=path, problem=(
                'is not a Fernet key (32 url-safe base64-encoded bytes); '
                'make one with "k8s-mgmt statekey create --file %s"'
                % path))
        self.path = path
        self.key_id = key_id(raw)

    def seal(self, data):
        return self._fernet.encrypt(data).decode('ascii')

    def open(self, token):
        """The bytes ``token`` seals; fernet.InvalidToken when it was
        sealed with another key or changed."""
        return self._fernet.decrypt(token.encode('ascii'))


def key_id(raw):
    if isinstance(raw, str):
        raw = raw.encode('ascii')
    return hashlib.sha256(raw.strip()).hexdigest()[:KEY_ID_LENGTH]


def configured_path():
    return conf.CONF.k8s_mgmt.state_key_file


def create(path):
    """Write a new key to ``path`` (0600; its missing directories 0700);
    never over an existing file. Returns the new key's id."""
    private_dirs.make_private_dirs(os.path.dirname(os.path.abspath(path)))
    raw = fernet.Fernet.generate_key()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise StateKeyError(path=path, problem=(
            'exists already; a new key would make every state sealed with '
            'it unreadable. Move it away first if that is what you want'))
    with os.fdopen(fd, 'wb') as handle:
        handle.write(raw + b'\n')
        handle.flush()
        os.fsync(handle.fileno())
    return key_id(raw)


def load(path=None):
    """The key in ``path`` (default: ``[k8s_mgmt] state_key_file``),
    checked private; StateKeyError when missing or open to others."""
    path = path or configured_path()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise StateKeyError(path=path, problem=(
            'does not exist. Every tacker-conductor host needs the same '
            'key: copy it from a host that has it, or for a first '
            'conductor make one with "k8s-mgmt statekey create --file %s"'
            % path))
    except OSError as err:
        raise StateKeyError(path=path, problem='cannot be read (%s)'
                            % err.strerror)
    with os.fdopen(fd, 'rb') as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise StateKeyError(path=path, problem='is not a regular file')
        if info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077:
            raise StateKeyError(path=path, problem=(
                'is mode %04o, owner uid %d: it must belong to uid %d and '
                'be readable by it alone (chmod 600)'
                % (stat.S_IMODE(info.st_mode), info.st_uid, os.geteuid())))
        raw = handle.read().strip()
    return StateKey(raw, path)


def load_or_create(path=None):
    """:func:`load`, making the key first when the file does not exist
    (with a WARNING: the other conductor hosts need a copy)."""
    path = path or configured_path()
    if not os.path.lexists(path):
        try:
            made = create(path)
        except StateKeyError:
            pass        # made meanwhile by another operation
        else:
            LOG.warning('Made a new state key %s (id %s) for the '
                        'instances\' shared state: copy it to every '
                        'tacker-conductor host, at the same path, before '
                        'they run operations', path, made)
    return load(path)
