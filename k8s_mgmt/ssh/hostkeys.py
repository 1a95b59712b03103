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
from k8s_mgmt import private_dirs
from k8s_mgmt import state_watch

LOG = logging.getLogger(__name__)

POLICY_CONSOLE = 'console'
POLICY_TOFU = 'tofu'
POLICY_STRICT = 'strict'
POLICIES = (POLICY_CONSOLE, POLICY_TOFU, POLICY_STRICT)

# How a pin came to be, recorded in its entry as ``verified``.
VERIFIED_CONSOLE = 'console'    # matched the console's fingerprints
VERIFIED_TOFU = 'tofu'          # accepted on first use
VERIFIED_MANUAL = 'manual'      # added by an operator (k8s-mgmt hostkeys)
VERIFIED_FINGERPRINT = 'fingerprint'  # matched one the request gave

_FORMAT_VERSION = 1
_REQUIRED_FIELDS = ('key_type', 'key')
_locks = {}
_locks_guard = threading.Lock()


class HostKeyFileError(exceptions.MgmtDriverError):
    message = ('host key file %(path)s %(problem)s; fix it or move it away '
               '(every pin in it is then lost: first contact is verified '
               'again)')


class PinExists(exceptions.MgmtDriverError):
    message = ('%(path)s already pins another key for server %(server_id)s '
               '(%(key_type)s %(fingerprint)s); add --replace to replace it')


class HostKeyNotPinned(exceptions.SSHError):
    message = ('%(node)s: %(step)s: host key %(offered)s of server '
               '%(server_id)s is not pinned in %(pin_file)s and '
               'host_key_policy is strict; refusing to connect. Pre-load it '
               'after checking it out of band: k8s-mgmt hostkeys add '
               '%(server_id)s --key \'<type> <base64>\' --file %(pin_file)s')


def validate_document(data, path):
    """The ``keys`` dict of a parsed pin file, or HostKeyFileError."""
    def bad(problem):
        return HostKeyFileError(path=path, problem=problem)

    if not isinstance(data, dict):
        raise bad('holds a JSON %s, not an object with "version" and "keys"'
                  % type(data).__name__)
    keys = data.get('keys')
    if not isinstance(keys, dict):
        raise bad('has "keys" of type %s; it must be an object of server id '
                  '-> pin' % type(keys).__name__)
    if data.get('version') != _FORMAT_VERSION:
        raise bad('has version %r; this k8s-mgmt reads version %d'
                  % (data.get('version'), _FORMAT_VERSION))
    for key_id, entry in keys.items():
        if not isinstance(entry, dict):
            raise bad('has pin %r of type %s, not an object'
                      % (key_id, type(entry).__name__))
        missing = [f for f in _REQUIRED_FIELDS
                   if not isinstance(entry.get(f), str) or not entry.get(f)]
        if missing:
            raise bad('has pin %r without %s' % (key_id, ' and '.join(
                '"%s"' % f for f in missing)))
        try:
            base64.b64decode(entry['key'], validate=True)
        except ValueError:
            raise bad('has pin %r whose "key" is not base64' % key_id)
    return dict(keys)


def entry_fingerprint(entry):
    """``SHA256:...`` of a pin entry, computed from its key."""
    digest = hashlib.sha256(base64.b64decode(entry['key'])).digest()
    return 'SHA256:' + base64.b64encode(digest).decode('ascii').rstrip('=')


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
        private_dirs.make_private_dirs(directory)
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
                text = f.read()
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as err:
            raise HostKeyFileError(path=self.path,
                                   problem='cannot be read (%s)' % err)
        # A damaged pin file must never read as "no pins": that would
        # accept any key. Refuse until an operator fixes it.
        try:
            data = json.loads(text)
        except ValueError as err:
            raise HostKeyFileError(path=self.path,
                                   problem='is not valid JSON (%s)' % err)
        return validate_document(data, self.path)

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
        # An instance's own pin file is shared between conductors.
        state_watch.changed(self.path)

    def get(self, key_id):
        """The pin entry (a dict) for ``key_id``, or None."""
        with self._locked():
            return self._read().get(key_id)

    def all(self):
        with self._locked():
            return self._read()

    def add(self, key_id, key_type, key_base64, node=None, address=None,
            replace=False, verified=VERIFIED_MANUAL):
        """Pin a key an operator checked out of band (``hostkeys add``).

        Refuses to overwrite a different existing pin unless ``replace``.
        Returns the new entry.
        """
        entry = _entry(node, address, key_type, key_base64, verified)
        with self._locked():
            keys = self._read()
            old = keys.get(key_id)
            if old is not None and not replace and not (
                    old['key_type'] == key_type and
                    old['key'] == key_base64):
                raise PinExists(path=self.path, server_id=key_id,
                                key_type=old['key_type'],
                                fingerprint=entry_fingerprint(old))
            if old is not None and node is None:
                entry['node'] = old.get('node')
                entry['address'] = entry['address'] or old.get('address')
            keys[key_id] = entry
            self._write(keys)
        return entry

    def check(self, key_id, key, node, policy=POLICY_TOFU, address=None,
              verify=None):
        """Accept ``key`` for ``key_id`` or raise; pin it when policy allows.

        ``verify(key)`` (policy console) checks a first-contact key against
        the console's fingerprints: it returns how the key was verified
        (``console``, or ``tofu`` when the cloud offered no console output)
        or raises. Returns True when a new pin was written.
        """
        if policy not in POLICIES:
            raise ValueError('unknown host key policy %r' % policy)
        offered = fingerprint(key)
        with self._locked():
            keys = self._read()
            entry = keys.get(key_id)
            if entry is not None:
                return self._same_or_refuse(key_id, entry, key, node)
            if policy == POLICY_STRICT:
                raise HostKeyNotPinned(node=node, step='connect',
                                       offered=offered, server_id=key_id,
                                       pin_file=self.path)
        # The verifier only compares with fingerprints it already holds
        # (fetched before connecting): no I/O while the file is locked.
        verified = VERIFIED_TOFU
        if policy == POLICY_CONSOLE and verify is not None:
            verified = verify(key)
        elif policy == POLICY_CONSOLE:
            LOG.warning('%(node)s: no compute API to read the console of '
                        'server %(id)s from; trusting its host key on first '
                        'use', {'node': node, 'id': key_id})
        with self._locked():
            keys = self._read()
            if key_id in keys:
                # Pinned meanwhile (another session): compare with that.
                return self._same_or_refuse(key_id, keys[key_id], key,
                                            node)
            keys[key_id] = _entry(node, address, key.get_name(),
                                  key.get_base64(), verified)
            self._write(keys)
        if verified == VERIFIED_CONSOLE:
            LOG.info('%(node)s: pinned host key %(fp)s of server %(id)s, '
                     'verified against its console output',
                     {'node': node, 'fp': offered, 'id': key_id})
        elif verified == VERIFIED_FINGERPRINT:
            LOG.info('%(node)s: pinned host key %(fp)s of server %(id)s, '
                     'verified against the fingerprint given for it',
                     {'node': node, 'fp': offered, 'id': key_id})
        else:
            LOG.warning('%(node)s: pinned host key %(fp)s of server %(id)s '
                        'on first use, unverified (host_key_policy %(p)s)',
                        {'node': node, 'fp': offered, 'id': key_id,
                         'p': policy})
        return True

    def _same_or_refuse(self, key_id, entry, key, node):
        """False when ``key`` is the pinned one, else HostKeyMismatch."""
        if (entry['key_type'] == key.get_name()
                and entry['key'] == key.get_base64()):
            return False
        if entry['key_type'] != key.get_name():
            change = ('the VM now offers a %s key where a %s key is pinned'
                      % (key.get_name(), entry['key_type']))
        else:
            change = 'the VM offers a different %s key' % key.get_name()
        raise exceptions.HostKeyMismatch(
            node=node, step='connect', server_id=key_id, change=change,
            pinned=entry_fingerprint(entry), offered=fingerprint(key),
            pin_file=self.path)

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


def _entry(node, address, key_type, key_base64, verified):
    return {
        'node': node,
        'address': address,
        'key_type': key_type,
        'key': key_base64,
        'fingerprint': entry_fingerprint({'key': key_base64}),
        'verified': verified,
        'pinned_at': datetime.datetime.now(
            datetime.timezone.utc).isoformat(timespec='seconds'),
    }


class PinningPolicy(paramiko.MissingHostKeyPolicy):
    """paramiko policy that checks every offered key against the store.

    The session never loads host keys into the client, so paramiko asks this
    policy about every connection, before any credential is sent.
    """

    def __init__(self, store, key_id, node, policy=POLICY_TOFU, address=None,
                 verify=None):
        self.store = store
        self.key_id = key_id
        self.node = node
        self.policy = policy
        self.address = address
        self.verify = verify

    def missing_host_key(self, client, hostname, key):
        self.store.check(self.key_id, key, self.node, policy=self.policy,
                         address=self.address, verify=self.verify)
