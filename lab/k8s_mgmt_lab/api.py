"""The lab's Keystone v3, Heat v1 and Nova REST APIs, served on loopback.

Only what python-heatclient (through a keystoneauth1 session) and Tacker's
OpenStack infra driver use: a password token endpoint with a service catalog,
the Heat v1 calls of :mod:`k8s_mgmt_lab.heat_api`. Of Nova, only the server
action ``os-getConsoleOutput``: the console of a lab VM, with the host key
blocks cloud-init prints (see ``LabCloud.console_output``).

Every Heat call needs a token this server issued (401 otherwise).
"""

import datetime
import hmac
import http.server
import json
import secrets as pysecrets
import threading
import urllib.parse
import uuid

from oslo_log import log as logging

from k8s_mgmt_lab import errors as lab_errors
from k8s_mgmt_lab import heat_api
from k8s_mgmt_lab.heat_api import HTTPError
from k8s_mgmt_lab.heat_api import heat_error
from k8s_mgmt_lab import hot

LOG = logging.getLogger(__name__)

DOMAIN = {'id': 'default', 'name': 'Default'}
TOKEN_LIFETIME = datetime.timedelta(hours=2)
REGION = 'RegionOne'


def _iso(moment):
    return moment.strftime('%Y-%m-%dT%H:%M:%S.000000Z')


class LabAPIServer(http.server.ThreadingHTTPServer):
    """HTTP server holding the cloud, the one lab user and issued tokens."""

    daemon_threads = True

    def __init__(self, address, cloud, username, password, project_name):
        super().__init__(address, _Handler)
        self.cloud = cloud
        self.username = username
        self.password = password
        self.project_name = project_name
        self.user_id = uuid.uuid5(uuid.NAMESPACE_URL, username).hex
        self.tokens = {}          # token -> expiry (UTC datetime)
        self.tokens_lock = threading.Lock()
        self.thread = None
        host, port = self.server_address[:2]
        self.base_url = 'http://%s:%d' % (host, port)

    @property
    def auth_url(self):
        return self.base_url + '/v3'

    @property
    def heat_url(self):
        return '%s/heat/v1/%s' % (self.base_url, self.cloud.project_id)

    @property
    def compute_url(self):
        return self.base_url + '/v2.1'

    def issue_token(self):
        token = pysecrets.token_hex(16)
        expires = datetime.datetime.now(datetime.timezone.utc) + TOKEN_LIFETIME
        with self.tokens_lock:
            self.tokens[token] = expires
        return token, expires

    def token_valid(self, token):
        with self.tokens_lock:
            expires = self.tokens.get(token or '')
        return bool(expires and
                    expires > datetime.datetime.now(datetime.timezone.utc))

    def stop(self):
        self.shutdown()
        self.server_close()
        if self.thread is not None:
            self.thread.join()


def serve(cloud, host='127.0.0.1', port=0, username='admin', password=None,
          project_name='admin'):
    """Start the APIs in a thread; ``(server, base_url)``.

    ``password`` defaults to a random one (``server.password``).
    """
    server = LabAPIServer((host, port), cloud, username,
                          password or pysecrets.token_urlsafe(12),
                          project_name)
    server.thread = threading.Thread(target=server.serve_forever,
                                     name='lab-api', daemon=True)
    server.thread.start()
    LOG.info('Lab Keystone/Heat API listening on %s', server.base_url)
    return server, server.base_url


def stop(server):
    server.stop()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'k8s-mgmt-lab'
    # Headers and body are two writes: with Nagle's algorithm on, the body
    # waits for the client's delayed ACK of the headers (40 ms on Linux).
    # Heat's eventlet server sends them in one write; TCP_NODELAY makes
    # these two writes cost what that one does.
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        LOG.debug('lab api: ' + fmt, *args)

    def do_GET(self):
        self._dispatch('GET')

    def do_POST(self):
        self._dispatch('POST')

    def do_PATCH(self):
        self._dispatch('PATCH')

    def do_PUT(self):
        self._dispatch('PUT')

    def do_DELETE(self):
        self._dispatch('DELETE')

    def _dispatch(self, method):
        url = urllib.parse.urlsplit(self.path)
        self.query = urllib.parse.parse_qs(url.query)
        self.query_string = url.query
        parts = [urllib.parse.unquote(p) for p in url.path.split('/') if p]
        try:
            body = self._read_body()
            if parts[:1] == ['v3'] or not parts:
                status, payload, headers = _keystone(self, method, parts, body)
            elif parts[:1] == ['v2.1']:
                if not self.server.token_valid(
                        self.headers.get('X-Auth-Token')):
                    raise _unauthorized()
                status, payload, headers = _nova(self, method, parts[1:],
                                                 body)
            elif parts[:2] == ['heat', 'v1'] and len(parts) >= 3:
                token = self.headers.get('X-Auth-Token')
                if not self.server.token_valid(token):
                    raise heat_error(401, 'Unauthorized', 'Unauthorized',
                                     'Authentication required')
                if parts[2] != self.server.cloud.project_id:
                    raise heat_error(404, 'Not Found', 'EntityNotFound',
                                     'No project %s' % parts[2])
                status, payload, headers = heat_api.handle(self, method,
                                                           parts[3:], body)
            else:
                raise heat_error(404, 'Not Found', 'NotFound',
                                 'No such path %s' % url.path)
        except HTTPError as err:
            status, payload, headers = err.status, err.body, err.headers
        except lab_errors.StackConflict as err:
            status, payload, headers = 409, heat_error(
                409, 'Conflict', 'StackConflict', str(err)).body, {}
        except lab_errors.LabCloudError as err:
            kind = 'EntityNotFound' if ' no ' in str(err) else 'BadRequest'
            code = 404 if kind == 'EntityNotFound' else 400
            status, payload, headers = code, heat_error(
                code, 'Not Found' if code == 404 else 'Bad Request', kind,
                str(err)).body, {}
        except hot.HotError as err:
            status, payload, headers = 400, heat_error(
                400, 'Bad Request', 'StackValidationFailed', str(err)).body, {}
        except Exception as err:   # a bug here must still answer the client
            LOG.exception('Lab API %s %s failed', method, url.path)
            status, payload, headers = 500, heat_error(
                500, 'Internal Server Error', type(err).__name__,
                str(err)).body, {}
        self._respond(status, payload, headers)

    def _read_body(self):
        length = int(self.headers.get('Content-Length') or 0)
        if not length:
            return {}
        raw = self.rfile.read(length)
        try:
            return json.loads(raw or b'{}')
        except ValueError:
            raise heat_error(400, 'Bad Request', 'BadRequest',
                             'body is not JSON')

    def _respond(self, status, payload, headers):
        data = b'' if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        if payload is not None:
            self.send_header('Content-Type', 'application/json')
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)


# ------------------------------------------------------------------ Keystone
def _keystone(handler, method, parts, body):
    server = handler.server
    if method == 'GET' and len(parts) <= 1:
        version = {'id': 'v3.14', 'status': 'stable',
                   'updated': '2020-04-07T00:00:00Z',
                   'links': [{'rel': 'self', 'href': server.auth_url + '/'}],
                   'media-types': [{
                       'base': 'application/json',
                       'type': 'application/vnd.openstack.identity-v3+json'}]}
        if parts:
            return 200, {'version': version}, {}
        return 300, {'versions': {'values': [version]}}, {}
    if method == 'POST' and parts == ['v3', 'auth', 'tokens']:
        _check_password(server, body)
        token, expires = server.issue_token()
        return 201, _token_body(server, expires), {'X-Subject-Token': token}
    if method == 'GET' and parts == ['v3', 'regions']:
        # Tacker's NFVO reads the regions when it registers a VIM.
        if not server.token_valid(handler.headers.get('X-Auth-Token')):
            raise _unauthorized()
        url = server.auth_url + '/regions'
        return 200, {'regions': [{
            'id': REGION, 'description': '', 'parent_region_id': None,
            'links': {'self': '%s/%s' % (url, REGION)}}],
            'links': {'self': url, 'previous': None, 'next': None}}, {}
    raise HTTPError(404, {'error': {'code': 404, 'title': 'Not Found',
                                    'message': 'No such identity API path'}})


def _unauthorized():
    return HTTPError(401, {'error': {
        'code': 401, 'title': 'Unauthorized',
        'message': 'The request you have made requires authentication.'}})


def _check_password(server, body):
    identity = (body.get('auth') or {}).get('identity') or {}
    user = (identity.get('password') or {}).get('user') or {}
    domain = user.get('domain') or {}
    scope = ((body.get('auth') or {}).get('scope') or {}).get('project') or {}
    scope_domain = scope.get('domain') or {}
    ok = ('password' in (identity.get('methods') or []) and
          (user.get('name') == server.username or
           user.get('id') == server.user_id))
    ok = ok and hmac.compare_digest(str(user.get('password', '')).encode(),
                                    server.password.encode())
    ok = ok and (domain.get('name') == DOMAIN['name'] or
                 domain.get('id') == DOMAIN['id'] or 'id' in user)
    in_project = (scope.get('id') == server.cloud.project_id or
                  (scope.get('name') == server.project_name and
                   (scope_domain.get('name') == DOMAIN['name'] or
                    scope_domain.get('id') == DOMAIN['id'])))
    if not ok or (scope and not in_project):
        raise _unauthorized()


def _token_body(server, expires):
    project = {'id': server.cloud.project_id, 'name': server.project_name,
               'domain': DOMAIN}

    def service(kind, name, url):
        return {'id': uuid.uuid5(uuid.NAMESPACE_URL, url).hex, 'type': kind,
                'name': name, 'endpoints': [
                    {'id': uuid.uuid5(uuid.NAMESPACE_URL, url + i).hex,
                     'interface': i, 'region': REGION, 'region_id': REGION,
                     'url': url} for i in ('public', 'internal', 'admin')]}
    return {'token': {
        'methods': ['password'], 'audit_ids': [pysecrets.token_hex(8)],
        'expires_at': _iso(expires),
        'issued_at': _iso(datetime.datetime.now(datetime.timezone.utc)),
        'user': {'id': server.user_id, 'name': server.username,
                 'domain': DOMAIN, 'password_expires_at': None},
        'project': project, 'is_domain': False,
        'roles': [{'id': uuid.uuid5(uuid.NAMESPACE_URL, 'admin').hex,
                   'name': 'admin'}],
        'catalog': [service('identity', 'keystone', server.auth_url),
                    service('orchestration', 'heat', server.heat_url),
                    service('compute', 'nova', server.compute_url)]}}


# ---------------------------------------------------------------------- Nova
def nova_error(status, kind, message):
    return HTTPError(status, {kind: {'code': status, 'message': message}})


def _nova(handler, method, parts, body):
    """Nova's server action os-getConsoleOutput; nothing else."""
    if len(parts) != 3 or parts[0] != 'servers' or parts[2] != 'action' \
            or method != 'POST':
        raise nova_error(404, 'itemNotFound', 'the lab serves only POST '
                         '/v2.1/servers/{server_id}/action')
    server_id = parts[1]
    if not isinstance(body, dict) or 'os-getConsoleOutput' not in body:
        raise nova_error(400, 'badRequest', 'the lab supports only the '
                         'os-getConsoleOutput action')
    options = body['os-getConsoleOutput'] or {}
    length = options.get('length') if isinstance(options, dict) else None
    try:
        length = None if length is None else int(length)
    except (TypeError, ValueError):
        length = -2
    if length is not None and length < -1:
        raise nova_error(400, 'badRequest', "Invalid input for field/"
                         "attribute length. Value: %s." % options['length'])
    try:
        text = handler.server.cloud.console_output(server_id)
    except lab_errors.InstanceNotReady as err:
        raise nova_error(409, 'conflictingRequest', err.kwargs['reason'])
    except lab_errors.LabCloudError:
        raise nova_error(404, 'itemNotFound',
                         'Instance %s could not be found.' % server_id)
    if length not in (None, -1):
        # Nova keeps the last ``length`` lines.
        lines = text.splitlines(True)
        text = ''.join(lines[-length:]) if length else ''
    return 200, {'output': text}, {}
