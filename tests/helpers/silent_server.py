"""Endpoints on loopback that accept a connection and never answer.

The failure a deadline exists for: the TCP connection succeeds (so no
connect error ends the wait), the request is read, and no byte ever comes
back. :class:`SilentServer` does that for plain TCP (an HTTP client waits
for a response, a TLS client for the server's handshake);
``SilentServer(tls=(cert, key))`` completes the TLS handshake first, so an
HTTPS client gets as far as sending its request; ``answer_start`` bytes
are sent once the request came (e.g. the headers and part of a body), and
then nothing more: a server that stalls mid-answer.
"""

import socket
import ssl
import threading


class SilentServer(object):
    """Listens on 127.0.0.1, accepts, reads everything, answers nothing."""

    def __init__(self, tls=None, answer_start=b''):
        self._answer_start = answer_start
        self._context = None
        if tls:
            self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._context.load_cert_chain(*tls)
        self._listener = socket.socket()
        self._listener.bind(('127.0.0.1', 0))
        self._listener.listen(16)
        self.port = self._listener.getsockname()[1]
        self.accepted = 0
        self.received = bytearray()
        self._lock = threading.Lock()
        self._open = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self):
        scheme = 'https' if self._context else 'http'
        return '%s://127.0.0.1:%d' % (scheme, self.port)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            conns = list(self._open)
        for conn in conns:
            conn.close()
        self._thread.join(5)

    def _accept(self):
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                self._open.append(conn)
            threading.Thread(target=self._swallow, args=(conn,),
                             daemon=True).start()

    def _swallow(self, conn):
        try:
            if self._context is not None:
                conn = self._context.wrap_socket(conn, server_side=True)
                with self._lock:
                    self._open.append(conn)
            while not self._stop.is_set():
                data = conn.recv(65536)
                if not data:
                    return
                with self._lock:
                    self.received += data
                if self._answer_start:
                    conn.sendall(self._answer_start)
                    self._answer_start = b''
        except OSError:
            return
