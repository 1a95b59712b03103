"""Loopback stand-ins for what sits behind the external load balancer: API
servers (HTTPS with /readyz), workers' NodePort services (TCP servers that
say who and which port they are, then echo) and kubelet ports (accept and
close). Each member has an address of its own in 127.0.0.0/8, as HAProxy
sends NodePort traffic to the port the client used on every worker.
"""

import http.server
import socket
import ssl
import subprocess
import threading

KUBELET_PORT = 10250


def listener(ip, port, reuse_port=False):
    """A listening TCP socket. ``reuse_port``: HAProxy binds the NodePorts
    on every address (``*:FROM-TO``) with SO_REUSEPORT; a worker on a
    127.x address of its own then shares the port, and the kernel hands
    connections to that address to the more specific socket."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((ip, port))
    sock.listen(16)
    return sock


class TCPServer(object):
    """Accepts on ``sock`` and runs ``handle(conn)`` in a thread each."""

    def __init__(self, sock, handle):
        self.sock, self.handle = sock, handle
        self.conns = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed by stop()
            self.conns.append(conn)
            threading.Thread(target=self._run, args=(conn,),
                             daemon=True).start()

    def _run(self, conn):
        try:
            self.handle(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def stop(self):
        # shutdown() wakes the accept() of the serving thread.
        for sock in [self.sock] + self.conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self.thread.join(5)


def kubelet(ip):
    """A kubelet port: takes a connection and closes it."""
    return TCPServer(listener(ip, KUBELET_PORT), lambda conn: None)


def nodeport_service(name, ip, port):
    """Greets with ``NAME:PORT`` (the port the connection arrived on), then
    echoes what it gets."""
    def handle(conn):
        conn.sendall(b'%s:%d\n' % (name.encode(), conn.getsockname()[1]))
        while True:
            data = conn.recv(4096)
            if not data:
                return
            conn.sendall(data)
    return TCPServer(listener(ip, port, reuse_port=True), handle)


def tls_context(folder):
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048',
                    '-nodes', '-days', '1', '-subj', '/CN=apiserver',
                    '-keyout', str(folder / 'key.pem'),
                    '-out', str(folder / 'cert.pem')],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / 'cert.pem', folder / 'key.pem')
    return context


class APIServer(object):
    """HTTPS on IP:PORT: /readyz answers 200 when ``ready`` else 503; any
    other path answers the server's name."""

    def __init__(self, name, ip, port, context, ready=True):
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                if self.path == '/readyz':
                    code, body = (200, b'ok') if server.ready else \
                        (503, b'not ready')
                else:
                    code, body = 200, name.encode()
                self.send_response(code)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.ready = ready
        self.httpd = http.server.ThreadingHTTPServer((ip, port), Handler)
        self.httpd.socket = context.wrap_socket(self.httpd.socket,
                                                server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def free_port(ip='0.0.0.0'):
    with socket.socket() as sock:
        sock.bind((ip, 0))
        return sock.getsockname()[1]


def free_range(count):
    """FROM, TO: ``count`` consecutive ports free on every address."""
    for _ in range(50):
        first = free_port()
        if first + count > 65535:
            continue
        socks = []
        try:
            for port in range(first, first + count):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(('0.0.0.0', port))
            return first, first + count - 1
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError('no %d consecutive free ports' % count)
