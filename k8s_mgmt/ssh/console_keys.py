"""First contact verified: a new VM's host key against its console output.

cloud-init prints the fingerprints of the VM's SSH host keys (and the keys
themselves) to the serial console at the end of its first boot::

    -----BEGIN SSH HOST KEY FINGERPRINTS-----
    256 SHA256:Ad4...Q root@master-0 (ECDSA)
    -----END SSH HOST KEY FINGERPRINTS-----
    -----BEGIN SSH HOST KEY KEYS-----
    ecdsa-sha2-nistp256 AAAAE2Vj... root@master-0
    -----END SSH HOST KEY KEYS-----

(each line goes through ``logger -t ec2``, so a console shows it behind a
syslog prefix such as ``<14>Nov 23 11:02:03 ec2:``). Nova hands that console
out through the compute API (``os-getConsoleOutput``), over an authenticated
channel the network between the driver and the VM cannot touch. Before the
first SSH connection to a server that has no pin, the verifier polls its
console until cloud-init's block appears, and the key the VM offers is
pinned only when its fingerprint is listed there.

Where the cloud offers no console output (no compute endpoint, or the action
answers 403/404/501), the verifier falls back to trust on first use and
says so at WARNING, naming the VM and why.
"""

import base64
import dataclasses
import hashlib
import re
import threading
import time

from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import polling
from k8s_mgmt.ssh import hostkeys

LOG = logging.getLogger(__name__)

FINGERPRINTS = 'SSH HOST KEY FINGERPRINTS'
KEYS = 'SSH HOST KEY KEYS'
# Statuses of os-getConsoleOutput that mean "this cloud (or this server)
# has no console output to offer": Nova answers 404 when the console log is
# not available, 501 when the hypervisor driver does not implement it; 403
# when policy forbids it. 409 means the instance cannot give one in its
# current state (still building, rebuilding): that passes, so it is read
# again until the deadline rather than taken as a reason to trust blindly.
UNAVAILABLE_STATUSES = (403, 404, 501)
NOT_YET_STATUSES = (409,)
_FIRST_DELAY = 1.0
_MAX_DELAY = 15.0

_SHA256_LINE = re.compile(r'\b\d+\s+(SHA256:[A-Za-z0-9+/]{43})\b')
_MD5_LINE = re.compile(r'\b\d+\s+(?:MD5:)?((?:[0-9a-f]{2}:){15}[0-9a-f]{2})\b')
_KEY_LINE = re.compile(
    r'\b((?:ssh|ecdsa|sk)-[A-Za-z0-9@.-]+)\s+(AAAA[A-Za-z0-9+/]+={0,3})')


class ConsoleKeyMismatch(exceptions.SSHError):
    """The VM offers a key its own console does not list: refuse."""

    message = ('%(node)s: %(step)s: host key %(offered)s offered by server '
               '%(server_id)s is not among the fingerprints cloud-init '
               'printed to its console (%(listed)s): possible '
               'man-in-the-middle; refusing to connect (nothing was sent to '
               'it). Check the VM\'s console and network')


class ConsoleKeysMissing(exceptions.SSHError):
    message = ('%(node)s: %(step)s: %(reason)s. Where the image prints no '
               'fingerprints, use host_key_policy = tofu or pre-load the '
               'key with "k8s-mgmt hostkeys add"')


class ConsoleUnavailable(Exception):
    """This cloud offers no console output for the server (why: str)."""


class ConsoleNotReady(Exception):
    """The server cannot give its console output yet: read it again."""


@dataclasses.dataclass(frozen=True)
class ConsoleKeys(object):
    """What cloud-init's last complete blocks on a console list."""

    sha256: frozenset = frozenset()
    md5: frozenset = frozenset()
    keys: frozenset = frozenset()      # (key type, base64 blob)

    @property
    def found(self):
        return bool(self.sha256 or self.md5 or self.keys)

    def listed(self):
        """Every listed key as ``SHA256:...`` (what an error shows)."""
        prints = set(self.sha256)
        for _, blob in self.keys:
            prints.add(_sha256(base64.b64decode(blob)))
        prints = sorted(prints) or ['MD5 %s' % m for m in sorted(self.md5)]
        return ', '.join(prints)

    def matches(self, key):
        blob = key.asbytes()
        return (_sha256(blob) in self.sha256 or
                _md5(blob) in self.md5 or
                (key.get_name(), key.get_base64()) in self.keys)


def _sha256(blob):
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode('ascii')
    return 'SHA256:' + digest.rstrip('=')


def _md5(blob):
    digest = hashlib.md5(blob, usedforsecurity=False).hexdigest()
    return ':'.join(digest[i:i + 2] for i in range(0, 32, 2))


def _last_block(lines, title):
    """Lines of the last complete BEGIN/END ``title`` block, or None."""
    begin, end = '-----BEGIN %s-----' % title, '-----END %s-----' % title
    block, current = None, None
    for line in lines:
        if begin in line:
            current = []
        elif end in line:
            if current is not None:
                block = current
            current = None
        elif current is not None:
            current.append(line)
    return block


def parse_console(text):
    """The host keys cloud-init's blocks list in console ``text``.

    Uses the last complete block of each kind (a rebooted VM prints them
    again); a block still being printed (no END line yet) is ignored.
    Lines between that match no key line (kernel messages interleaved on a
    serial console) are skipped.
    """
    lines = (text or '').replace('\r', '').split('\n')
    sha256, md5, keys = set(), set(), set()
    for line in _last_block(lines, FINGERPRINTS) or ():
        match = _SHA256_LINE.search(line)
        if match:
            sha256.add(match.group(1))
            continue
        match = _MD5_LINE.search(line)
        if match:
            md5.add(match.group(1))
    for line in _last_block(lines, KEYS) or ():
        match = _KEY_LINE.search(line)
        if match:
            try:
                base64.b64decode(match.group(2), validate=True)
            except ValueError:
                continue
            keys.add((match.group(1), match.group(2)))
    return ConsoleKeys(frozenset(sha256), frozenset(md5), frozenset(keys))


def fetch_console(session, server_id, region_name=None, interface=None):
    """The server's console output (str) through the compute API.

    Raises ConsoleUnavailable when the cloud has none to offer, or a
    keystoneauth error for a failure worth retrying.
    """
    endpoint_filter = {'service_type': 'compute',
                       'interface': interface or 'public'}
    if region_name:
        endpoint_filter['region_name'] = region_name
    try:
        response = session.post(
            '/servers/%s/action' % server_id,
            endpoint_filter=endpoint_filter, raise_exc=False,
            # -1: the whole log (Nova's drivers cap it, libvirt at 100 KiB);
            # the block may be followed by later boot output.
            json={'os-getConsoleOutput': {'length': -1}},
            timeout=conf.CONF.k8s_mgmt.api_timeout)
    except ks_exc.EndpointNotFound:
        raise ConsoleUnavailable('the service catalog has no compute '
                                 'endpoint')
    if response.status_code in UNAVAILABLE_STATUSES:
        raise ConsoleUnavailable(
            'the compute API answered os-getConsoleOutput with %d %s'
            % (response.status_code, _nova_message(response)))
    if response.status_code in NOT_YET_STATUSES:
        raise ConsoleNotReady('the compute API answered os-getConsoleOutput '
                              'with %d %s' % (response.status_code,
                                              _nova_message(response)))
    if response.status_code != 200:
        raise ks_exc.from_response(response, 'POST',
                                   '/servers/%s/action' % server_id)
    try:
        output = response.json().get('output')
    except (ValueError, AttributeError):
        output = None
    if not isinstance(output, str):
        raise ConsoleUnavailable('the compute API answered '
                                 'os-getConsoleOutput without an "output"')
    return output


def _nova_message(response):
    try:
        body = response.json()
        detail = next(iter(body.values()))
        return '(%s)' % str(detail.get('message'))[:200]
    except Exception:  # any body at all: the status says enough
        return ''


class FirstContactVerifier(object):
    """Console verification for the unpinned servers of one operation.

    ``session_source()`` returns ``(keystoneauth session, region_name)``;
    it is called at most once, and only when some server has no pin.
    Sessions of one operation share the verifier; each server's console is
    read by the session connecting to it, so nodes are verified in
    parallel, and at most once per operation.
    """

    def __init__(self, session_source, deadline=None, interface=None,
                 clock=time.monotonic, sleep=time.sleep):
        self._session_source = session_source
        self._source = None
        self._source_lock = threading.Lock()
        self.deadline = deadline or conf.CONF.k8s_mgmt.console_key_deadline
        self.interface = interface
        self._clock = clock
        self._sleep = sleep
        self._results = {}           # server id -> ConsoleKeys or str
        self._locks = {}
        self._locks_guard = threading.Lock()

    def checker(self, server_id, node):
        """``verify(key) -> verified`` for a first contact with a server.

        Reads the console first (polling until cloud-init's block appears
        or the deadline passes), so the SSH handshake itself never waits.
        """
        expected = self._expected(server_id, node)

        def verify(key):
            if isinstance(expected, str):
                LOG.warning('%(node)s: cannot verify the host key of server '
                            '%(id)s against its console (%(why)s); trusting '
                            'it on first use',
                            {'node': node, 'id': server_id, 'why': expected})
                return hostkeys.VERIFIED_TOFU
            if not expected.matches(key):
                raise ConsoleKeyMismatch(
                    node=node, step='connect', server_id=server_id,
                    offered='%s %s' % (key.get_name(),
                                       hostkeys.fingerprint(key)),
                    listed=expected.listed())
            return hostkeys.VERIFIED_CONSOLE
        return verify

    def _expected(self, server_id, node):
        if not server_id:
            return 'no Nova server id is known for it'
        with self._locks_guard:
            lock = self._locks.setdefault(server_id, threading.Lock())
        with lock:
            if server_id not in self._results:
                self._results[server_id] = self._poll(server_id, node)
            return self._results[server_id]

    def _session(self):
        with self._source_lock:
            if self._source is None:
                self._source = self._session_source()
            return self._source

    def _poll(self, server_id, node):
        """ConsoleKeys once listed, a reason (str) when unavailable."""
        poll = polling.Poll(self.deadline, first=_FIRST_DELAY,
                            maximum=_MAX_DELAY, jitter=False,
                            clock=self._clock, sleep=self._sleep)
        last = 'no console output yet'
        for reads in poll:
            try:
                session, region = self._session()
                text = fetch_console(session, server_id, region,
                                     self.interface)
            except ConsoleUnavailable as err:
                return str(err)
            except (ConsoleNotReady, ks_exc.ClientException, OSError) as err:
                last = 'reading it failed: %s: %s' % (type(err).__name__,
                                                      err)
            else:
                found = parse_console(text)
                if found.found:
                    LOG.debug('%(node)s: console of server %(id)s lists '
                              '%(keys)s (read %(n)d time(s))',
                              {'node': node, 'id': server_id,
                               'keys': found.listed(), 'n': reads})
                    return found
                last = ('%d characters of console output, no complete '
                        '%s block' % (len(text), FINGERPRINTS))
        raise ConsoleKeysMissing(
            node=node, step='connect',
            reason='no host key fingerprints on the console of '
                   'server %s within %.0f s (%d reads; last: %s)'
                   % (server_id, self.deadline, poll.attempts, last))
