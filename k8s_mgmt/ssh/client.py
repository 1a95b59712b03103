"""One SSH connection per node per operation: connect, run, upload.

:class:`SSHSession` opens one paramiko connection to a node and reuses it for
every command and SFTP upload of an operation. Connecting retries with
jittered exponential backoff (:class:`~k8s_mgmt.polling.Poll`) while a VM
boots, but an authentication failure stops at once (retrying a wrong
password only delays the error). Success of a command is its exit status
alone: tools print warnings on stderr and still succeed. Uploads go through
:mod:`k8s_mgmt.ssh.upload`; the paramiko channel helpers (bounded request
replies, signals) are in :mod:`k8s_mgmt.ssh.channel`.
"""

import socket
import time
import uuid

import paramiko
from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import polling
from k8s_mgmt import secrets
from k8s_mgmt.ssh import channel as channel_mod
from k8s_mgmt.ssh import command as command_mod
from k8s_mgmt.ssh import hostkeys
from k8s_mgmt.ssh import upload
from k8s_mgmt.ssh.target import Result
from k8s_mgmt.ssh.target import SSHTarget  # noqa: F401 (re-exported)
from k8s_mgmt.ssh.target import load_private_key

LOG = logging.getLogger(__name__)

STDERR_TAIL_LINES = 20
_STDERR_TAIL_CHARS = 4000
_BACKOFF_FIRST = 0.25
_BACKOFF_MAX = 10.0
# Upper bound of one wait for channel activity; the wait ends earlier on
# output, EOF or exit status. It only bounds how late a lone exit status
# (no EOF) is noticed.
_CHANNEL_WAIT_MAX = 1.0
_RETRYABLE = (OSError, EOFError, paramiko.SSHException)


def stderr_tail(text, extra=(), lines=STDERR_TAIL_LINES):
    """The last ``lines`` lines of ``text``, redacted, for an error."""
    tail = '\n'.join(text.rstrip('\n').splitlines()[-lines:])
    if len(tail) > _STDERR_TAIL_CHARS:
        tail = '...' + tail[-_STDERR_TAIL_CHARS:]
    return secrets.redact(tail, extra=extra) if tail else '(no stderr output)'


class SSHSession(object):
    """One connection to one node, used as a context manager."""

    def __init__(self, target, store=None, policy=None, connect_deadline=None,
                 connect_timeout=None, command_timeout=None,
                 first_contact=None):
        opts = conf.CONF.k8s_mgmt
        self.target = target
        self.store = store if store is not None else hostkeys.HostKeyStore()
        self.policy = policy or opts.host_key_policy
        self.connect_deadline = connect_deadline or opts.connect_deadline
        self.connect_timeout = connect_timeout or opts.connect_timeout
        self.command_timeout = command_timeout or opts.command_timeout
        self.pin_id = hostkeys.pin_id(target.server_id, target.host,
                                      target.port)
        # console_keys.FirstContactVerifier (policy console), or None.
        self.first_contact = first_contact
        self._verify = None
        self._client = None
        self._accepted_key = None
        self._uploads = upload.SFTPUploads(self)
        self.attempts = 0

    @property
    def node(self):
        return self.target.name

    def __enter__(self):
        self.connect()
        return self

    def __exit__(self, *exc_info):
        self.close()

    # Connecting ------------------------------------------------------------

    def connect(self):
        """Connect, retrying transient failures until the deadline."""
        if self._client is not None:
            return
        self._verify = self._first_contact_check()
        last_error = None

        def retrying(delay):
            LOG.debug('%(node)s: connect attempt %(n)d to %(addr)s failed '
                      '(%(err)s); retrying in %(delay).1f s',
                      {'node': self.node, 'n': self.attempts,
                       'addr': self.target.address,
                       'err': secrets.redact(last_error), 'delay': delay})

        poll = polling.Poll(self.connect_deadline, first=_BACKOFF_FIRST,
                            maximum=_BACKOFF_MAX, on_wait=retrying)
        for attempt in poll:
            self.attempts = attempt
            attempt_timeout = min(self.connect_timeout,
                                  max(poll.remaining(), 0.1))
            try:
                self._client = self._connect_once(attempt_timeout)
                return
            except paramiko.AuthenticationException as err:
                raise exceptions.SSHAuthError(
                    node=self.node, step='connect',
                    user=self.target.username,
                    reason='%s at %s' % (err, self.target.address))
            except _RETRYABLE as err:
                last_error = _describe(err)
        raise exceptions.SSHError(
            node=self.node, step='connect',
            reason='no SSH connection to %s within %.0f s '
                   '(%d attempts); last error: %s'
            % (self.target.address, self.connect_deadline,
               self.attempts, last_error))

    def _connect_once(self, timeout):
        client = paramiko.SSHClient()
        # No known_hosts is loaded, so paramiko consults the pinning policy
        # for every key, before any credential is sent.
        client.set_missing_host_key_policy(hostkeys.PinningPolicy(
            self.store, self.pin_id, self.node, self.policy,
            self.target.address, verify=self._verify))
        pkey = None
        if self.target.private_key:
            pkey = load_private_key(self.target.private_key, self.node)
        password = secrets.reveal(self.target.password)
        try:
            client.connect(self.target.host, port=self.target.port,
                           username=self.target.username, password=password,
                           pkey=pkey, timeout=timeout, banner_timeout=timeout,
                           auth_timeout=timeout, look_for_keys=False,
                           allow_agent=False)
            # Verify the key the transport holds now, whatever path
            # paramiko took to accept it: paramiko takes any host key a
            # server signs with in a re-exchange (e.g. one started during
            # authentication) without asking the policy again.
            negotiated = client.get_transport().get_remote_server_key()
            self.store.check(self.pin_id, negotiated, self.node,
                             policy=self.policy, address=self.target.address,
                             verify=self._verify)
            self._accepted_key = negotiated
        except BaseException:
            client.close()
            raise
        LOG.debug('%(node)s: connected to %(addr)s as %(user)s',
                  {'node': self.node, 'addr': self.target.address,
                   'user': self.target.username})
        return client

    def _first_contact_check(self):
        """``verify(key)`` for a server without a pin (policy console),
        its console read before connecting; else None."""
        if (self.first_contact is None or
                self.policy != hostkeys.POLICY_CONSOLE or
                self.store.get(self.pin_id) is not None):
            return None
        return self.first_contact.checker(self.target.server_id, self.node)

    def _transport(self, step):
        transport = self._client and self._client.get_transport()
        if transport is None or not transport.is_active():
            raise exceptions.SSHError(node=self.node, step=step,
                                      reason='not connected')
        # paramiko takes whatever host key signs a later key re-exchange
        # without asking the policy: before each channel, the key in use
        # must still be the one accepted at connect.
        current = transport.get_remote_server_key()
        accepted = self._accepted_key
        if (current.get_name(), current.asbytes()) != (
                accepted.get_name(), accepted.asbytes()):
            self.close()
            raise exceptions.HostKeyMismatch(
                node=self.node, step=step, server_id=self.pin_id,
                change='a key re-exchange after connect switched to a '
                       'different %s key' % current.get_name(),
                pinned=hostkeys.fingerprint(accepted),
                offered=hostkeys.fingerprint(current),
                pin_file=self.store.path)
        return transport

    def alive(self):
        """Whether the connection is still up (no command is run)."""
        transport = self._client and self._client.get_transport()
        return transport is not None and transport.is_active()

    def keep_alive(self, interval):
        """Send an SSH keepalive every ``interval`` seconds while the
        session waits unused (0: none)."""
        transport = self._client and self._client.get_transport()
        if transport is not None:
            transport.set_keepalive(int(interval))

    def close(self):
        self._uploads.close()
        if self._client is not None:
            self._client.close()
            self._client = None

    # Running commands ------------------------------------------------------

    def run(self, cmd, step='run', timeout=None, check=True, stdin=None,
            on_line=None):
        """Run ``cmd`` (a Command) and return a :class:`Result`.

        ``stdin`` (bytes, str or Secret) is written to the command's stdin,
        which is the way to hand over secrets: argv shows in ``ps``.
        Raises RemoteCommandError on a nonzero exit when ``check``,
        CommandTimeout after ``timeout`` seconds, SSHTimeout when the server
        does not answer the channel open or the exec request within
        connect_timeout (or ``timeout``, when shorter).
        ``on_line(text)``, when given, is called with each line of stdout
        (without its newline, decoded as UTF-8) as soon as it arrives; the
        Result still holds the whole output.
        """
        if not isinstance(cmd, command_mod.ShellCommand):
            raise TypeError('run() takes a Command, not %s'
                            % type(cmd).__name__)
        timeout = timeout or self.command_timeout
        extra = cmd.secrets()
        if isinstance(stdin, secrets.Secret):
            extra.append(stdin)
        LOG.debug('%(node)s %(step)s: running %(cmd)s',
                  {'node': self.node, 'step': step, 'cmd': cmd.display()})
        started = time.monotonic()
        deadline = started + timeout
        channel = self.open_channel(step, deadline, 'channel open')
        try:
            self._exec(channel, cmd.render(), step, deadline)
            self._send_stdin(channel, stdin, deadline, step, timeout)
            lines = channel_mod.LineSplitter(on_line)
            out, err, status = self._collect(channel, deadline, step,
                                             timeout, lines)
        except exceptions.CommandTimeout:
            # TERM, not KILL: sudo relays TERM to the command it runs,
            # while a KILL would end sudo alone and orphan the command.
            channel_mod.send_signal(channel, 'TERM')
            raise
        finally:
            channel.close()
        result = Result(status, out.decode('utf-8', 'replace'),
                        err.decode('utf-8', 'replace'),
                        time.monotonic() - started)
        LOG.debug('%(node)s %(step)s: exit status %(status)d in %(secs).1f s',
                  {'node': self.node, 'step': step, 'status': status,
                   'secs': result.seconds})
        if status == -1 and not channel.get_transport().is_active():
            raise exceptions.SSHError(
                node=self.node, step=step,
                reason='connection lost while running %s' % cmd.display())
        if check and status != 0:
            error = exceptions.RemoteCommandError(
                node=self.node, step=step, status=status,
                stderr=stderr_tail(result.stderr, extra))
            error.result = result
            raise error
        return result

    def answer_limit(self, deadline):
        """Seconds to wait for the server to answer one protocol request
        (channel open, exec, subsystem): it answers at once when alive."""
        return max(min(self.connect_timeout, deadline - time.monotonic()),
                   0.01)

    def open_channel(self, step, deadline, what):
        transport = self._transport(step)
        limit = self.answer_limit(deadline)
        asked = time.monotonic()
        try:
            return transport.open_session(timeout=limit)
        except (paramiko.SSHException, OSError, EOFError) as err:
            if time.monotonic() - asked >= limit:
                raise exceptions.SSHTimeout(node=self.node, step=step,
                                            what=what, timeout=limit)
            raise exceptions.SSHError(node=self.node, step=step,
                                      reason='cannot open a channel: %s' % err)

    def _exec(self, channel, command, step, deadline):
        """Send the exec request; paramiko waits for its reply unbounded."""
        limit = self.answer_limit(deadline)
        with channel_mod.Watchdog(channel, limit) as watchdog:
            try:
                channel.exec_command(command)
            except (paramiko.SSHException, OSError, EOFError) as err:
                if not watchdog.fired:
                    raise exceptions.SSHError(
                        node=self.node, step=step,
                        reason='exec request refused: %s' % err)
        if watchdog.fired:
            raise exceptions.SSHTimeout(
                node=self.node, step=step, timeout=limit,
                what='exec request (the server never started the command)')

    def _send_stdin(self, channel, stdin, deadline, step, timeout):
        if stdin is not None:
            data = secrets.reveal(stdin)
            if isinstance(data, str):
                data = data.encode('utf-8')
            channel.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                channel.sendall(data)
            except socket.timeout:
                raise exceptions.CommandTimeout(node=self.node, step=step,
                                                timeout=timeout)
            except OSError:
                # The command ended without reading all of its stdin; its
                # exit status, collected next, says whether that is fine.
                return
        # EOF on stdin either way, so a command that reads stdin ends.
        channel.shutdown_write()

    def _collect(self, channel, deadline, step, timeout, lines):
        out, err = bytearray(), bytearray()
        while True:
            got = False
            while channel.recv_ready():
                chunk = channel.recv(65536)
                out += chunk
                lines.feed(chunk)
                got = True
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(65536)
                got = True
            if channel.exit_status_ready() and (channel.eof_received or
                                                channel.closed):
                if not (channel.recv_ready() or channel.recv_stderr_ready()):
                    lines.finish()
                    return out, err, channel.recv_exit_status()
                continue
            if channel.closed:
                lines.finish()
                return out, err, channel.recv_exit_status()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise exceptions.CommandTimeout(node=self.node, step=step,
                                                timeout=timeout)
            if not got:
                channel_mod.wait_for_activity(
                    channel, min(remaining, _CHANNEL_WAIT_MAX))

    # Uploading -------------------------------------------------------------

    def put(self, source, remote_path, mode=0o644, step='upload',
            sudo=False, timeout=None):
        """Upload bytes, a Secret, or a local file (path) to ``remote_path``.

        The file is written to a temporary name beside the target, given
        ``mode`` before any content is written, then renamed into place. With
        ``sudo`` the content goes to a private temp file first and root
        installs it (for targets the login user cannot write). The whole
        upload ends within ``timeout`` seconds (default command_timeout):
        SFTP start and each SFTP request wait no longer than that deadline.
        """
        data = upload.read_source(source)
        timeout = timeout or self.command_timeout
        deadline = time.monotonic() + timeout
        LOG.debug('%(node)s %(step)s: upload %(n)d bytes to %(path)s '
                  '(mode %(mode)04o%(sudo)s)',
                  {'node': self.node, 'step': step, 'n': len(data),
                   'path': remote_path, 'mode': mode,
                   'sudo': ', sudo' if sudo else ''})
        suffix = '.k8s-mgmt-%s' % uuid.uuid4().hex[:12]
        if not sudo:
            self._uploads.write_and_rename(data, remote_path,
                                           remote_path + suffix, mode, step,
                                           deadline)
            return
        staging = '/tmp/%s' % suffix.lstrip('.')
        self._uploads.write_and_rename(data, staging, staging + '.part',
                                       0o600, step, deadline)
        target_tmp = remote_path + suffix
        install = command_mod.Command(
            'install', '-m', '%04o' % mode, staging, target_tmp).and_then(
            command_mod.Command('mv', '-f', target_tmp, remote_path)).sudo()
        try:
            self.run(install, step=step,
                     timeout=max(deadline - time.monotonic(), 0.01))
        finally:
            # Cleanup gets a short grace even when the deadline has passed.
            self.run(command_mod.Command('rm', '-f', staging), step=step,
                     check=False, timeout=max(deadline - time.monotonic(),
                                              self.connect_timeout))


def _describe(err):
    """A short reason for a failed connect attempt."""
    if isinstance(err, paramiko.ssh_exception.NoValidConnectionsError):
        # Its own message drops the reason ("[Errno None] Unable to ...").
        reasons = sorted({'%s' % (e.strerror or e)
                          for e in err.errors.values()})
        return 'connection failed: %s' % '; '.join(reasons)
    if isinstance(err, (socket.timeout, TimeoutError)):
        return 'timed out'
    return '%s: %s' % (type(err).__name__, err)
