"""Serving the lab's Kubernetes apt repository (:mod:`.k8s_repo`) over
HTTP: the standard library's threaded server on one address of the lab's
network (never all addresses), GET and HEAD of the tree only, its access
lines at debug level or in a file, never on stderr."""

import functools
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
import logging
import os
import socket
import socketserver
import threading

from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines.k8s_repo import base_url

LOG = logging.getLogger(__name__)


class _Handler(SimpleHTTPRequestHandler):
    """GET and HEAD of the tree (its base class has no other verb), logged
    at debug level or to the server's log file, never to stderr."""

    def log_message(self, format, *args):
        line = '%s %s' % (self.address_string(), format % args)
        self.server.log(line)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    log_path = None
    _log_lock = threading.Lock()

    def server_bind(self):
        # HTTPServer's would ask DNS for the address's name.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def handle_error(self, request, client_address):
        LOG.debug('Kubernetes repository: request from %s failed',
                  client_address, exc_info=True)

    def log(self, line):
        if self.log_path is None:
            LOG.debug('Kubernetes repository: %s', line)
            return
        with self._log_lock, open(self.log_path, 'a') as f:
            f.write(line + '\n')


class _Server6(_Server):
    address_family = socket.AF_INET6


class Served:
    """A running server of the repository: ``url`` (what apt source lines
    start with), ``port``, ``close()``."""

    def __init__(self, httpd, thread):
        self._httpd = httpd
        self._thread = thread
        host, self.port = httpd.server_address[:2]
        self.url = base_url(host, self.port)

    def close(self):
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def serve(root, host, port=0, log_path=None):
    """Serve ``root`` (made by ``build``) over HTTP on ``host`` only (never
    all addresses); port 0 takes a free one. Access lines go to
    ``log_path`` if given, else to this module's logger at debug level."""
    if host in ('', '0.0.0.0', '::'):
        raise LabError('the Kubernetes repository is served on one address, '
                       'not %r' % host)
    server_class = _Server6 if ':' in host else _Server
    handler = functools.partial(_Handler, directory=os.path.abspath(root))
    try:
        httpd = server_class((host, port), handler)
    except OSError as e:
        raise LabError('cannot serve the Kubernetes repository on %s port '
                       '%d: %s' % (host, port, e.strerror or e))
    httpd.log_path = log_path
    # A short poll interval: close() waits up to one.
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,),
                              name='k8s-repo-%s' % httpd.server_address[1],
                              daemon=True)
    thread.start()
    return Served(httpd, thread)
