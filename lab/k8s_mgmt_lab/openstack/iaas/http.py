"""The HTTP plumbing the four services share: a threading server on
127.0.0.1 with TCP_NODELAY and daemon threads, a route table of
(method, path pattern, handler), the token check in front of every route
that is not a version document, JSON in and out, and each service's own
error body. A path no route serves is a loud 404; a known path with
another method a 405; an exception a 500 that names its type only."""

import http.server
import json
import logging
import re
import threading
import urllib.parse

from k8s_mgmt_lab.openstack.iaas import auth
from k8s_mgmt_lab.openstack.iaas import model

LOG = logging.getLogger(__name__)
HOST = '127.0.0.1'
MAX_BODY = 4 * 1024 * 1024


class Request(object):

    def __init__(self, method, target, headers, body, base_url):
        parsed = urllib.parse.urlsplit(target)
        self.method = method
        self.path = parsed.path
        self.query = urllib.parse.parse_qs(parsed.query,
                                           keep_blank_values=True)
        self.headers = headers
        self.body = body
        self.base_url = base_url
        self.caller = None
        self.params = {}

    def arg(self, name, default=None):
        values = self.query.get(name)
        return values[-1] if values else default

    def json(self, wrapper=None):
        """The body as JSON (an object); with ``wrapper``, the object
        under that key. Anything else is a 400."""
        try:
            found = json.loads(self.body.decode('utf-8') or 'null')
        except (ValueError, RecursionError):
            raise model.BadRequest('Malformed request body: not JSON, or '
                                   'nested too deep.')
        if not isinstance(found, dict):
            raise model.BadRequest('Malformed request body: not an object.')
        if wrapper is None:
            return found
        inner = found.get(wrapper)
        if not isinstance(inner, dict):
            raise model.BadRequest('Malformed request body: no %r object.'
                                   % wrapper)
        return inner


class Response(object):

    def __init__(self, status, body=None, headers=None):
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


class Service(object):
    """One API: its routes (``routes()``), the paths answered without a
    token (``OPEN``) and how it words an error (``error_body``)."""
    name = 'service'
    OPEN = ()

    def routes(self):
        raise NotImplementedError

    def error_body(self, error):
        return {'error': {'code': error.status, 'message': error.message}}

    def decorate(self, request, response):
        """Headers every answer carries (a microversion, say)."""

    def check(self, request):
        """What every authenticated request must satisfy before its
        route runs (a microversion in range, say)."""


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    disable_nagle_algorithm = True

    def _serve(self):
        self.server.app.handle(self)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve

    def log_message(self, fmt, *args):
        LOG.debug('%s %s', self.server.app.service.name, fmt % args)


class Server(object):
    """A service on 127.0.0.1:``port``; ``start()``, ``stop()``."""

    def __init__(self, service, port, tokens):
        self.service = service
        self.tokens = tokens
        self._routes = [(method, re.compile('^%s$' % pattern), handler)
                        for method, pattern, handler in service.routes()]
        self._open = [re.compile('^%s$' % p) for p in service.OPEN]
        self.httpd = http.server.ThreadingHTTPServer((HOST, port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.app = self
        self.port = self.httpd.server_address[1]
        self.url = 'http://%s:%d' % (HOST, self.port)
        self._thread = None

    def start(self):
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, name='iaas-' + self.service.name,
            kwargs={'poll_interval': 0.2}, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join()
            self._thread = None
        self.httpd.server_close()

    def handle(self, handler):
        try:
            length = int(handler.headers.get('Content-Length') or 0)
        except ValueError:
            length = -1
        if handler.headers.get('Transfer-Encoding'):
            # Unread, the chunks would be taken for the next request.
            handler.close_connection = True
            response = self._error(_length_required())
        elif not 0 <= length <= MAX_BODY:
            # The body stays unread: this connection cannot carry another.
            handler.close_connection = True
            response = self._error(model.BadRequest(
                'The body has no valid length or is too big.'))
        else:
            body = handler.rfile.read(length) if length else b''
            request = Request(handler.command, handler.path, handler.headers,
                              body, self.url)
            response = self.answer(request)
            self.service.decorate(request, response)
        self._write(handler, response)

    def answer(self, request):
        try:
            return self._route(request)
        except model.IaasError as error:
            return self._error(error)
        except Exception as error:
            LOG.exception('%s: %s %s failed', self.service.name,
                          request.method, request.path)
            return self._error(model.IaasError(
                'The lab %s failed: %s.' % (self.service.name,
                                            type(error).__name__)))

    def _route(self, request):
        method = 'GET' if request.method == 'HEAD' else request.method
        if not any(p.match(request.path) for p in self._open):
            request.caller = self.tokens.caller(
                request.headers.get('X-Auth-Token'))
            self.service.check(request)
        allowed = []
        for route_method, pattern, handler in self._routes:
            matched = pattern.match(request.path)
            if matched is None:
                continue
            if route_method != method:
                allowed.append(route_method)
                continue
            request.params = matched.groupdict()
            return handler(request)
        if allowed:
            error = model.IaasError('The lab %s does not serve %s on %s.' % (
                self.service.name, request.method, request.path))
            error.status = 405
            return self._error(error, {'Allow': ', '.join(allowed)})
        raise model.NotFound('The lab %s does not serve %s %s.' % (
            self.service.name, request.method, request.path))

    def _error(self, error, headers=None):
        if isinstance(error, auth.Unauthorized):
            body = {'error': {'code': 401, 'title': 'Unauthorized',
                              'message': error.message}}
            headers = {'WWW-Authenticate': 'Keystone uri="%s"'
                       % getattr(self.tokens, 'url', '')}
        else:
            body = self.service.error_body(error)
        return Response(error.status, body, headers)

    def _write(self, handler, response):
        data = b''
        if response.body is not None:
            data = json.dumps(response.body).encode('utf-8')
        handler.send_response(response.status)
        if handler.close_connection:
            handler.send_header('Connection', 'close')
        if data:
            handler.send_header('Content-Type', 'application/json')
        handler.send_header('Content-Length', str(len(data)))
        for name, value in response.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        if data and handler.command != 'HEAD':
            handler.wfile.write(data)


def _length_required():
    error = model.IaasError('The lab serves bodies with a Content-Length '
                            'only, not a Transfer-Encoding.')
    error.status = 411
    return error


# The fault names of Nova's and Cinder's error bodies (the two share them);
# a status not named (406 among them) is computeFault.
FAULT_NAMES = {400: 'badRequest', 401: 'unauthorized', 403: 'forbidden',
               404: 'itemNotFound', 405: 'badMethod',
               409: 'conflictingRequest', 413: 'overLimit',
               415: 'badMediaType', 429: 'overLimit',
               501: 'notImplemented', 503: 'serviceUnavailable'}


def fault_body(error):
    """A Nova or Cinder error body: ``{fault name: {code, message}}``."""
    name = FAULT_NAMES.get(error.status, 'computeFault')
    return {name: {'code': error.status, 'message': error.message}}


def ok(body, status=200, headers=None):
    return Response(status, body, headers)


def no_content(status=204):
    return Response(status)


def wanted_fields(request, record):
    """Neutron's and Glance's ``fields=``: only those keys, when asked."""
    fields = [f for value in request.query.get('fields', ())
              for f in value.split(',') if f]
    if not fields:
        return record
    return {k: v for k, v in record.items() if k in fields}
