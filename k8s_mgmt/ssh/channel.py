"""What paramiko's channels lack: a limit on waiting for the server's reply
to a request, a wait for activity that does not spin, signals, and output
handed over line by line as it arrives."""

import select
import threading

import paramiko

from k8s_mgmt import green


class Watchdog(object):
    """Closes ``channel`` if the block it guards lasts ``seconds``.

    For paramiko calls that wait for the server's reply without a limit
    (exec and subsystem requests): closing the channel wakes them with an
    error, and ``fired`` tells that error from a real refusal.
    """

    def __init__(self, channel, seconds):
        self.channel = channel
        self.fired = False
        self._done = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def _fire(self):
        with self._lock:
            if self._done:
                return
            self.fired = True
        try:
            self.channel.close()  # marks it closed before it sends
        except (paramiko.SSHException, OSError, EOFError):
            pass  # the connection is gone, which wakes the waiter too

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc_info):
        self._timer.cancel()
        with self._lock:
            self._done = True


def watchable(channel):
    """``channel``, its pipe made (paramiko makes it on the first
    ``fileno()``) and, under eventlet, announced to the hub.

    The pipe's descriptor may reuse the number of a socket just closed
    while a green thread still waits on it (another session's paramiko
    transport thread, for up to its 0.1 s read timeout). eventlet knows of
    the reuse only when the descriptor comes from green code, and paramiko
    makes the pipe with a plain ``os.pipe()``: the hub would then refuse a
    select on the channel ("Second simultaneous read on fileno N").
    ``notify_opened`` retires the stale waiter (its socket is closed
    anyway) as eventlet's own ``os.open`` does."""
    fresh = getattr(channel, '_pipe', None) is None
    fd = channel.fileno()
    if fresh and green.eventlet_is_active('select'):
        from eventlet import hubs
        hubs.notify_opened(fd)
    return channel


def wait_for_activity(channel, seconds):
    """Wait up to ``seconds`` for output, EOF or the exit status."""
    readable, _, _ = select.select([watchable(channel)], [], [], seconds)
    if readable and not (channel.recv_ready() or
                         channel.recv_stderr_ready()):
        # After EOF the channel stays "readable" forever; wait for the
        # exit status instead of spinning.
        channel.status_event.wait(seconds)


def send_signal(channel, name):
    """Ask sshd to signal the command's process group (RFC 4254 6.9).

    Closing a channel without a pty does not stop the remote command, so a
    timed-out command would keep running on the VM. paramiko has no public
    call for the "signal" request; the message is built the way its own
    channel requests are. OpenSSH (7.9+) honours it for non-root logins (it
    refuses it for root logins, whose session runs in its monitor process);
    a server that refuses just logs it, since no reply is requested.
    """
    message = paramiko.Message()
    message.add_byte(paramiko.common.cMSG_CHANNEL_REQUEST)
    message.add_int(channel.remote_chanid)
    message.add_string('signal')
    message.add_boolean(False)
    message.add_string(name)
    try:
        channel.transport._send_user_message(message)
    except (paramiko.SSHException, OSError, EOFError):
        pass  # the connection is gone; nothing left to stop


class LineSplitter(object):
    """Hands each complete line of a byte stream to ``on_line`` (if any);
    the unfinished tail waits for the next chunk or :meth:`finish`."""

    def __init__(self, on_line):
        self.on_line = on_line
        self._partial = bytearray()

    def feed(self, chunk):
        if self.on_line is None:
            return
        self._partial += chunk
        *complete, rest = self._partial.split(b'\n')
        self._partial = bytearray(rest)
        for line in complete:
            self.on_line(line.decode('utf-8', 'replace').rstrip('\r'))

    def finish(self):
        if self.on_line is not None and self._partial:
            line, self._partial = bytes(self._partial), bytearray()
            self.on_line(line.decode('utf-8', 'replace').rstrip('\r'))
