"""A real SSH server for tests: paramiko's server side on 127.0.0.1.

Commands really run (``bash -c`` in a subprocess of this process), with
stdin, stdout, stderr and exit status carried over the SSH channel, and the
SFTP subsystem serves the local filesystem (optionally below a root dir).
Other test packages can reuse it::

    server = SSHTestServer(users={'ubuntu': 'pw'})
    server.start()          # or start(when=event): listen once event is set
    ...
    server.stop()           # kills running commands, closes every socket

``auth_attempts`` lists every password/public-key attempt the server saw.
``hang`` names requests the server accepts and then never answers, the way
a wedged sshd does (each waits until ``stop()``): ``'open'`` (a channel
open), ``'exec'`` (an exec request), ``'sftp'`` (the "sftp" subsystem
request), ``'sftp-version'`` (SFTP starts, its version never comes),
``'sftp-write'`` (an SFTP write).
Run it in a process that is not monkey-patched by eventlet (its subprocess
pumps need real threads); a green client may talk to it from another process.
"""

import os
import signal
import socket
import subprocess
import threading

import paramiko


def free_port(host='127.0.0.1'):
    """A port that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


class _Interface(paramiko.ServerInterface):
    def __init__(self, server):
        self.server = server

    def get_allowed_auths(self, username):
        return 'password,publickey'

    def check_auth_password(self, username, password):
        ok = self.server.users.get(username) == password
        self.server.record_auth(username, 'password', ok)
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_auth_publickey(self, username, key):
        wanted = {(k.get_name(), k.get_base64())
                  for k in self.server.authorized_keys.get(username, ())}
        ok = (key.get_name(), key.get_base64()) in wanted
        self.server.record_auth(username, 'publickey', ok)
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_channel_request(self, kind, chanid):
        self.server.hold('open')
        if kind == 'session':
            return paramiko.OPEN_SUCCEEDED
        return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_subsystem_request(self, channel, name):
        self.server.hold('sftp')
        return super().check_channel_subsystem_request(channel, name)

    def check_channel_exec_request(self, channel, command):
        if self.server.hold('exec'):
            return False
        self.server.spawn(self.server.execute, channel, command)
        return True


class _MuteSubsystem(paramiko.SubsystemHandler):
    """Accepts the subsystem and never says a word (hang 'sftp-version')."""

    def __init__(self, channel, name, server, test_server=None):
        super().__init__(channel, name, server)
        self.test_server = test_server

    def start_subsystem(self, name, transport, channel):
        self.test_server.hold('sftp-version')


class _Handle(paramiko.SFTPHandle):
    server = None

    def write(self, offset, data):
        if self.server is not None:
            self.server.hold('sftp-write')
        return super().write(offset, data)

    def stat(self):
        return paramiko.SFTPAttributes.from_stat(
            os.fstat(self.readfile.fileno()))

    def chattr(self, attr):
        try:
            paramiko.SFTPServer.set_file_attr(self.filename, attr)
        except OSError as err:
            return paramiko.SFTPServer.convert_errno(err.errno)
        return paramiko.SFTP_OK


def _errno_of(fn):
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except OSError as err:
            return paramiko.SFTPServer.convert_errno(err.errno)
    return wrapper


class _LocalSFTP(paramiko.SFTPServerInterface):
    """SFTP over the local filesystem, below ``root`` when given."""

    def __init__(self, server, *args, root=None, **kwargs):
        super().__init__(server, *args, **kwargs)
        self.root = root
        self.test_server = server.server

    def _real(self, path):
        path = os.path.normpath('/' + path)
        return self.root + path if self.root else path

    @_errno_of
    def open(self, path, flags, attr):
        real = self._real(path)
        mode = attr.st_mode if attr is not None and attr.st_mode else 0o666
        fd = os.open(real, flags, mode & 0o7777)
        if flags & os.O_WRONLY:
            fmode = 'ab' if flags & os.O_APPEND else 'wb'
        elif flags & os.O_RDWR:
            fmode = 'a+b' if flags & os.O_APPEND else 'r+b'
        else:
            fmode = 'rb'
        handle = _Handle(flags)
        handle.server = self.test_server
        handle.filename = real
        handle.readfile = handle.writefile = os.fdopen(fd, fmode)
        return handle

    @_errno_of
    def stat(self, path):
        return paramiko.SFTPAttributes.from_stat(os.stat(self._real(path)))

    @_errno_of
    def lstat(self, path):
        return paramiko.SFTPAttributes.from_stat(os.lstat(self._real(path)))

    @_errno_of
    def list_folder(self, path):
        real = self._real(path)
        items = []
        for name in os.listdir(real):
            attr = paramiko.SFTPAttributes.from_stat(
                os.lstat(os.path.join(real, name)))
            attr.filename = name
            items.append(attr)
        return items

    @_errno_of
    def remove(self, path):
        os.remove(self._real(path))
        return paramiko.SFTP_OK

    @_errno_of
    def rename(self, oldpath, newpath):
        real_new = self._real(newpath)
        if os.path.exists(real_new):  # SFTP v3 rename never overwrites
            return paramiko.SFTP_FAILURE
        os.rename(self._real(oldpath), real_new)
        return paramiko.SFTP_OK

    @_errno_of
    def posix_rename(self, oldpath, newpath):
        os.replace(self._real(oldpath), self._real(newpath))
        return paramiko.SFTP_OK

    @_errno_of
    def mkdir(self, path, attr):
        os.mkdir(self._real(path))
        return paramiko.SFTP_OK

    @_errno_of
    def rmdir(self, path):
        os.rmdir(self._real(path))
        return paramiko.SFTP_OK

    @_errno_of
    def chattr(self, path, attr):
        paramiko.SFTPServer.set_file_attr(self._real(path), attr)
        return paramiko.SFTP_OK


class SSHTestServer(object):
    """An SSH server on 127.0.0.1:``port`` that really runs commands."""

    def __init__(self, users=None, authorized_keys=None, host_key=None,
                 port=None, sftp_root=None, hang=()):
        self.users = dict(users or {})
        self.hang = frozenset(hang)
        self.held = []
        self.authorized_keys = dict(authorized_keys or {})
        self.host_key = host_key or paramiko.ECDSAKey.generate()
        self.port = port or free_port()
        self.sftp_root = sftp_root
        self.auth_attempts = []
        self.connections = 0
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._listener = None
        self._threads = []
        self._transports = []
        self._processes = []
        self._start_events = []

    @property
    def fingerprint(self):
        from k8s_mgmt.ssh import hostkeys
        return hostkeys.fingerprint(self.host_key)

    def hold(self, request):
        """Wait until stop() when told to hang on ``request``."""
        if request not in self.hang:
            return False
        with self._lock:
            self.held.append(request)
        self._stopping.wait()
        return True

    def record_auth(self, username, method, ok):
        with self._lock:
            self.auth_attempts.append((username, method, ok))

    def spawn(self, target, *args):
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()
        return thread

    def start(self, when=None):
        """Listen now, or (in the background) once ``when`` is set."""
        if when is None:
            self._listen()
        else:
            self._start_events.append(when)
            self.spawn(self._listen_when, when)
        return self

    def _listen_when(self, event):
        event.wait()
        with self._lock:  # stop() must not race a late listen
            if not self._stopping.is_set():
                self._listen()

    def _listen(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(('127.0.0.1', self.port))
        listener.listen(16)
        self._listener = listener
        self.spawn(self._accept_loop, listener)

    def _accept_loop(self, listener):
        while not self._stopping.is_set():
            try:
                sock, _ = listener.accept()
            except OSError:
                return  # stop() shut the listener down
            with self._lock:
                self.connections += 1
            self.spawn(self._serve, sock)

    def _serve(self, sock):
        transport = paramiko.Transport(sock)
        with self._lock:
            self._transports.append(transport)
        transport.add_server_key(self.host_key)
        if 'sftp-version' in self.hang:
            transport.set_subsystem_handler('sftp', _MuteSubsystem,
                                            test_server=self)
        else:
            transport.set_subsystem_handler('sftp', paramiko.SFTPServer,
                                            sftp_si=_LocalSFTP,
                                            root=self.sftp_root)
        try:
            transport.start_server(server=_Interface(self))
        except (paramiko.SSHException, EOFError, OSError):
            transport.close()

    def execute(self, channel, command):
        process = subprocess.Popen(
            ['bash', '-c', command], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
        with self._lock:
            self._processes.append(process)
        pumps = [self.spawn(self._pump_out, process.stdout, channel.sendall),
                 self.spawn(self._pump_out, process.stderr,
                            channel.sendall_stderr)]
        self.spawn(self._pump_in, channel, process)
        self.spawn(self._kill_when_closed, channel, process)
        status = process.wait()
        for pump in pumps:
            pump.join()
        if status < 0:
            status = 128 - status  # killed by a signal, like a shell says
        try:
            channel.send_exit_status(status)
            channel.close()
        except (OSError, EOFError, paramiko.SSHException):
            pass

    @staticmethod
    def _pump_out(stream, send):
        try:
            for chunk in iter(lambda: stream.read1(65536), b''):
                send(chunk)
        except (OSError, EOFError, paramiko.SSHException):
            pass

    @staticmethod
    def _pump_in(channel, process):
        try:
            for chunk in iter(lambda: channel.recv(65536), b''):
                process.stdin.write(chunk)
                process.stdin.flush()
        except (OSError, EOFError, paramiko.SSHException):
            pass
        try:
            process.stdin.close()
        except OSError:
            pass

    @staticmethod
    def _kill_when_closed(channel, process):
        # status_event is set when the channel closes (client gave up, e.g.
        # a command timeout): the command must not outlive its channel.
        channel.status_event.wait()
        _kill(process)

    def stop(self):
        with self._lock:
            self._stopping.set()
        for event in self._start_events:
            event.set()  # wake a delayed start so its thread ends
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
        with self._lock:
            transports = list(self._transports)
            processes = list(self._processes)
        for process in processes:
            _kill(process)
        for transport in transports:
            transport.close()
        for transport in transports:
            if transport.is_alive():
                transport.join(5)
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(5)
        for process in processes:
            for stream in (process.stdin, process.stdout, process.stderr):
                stream.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()


def _kill(process):
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
