"""Pinned SSH host keys of the cluster VMs.

Pins are keyed by the VM's Nova server id, not its address: a healed VM gets a
new server id (and a new key) and may reuse the old IP, so an address-keyed
pin would either refuse a legitimate heal or silently accept any key. Where no
server id is known, ``host:port`` is the key.

The pin file is JSON, mode 0600, replaced atomically (write a temp file in the
same directory, fsync, rename). Concurrent threads share one lock per file and
concurrent processes (two conductors, the CLI) take an ``flock`` on a side
file, so pins made in parallel by one step are never lost.
"""

import base64
import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import tempfile
import threading

import paramiko
from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import exceptions

LOG = logging.getLogger(__name__)

POLICY_CONSOLE = 'console'
POLICY_TOFU = 'tofu'
POLICY_STRICT = 'strict'
POLICIES = (POLICY_CONSOLE, POLICY_TOFU, POLICY_STRICT)

_FORMAT_VERSION = 1
_locks = {}
_locks_guard = threading.Lock()


def fingerprint(key):
    """OpenSSH-style ``SHA256:<base64>`` fingerprint of a paramiko key."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return 'SHA256:' + base64.b64encode(digest).decode('ascii').rstrip('=')


def pin_id(server_id, host, port):
    """The key a target is pinned under: its server id, else host:port."""
    if server_id:
        return str(server_id)
    return '%s:%s' % (host, port)


def default_path():
    opts = conf.CONF.k8s_mgmt
    if opts.host_key_file:
        return opts.host_key_file
    return os.path.join(opts.state_dir, 'host_keys.json')


def _thread_lock(path):
    with _locks_guard:
        if path not in _locks:
            _locks[path] = threading.Lock()
        return _locks[path]


class HostKeyStore(object):
    """A JSON file of pinned host keys, safe for threads and processes."""

    def __init__(self, path=None):
        self.path = os.path.abspath(path or default_path())

    @contextlib.contextmanager
    def _locked(self):
        directory = os.path.dirname(self.path)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        with _thread_lock(self.path):
            fd = os.open(self.path + '.lock', os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # closing releases the flock

    def _read(self):
        try:
            with open(self.path, encoding='utf-8') as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        except ValueError as err:
            # A corrupt pin file must not be treated as "no pins": that
            # would accept any key. Refuse until an operator fixes it.
            raise exceptions.MgmtDriverError(
                error_message='host key file %s is not valid JSON (%s); '
                              'fix or remove it' % (self.path, err))
        return dict(data.get('keys', {}))

    def _write(self, keys):
        directory = os.path.dirname(self.path)
        fd, tmp = tempfile.mkstemp(prefix='.host_keys.', dir=directory)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, 'w', encoding='utf-8') as f:
                json.dump({'version': _FORMAT_VERSION, 'keys': keys}, f,
                          indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def get(self, key_id):
        """The pin entry (a dict) for ``key_id``, or None."""
        with self._locked():
            return self._read().get(key_id)

    def all(self):
        with self._locked():
            return self._read()

    def check(self, key_id, key, node, policy=POLICY_TOFU, address=None):
        """Accept ``key`` for ``key_id`` or raise; pin it when policy allows.

        Returns True when a new pin was written.
        """
        if policy not in POLICIES:
            raise ValueError('unknown host key policy %r' % policy)
        offered = fingerprint(key)
        with self._locked():
            keys = self._read()
            entry = keys.get(key_id)
            if entry is not None:
                if (entry['key_type'] == key.get_name()
                        and entry['key'] == key.get_base64()):
                    return False
                raise exceptions.HostKeyMismatch(
                    node=node, step='connect', server_id=key_id,
                    pinned=entry.get('fingerprint'), offered=offered,
                    pin_file=self.path)
            if policy == POLICY_STRICT:
                raise exceptions.SSHError(
                    node=node, step='connect',
                    reason='host key %s of server %s is not pinned in %s and '
                           'host_key_policy is strict; refusing to connect'
                           % (offered, key_id, self.path))
            keys[key_id] = {
                'node': node,
                'address': address,
                'key_type': key.get_name(),
                'key': key.get_base64(),
                'fingerprint': offered,
                'pinned_at': datetime.datetime.now(
                    datetime.timezone.utc).isoformat(timespec='seconds'),
            }
            self._write(keys)
        LOG.info('%(node)s: pinned host key %(fp)s for server %(id)s',
                 {'node': node, 'fp': offered, 'id': key_id})
        return True

    def forget(self, server_id):
        """Drop the pin of one server (it was terminated or healed)."""
        return self.forget_many([server_id])

    def forget_many(self, server_ids):
        """Drop the pins of several servers; returns how many existed."""
        wanted = {str(s) for s in server_ids if s}
        with self._locked():
            keys = self._read()
            gone = [k for k in wanted if k in keys]
            if gone:
                for k in gone:
                    del keys[k]
                self._write(keys)
        if gone:
            LOG.info('forgot host key pins of %s', ', '.join(sorted(gone)))
        return len(gone)


class PinningPolicy(paramiko.MissingHostKeyPolicy):
    """paramiko policy that checks every offered key against the store.

    The session never loads host keys into the client, so paramiko asks this
    policy about every connection, before any credential is sent.
    """

    def __init__(self, store, key_id, node, policy=POLICY_TOFU, address=None):
        self.store = store
        self.key_id = key_id
        self.node = node
        self.policy = policy
        self.address = address

    def missing_host_key(self, client, hostname, key):
        self.store.check(self.key_id, key, self.node, policy=self.policy,
                         address=self.address)
