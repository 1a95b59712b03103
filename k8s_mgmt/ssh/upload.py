"""The SFTP side of an SSH session: every request bounded by a deadline.

paramiko's ``SFTPClient.from_transport`` waits for the subsystem reply
without a limit and its file calls wait for each answer as long as the
channel's timeout says; here the start and each request wait no longer than
the upload's deadline, and a timed-out SFTP channel is dropped (a late
answer would be read as the answer to the next request).
"""

import os
import socket
import time

import paramiko

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.ssh import channel as channel_mod

# One SFTP write request carries at most this much (paramiko's own limit).
CHUNK = 32768
ERRORS = (IOError, OSError, EOFError, paramiko.SSHException)


class SFTPUploads(object):
    """One session's SFTP client, started on first use."""

    def __init__(self, session):
        self._session = session
        self._sftp = None

    @property
    def _node(self):
        return self._session.node

    def close(self):
        if self._sftp is not None:
            self._sftp.close()
            self._sftp = None

    def write_and_rename(self, data, remote_path, tmp_path, mode, step,
                         deadline):
        """Write ``data`` to ``tmp_path`` with ``mode`` set before any
        content, then rename it to ``remote_path``."""
        sftp = self._client(step, deadline)

        def call(what, fn, *args):
            return self._call(sftp, step, deadline, what, fn, *args)

        try:
            remote_file = call('SFTP open of %s' % tmp_path, sftp.open,
                               tmp_path, 'wb')
            try:
                call('SFTP chmod of %s' % tmp_path, remote_file.chmod, mode)
                for offset in range(0, len(data), CHUNK):
                    call('SFTP write to %s' % tmp_path, remote_file.write,
                         data[offset:offset + CHUNK])
            finally:
                _close_quietly(remote_file)
            try:
                call('SFTP rename to %s' % remote_path, sftp.posix_rename,
                     tmp_path, remote_path)
            except IOError:
                # Server without the posix-rename extension.
                call('SFTP rename to %s' % remote_path, sftp.rename,
                     tmp_path, remote_path)
        except ERRORS as err:
            try:
                call('SFTP remove of %s' % tmp_path, sftp.remove, tmp_path)
            except (exceptions.SSHTimeout,) + ERRORS:
                pass
            raise exceptions.SSHError(
                node=self._node, step=step,
                reason='upload to %s failed: %s' % (remote_path, err))

    def _client(self, step, deadline):
        if self._sftp is None:
            self._sftp = self._start(step, deadline)
        return self._sftp

    def _start(self, step, deadline):
        """Channel, "sftp" subsystem request and version exchange, all
        bounded by the time the server gets to answer a request."""
        session = self._session
        limit = session.answer_limit(deadline)
        start_deadline = time.monotonic() + limit
        channel = session.open_channel(step, start_deadline,
                                       'SFTP channel open')
        what = 'SFTP subsystem request'
        try:
            with channel_mod.Watchdog(
                    channel, session.answer_limit(start_deadline)) as dog:
                try:
                    channel.invoke_subsystem('sftp')
                except ERRORS as err:
                    if not dog.fired:
                        raise exceptions.SSHError(
                            node=self._node, step=step,
                            reason='cannot start SFTP: %s' % err)
            if dog.fired:
                raise exceptions.SSHTimeout(node=self._node, step=step,
                                            what=what, timeout=limit)
            what = 'SFTP version exchange'
            channel.settimeout(session.answer_limit(start_deadline))
            return paramiko.SFTPClient(channel)
        except socket.timeout:
            channel.close()
            raise exceptions.SSHTimeout(node=self._node, step=step,
                                        what=what, timeout=limit)
        except ERRORS as err:
            channel.close()
            raise exceptions.SSHError(node=self._node, step=step,
                                      reason='cannot start SFTP: %s' % err)
        except BaseException:
            channel.close()
            raise

    def _call(self, sftp, step, deadline, what, call, *args):
        """One SFTP request, waiting for its answer until ``deadline``."""
        limit = max(deadline - time.monotonic(), 0.01)
        sftp.get_channel().settimeout(limit)
        try:
            return call(*args)
        except socket.timeout:
            # The answer may still come and would be read as the answer to
            # the next request: this SFTP channel cannot be used again.
            self.close()
            raise exceptions.SSHTimeout(node=self._node, step=step,
                                        what=what, timeout=limit)


def read_source(source):
    """The bytes to upload from bytes, a Secret or a local path."""
    if isinstance(source, secrets.Secret):
        return source.reveal().encode('utf-8')
    if isinstance(source, (bytes, bytearray)):
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        with open(source, 'rb') as local_file:
            return local_file.read()
    raise TypeError('put() takes bytes, a Secret or a local path, not %s'
                    % type(source).__name__)


def _close_quietly(remote_file):
    """Close an SFTP file whose channel may be gone (after a timeout)."""
    try:
        remote_file.close()
    except ERRORS:
        pass
