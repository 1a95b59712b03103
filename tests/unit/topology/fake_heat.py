"""A minimal Keystone v3 + Heat v1 test double on 127.0.0.1.

Serves ``POST /identity/v3/auth/tokens`` (a token whose catalog points the
``orchestration`` service back here) and the Heat endpoints python-heatclient
uses to read a stack's resources, from a fixture in tests/fixtures/heat.
Like real Heat it redirects a bare stack id to ``/stacks/<name>/<id>/...``
and honours ``nested_depth``. Every request is recorded so tests can count
them. The full lab Heat API lives elsewhere; this is only for unit tests.
"""

import json
import threading
import uuid
from http import server
from urllib import parse

PROJECT_ID = '7fa2d4b4bc7d4ac6b9b0e3a5cd3f1a77'
TOKEN = 'gAAAAAB-test-token-0123456789'


class FakeHeat(object):
    def __init__(self, fixture, password='devstack', hold_shows=0,
                 heat_base=None):
        self.fixture = fixture
        # Where the catalog sends Heat requests (default: this server).
        self.heat_base = heat_base
        # Set: resource shows are read and never answered (until exit).
        self.silent_shows = threading.Event()
        self._closing = threading.Event()
        self.password = password
        self.requests = []          # (method, path, query dict)
        self.auth_bodies = []
        self.lock = threading.Condition()
        self.in_flight = self.max_in_flight = self.shows_started = 0
        # When > 1, a resource show waits (bounded) until that many shows
        # are in flight: a serial client then shows max_in_flight == 1.
        self.hold_shows = hold_shows
        self.expected_shows = None
        self._index()
        self.httpd = server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                self._handler_class())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        # A short poll interval keeps shutdown() quick at teardown.
        self.thread = threading.Thread(target=self.httpd.serve_forever,
                                       kwargs={'poll_interval': 0.02},
                                       daemon=True)

    # -- set up ---------------------------------------------------------
    def _index(self):
        self.stack_names = {}
        self.parents = {}
        self.listing = {}
        for res in self.fixture['resources']:
            for link in res['links']:
                parts = parse.urlsplit(link['href']).path.split('/')
                if link['rel'] == 'stack':
                    self.stack_names[parts[-1]] = parts[-2]
                    self.listing.setdefault(parts[-1], []).append(res)
        for res in self.fixture['resources']:
            for link in res['links']:
                if link['rel'] == 'nested':
                    child = link['href'].rsplit('/', 1)[-1]
                    self.parents[child] = res['links'][1]['href'].rsplit(
                        '/', 1)[-1]
        self.shown = {(s['stack_id'], s['resource']['resource_name']):
                      s['resource'] for s in self.fixture['shown']}

    def depth(self, stack_id):
        depth = 0
        while stack_id in self.parents:
            stack_id = self.parents[stack_id]
            depth += 1
        return depth

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    @property
    def auth_url(self):
        return self.url + '/identity/v3'

    def heat_url(self):
        return '%s/heat/v1/%s' % (self.heat_base or self.url, PROJECT_ID)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self._closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def heat_requests(self):
        return [r for r in self.requests if r[1].startswith('/heat/')]

    # -- request handling -----------------------------------------------
    def _handler_class(self):
        fake = self

        class Handler(server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def do_POST(self):
                fake._record(self)
                body = self.rfile.read(int(self.headers.get(
                    'Content-Length') or 0))
                if self.path != '/identity/v3/auth/tokens':
                    return fake._send(self, 404, {'error': 'no such path'})
                return fake._token(self, json.loads(body or b'{}'))

            def do_GET(self):
                fake._record(self)
                if self.headers.get('X-Auth-Token') != TOKEN:
                    return fake._send(self, 401, {'error': {
                        'code': 401, 'title': 'Unauthorized',
                        'message': 'bad token'}})
                return fake._heat_get(self)

        return Handler

    def _record(self, handler):
        split = parse.urlsplit(handler.path)
        with self.lock:
            self.requests.append((handler.command, split.path,
                                  dict(parse.parse_qsl(split.query))))

    def _send(self, handler, status, body, headers=()):
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header('Content-Type', 'application/json')
        handler.send_header('Content-Length', str(len(data)))
        for key, value in headers:
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _token(self, handler, body):
        self.auth_bodies.append(body)
        user = body['auth']['identity']['password']['user']
        if user.get('password') != self.password:
            return self._send(handler, 401, {'error': {
                'code': 401, 'title': 'Unauthorized',
                'message': 'The request you have made requires '
                           'authentication.'}})
        endpoints = [{'id': uuid.uuid4().hex, 'interface': iface,
                      'region': 'RegionOne', 'region_id': 'RegionOne',
                      'url': self.heat_url()}
                     for iface in ('public', 'internal', 'admin')]
        domain = {'id': 'default', 'name': 'Default'}
        token = {'token': {
            'methods': ['password'],
            'user': {'id': uuid.uuid4().hex, 'name': user.get('name'),
                     'domain': domain, 'password_expires_at': None},
            'project': {'id': PROJECT_ID, 'name': 'nfv', 'domain': domain},
            'roles': [{'id': uuid.uuid4().hex, 'name': 'admin'}],
            'issued_at': '2026-11-21T00:00:00.000000Z',
            'expires_at': '2099-01-01T00:00:00.000000Z',
            'catalog': [{'id': uuid.uuid4().hex, 'type': 'orchestration',
                         'name': 'heat', 'endpoints': endpoints}]}}
        return self._send(handler, 201, token,
                          headers=[('X-Subject-Token', TOKEN)])

    def _not_found(self, handler, what):
        return self._send(handler, 404, {
            'code': 404, 'title': 'Not Found',
            'explanation': 'The resource could not be found.',
            'error': {'type': 'EntityNotFound', 'traceback': None,
                      'message': 'The %s could not be found.' % what}})

    def _heat_get(self, handler):
        split = parse.urlsplit(handler.path)
        prefix = '/heat/v1/%s/stacks/' % PROJECT_ID
        if not split.path.startswith(prefix):
            return self._not_found(handler, 'path %s' % split.path)
        parts = [parse.unquote(p) for p in
                 split.path[len(prefix):].split('/')]
        if len(parts) >= 2 and parts[1] == 'resources':
            # A bare stack id: Heat answers with a redirect to name/id.
            name = self.stack_names.get(parts[0])
            if name is None:
                return self._not_found(handler, 'Stack (%s)' % parts[0])
            location = '%s%s%s/%s' % (self.url, prefix, name,
                                      '/'.join(parts))
            if split.query:
                location += '?' + split.query
            return self._send(handler, 302, {}, [('Location', location)])
        if len(parts) < 3 or parts[2] != 'resources':
            return self._not_found(handler, 'path %s' % split.path)
        stack_id = parts[1]
        if self.stack_names.get(stack_id) != parts[0]:
            return self._not_found(handler, 'Stack (%s)' % parts[0])
        if len(parts) == 3:
            depth = int(dict(parse.parse_qsl(split.query)).get(
                'nested_depth', 0))
            top = self.depth(stack_id)
            items = [r for sid, rs in self.listing.items()
                     if self._within(sid, stack_id, top, depth) for r in rs]
            return self._send(handler, 200, {'resources': items})
        return self._show(handler, stack_id, parts[3])

    def _within(self, sid, top_id, top_depth, depth):
        walk, steps = sid, 0
        while walk != top_id and walk in self.parents:
            walk, steps = self.parents[walk], steps + 1
        return walk == top_id and steps <= depth

    def _show(self, handler, stack_id, name):
        if self.silent_shows.is_set():
            self._closing.wait()
            return None
        resource = self.shown.get((stack_id, name))
        if resource is None:
            return self._not_found(handler, 'Resource (%s)' % name)
        with self.lock:
            self.shows_started += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.lock.notify_all()
            if self.hold_shows > 1:
                self.lock.wait_for(
                    lambda: (self.in_flight >= self.hold_shows or
                             self.shows_started >= (self.expected_shows or 0)),
                    timeout=5)
        try:
            return self._send(handler, 200, {'resource': resource})
        finally:
            with self.lock:
                self.in_flight -= 1
