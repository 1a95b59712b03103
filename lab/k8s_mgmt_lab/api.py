"""The lab's Keystone v3, Heat v1 and Nova REST APIs, served on loopback.

Only what python-heatclient (through a keystoneauth1 session) and Tacker's
OpenStack infra driver use: a password token endpoint with a service catalog,
stack show (lookups by name or id answer 302 to ``/stacks/<name>/<id>`` as
real Heat does), stack update and delete, template, resource list with
``nested_depth``, resource show with ``attributes``, mark-unhealthy, metadata
and scaling-policy signals. Response bodies follow real Heat's field names.
Of Nova, only the server action ``os-getConsoleOutput``: the console of a
lab VM, with the host key blocks cloud-init prints (see ``LabCloud.
console_output``).

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
from k8s_mgmt_lab import hot
from k8s_mgmt_lab import stack_list

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


class HTTPError(Exception):
    def __init__(self, status, body, headers=None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def heat_error(status, title, kind, message):
    return HTTPError(status, {
        'explanation': {404: 'The resource could not be found.',
                        400: 'The server could not comply with the request '
                             'since it is either malformed or otherwise '
                             'incorrect.',
                        401: 'This server could not verify that you are '
                             'authorized to access the document you '
                             'requested.'}.get(status, title),
        'code': status, 'title': title,
        'error': {'message': message, 'traceback': None, 'type': kind}})


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'k8s-mgmt-lab'

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
                status, payload, headers = _heat(self, method, parts[3:], body)
            else:
                raise heat_error(404, 'Not Found', 'NotFound',
                                 'No such path %s' % url.path)
        except HTTPError as err:
            status, payload, headers = err.status, err.body, err.headers
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


# ---------------------------------------------------------------------- Heat
def _heat(handler, method, parts, body):
    cloud = handler.server.cloud
    if parts == ['stacks'] and method == 'GET':
        return 200, {'stacks': _stack_list(handler)}, {}
    if not parts or parts[0] != 'stacks' or len(parts) < 2:
        raise heat_error(404, 'Not Found', 'NotFound', 'No such Heat path')
    stack = _canonical_stack(cloud, parts)
    if stack is None:
        return _redirect(handler, cloud.stack(parts[1]), parts[2:])
    rest = parts[3:]
    if not rest:
        return _stack_call(handler, method, stack, body)
    if rest == ['template'] and method == 'GET':
        return 200, cloud.template(stack['id']), {}
    if rest == ['actions'] and method == 'POST':
        return _stack_action(cloud, stack, body)
    if rest[0] == 'resources':
        return _resource_call(handler, method, stack, rest[1:], body)
    raise heat_error(404, 'Not Found', 'NotFound', 'No such Heat path')


def _canonical_stack(cloud, parts):
    """The stack when the path is /stacks/<name>/<id>/..., else None."""
    if len(parts) < 3:
        return None
    try:
        stack = cloud.stack(parts[2])
    except lab_errors.LabCloudError:
        return None
    return stack if stack['name'] == parts[1] else None


def _redirect(handler, stack, rest):
    location = '%s/stacks/%s/%s' % (handler.server.heat_url, stack['name'],
                                    stack['id'])
    if rest:
        location += '/' + '/'.join(urllib.parse.quote(p) for p in rest)
    if handler.query_string:
        location += '?' + handler.query_string
    return 302, None, {'Location': location}


def _stack_url(handler, stack):
    return '%s/stacks/%s/%s' % (handler.server.heat_url, stack['name'],
                                stack['id'])


def _stack_list(handler):
    try:
        stacks = stack_list.select(handler.server.cloud, handler.query)
    except stack_list.Unsupported as err:
        raise heat_error(400, 'Bad Request', 'HTTPBadRequest', str(err))
    return [_stack_body(handler, s, brief=True) for s in stacks]


def _stack_body(handler, stack, brief=False):
    cloud = handler.server.cloud
    action, _, state = stack['status'].partition('_')
    body = {'id': stack['id'], 'stack_name': stack['name'],
            'description': stack['description'],
            'creation_time': stack['creation_time'],
            'updated_time': stack['updated_time'], 'deletion_time': None,
            'stack_status': stack['status'],
            'stack_status_reason': 'Stack %s completed successfully' % action,
            'stack_owner': handler.server.username, 'parent': stack['parent'],
            'links': [{'href': _stack_url(handler, stack), 'rel': 'self'}],
            'project': cloud.project_id, 'tags': None}
    if brief:
        return body
    params = {k: v if isinstance(v, str) else json.dumps(v)
              for k, v in stack['parameters'].items()}
    params.update({'OS::stack_id': stack['id'],
                   'OS::stack_name': stack['name'],
                   'OS::project_id': cloud.project_id})
    body.update(parameters=params, outputs=[], disable_rollback=True,
                template_description=stack['description'], timeout_mins=None,
                capabilities=[], notification_topics=[],
                stack_user_project_id=cloud.project_id)
    return body


def _stack_call(handler, method, stack, body):
    cloud = handler.server.cloud
    if method == 'GET':
        return 200, {'stack': _stack_body(handler, stack)}, {}
    if method in ('PATCH', 'PUT'):
        cloud.update_stack(stack['id'], body.get('parameters') or {},
                           existing=(method == 'PATCH' or
                                     bool(body.get('existing'))))
        return 202, None, {}
    if method == 'DELETE':
        cloud.delete_stack(stack['id'])
        return 204, None, {}
    raise heat_error(405, 'Method Not Allowed', 'HTTPMethodNotAllowed',
                     method)


def _stack_action(cloud, stack, body):
    # Heat's stack actions endpoint. "lab_recreate" is the lab's own action:
    # the delete + create Tacker runs for a whole-VNF heal, in one call.
    if 'lab_recreate' in (body or {}):
        return 200, {'stack': {'id': cloud.recreate_stack(stack['id'])}}, {}
    raise heat_error(400, 'Bad Request', 'ActionNotSupported',
                     'the lab supports only the lab_recreate action')


def _resource_call(handler, method, stack, rest, body):
    cloud = handler.server.cloud
    if not rest and method == 'GET':
        depth = int((handler.query.get('nested_depth') or ['0'])[0])
        filters = {k: set(v) for k, v in handler.query.items()
                   if k in ('type', 'name', 'status', 'action', 'id')}
        items = [_resource_body(handler, s, r)
                 for s, r in cloud.list_resources(stack['id'], depth)]
        items = [i for i in items if _matches(i, filters)]
        return 200, {'resources': items}, {}
    name = rest[0] if rest else None
    owner, res, attributes = cloud.resource(stack['id'], name)
    if len(rest) == 1 and method == 'GET':
        body_out = dict(_resource_body(handler, owner, res),
                        attributes=attributes, description='')
        return 200, {'resource': body_out}, {}
    if len(rest) == 1 and method == 'PATCH':
        cloud.mark_unhealthy(owner['id'], res['name'],
                             bool(body.get('mark_unhealthy')),
                             body.get('resource_status_reason') or '')
        return 200, None, {}
    if rest[1:] == ['metadata'] and method == 'GET':
        return 200, {'metadata': {}}, {}
    if rest[1:] == ['signal'] and method == 'POST':
        _signal(cloud, owner, res)
        return 200, None, {}
    raise heat_error(404, 'Not Found', 'NotFound', 'No such Heat path')


def _signal(cloud, stack, res):
    if res['type'] != hot.SCALING_POLICY:
        raise heat_error(400, 'Bad Request', 'ResourceActionNotSupported',
                         '%s does not take signals' % res['name'])
    group_id = res['properties'].get('auto_scaling_group_id')
    group = next(r for r in stack['resources'].values()
                 if r['physical_id'] == group_id)
    target = group['data']['desired'] + int(
        res['properties'].get('scaling_adjustment', 0))
    cloud.resize_group(stack['id'], group['name'], target)


def _matches(item, filters):
    fields = {'type': item['resource_type'], 'name': item['resource_name'],
              'status': item['resource_status'].partition('_')[2],
              'action': item['resource_status'].partition('_')[0],
              'id': item['physical_resource_id']}
    return all(fields[k] in wanted for k, wanted in filters.items())


def _resource_body(handler, stack, res):
    cloud = handler.server.cloud
    stack_url = _stack_url(handler, stack)
    links = [{'href': '%s/resources/%s' % (stack_url, res['name']),
              'rel': 'self'}, {'href': stack_url, 'rel': 'stack'}]
    if res.get('nested'):
        links.append({'href': _stack_url(handler, cloud.stack(res['nested'])),
                      'rel': 'nested'})
    body = {'resource_name': res['name'], 'logical_resource_id': res['name'],
            'physical_resource_id': res['physical_id'] or '',
            'resource_type': res['type'], 'resource_status': res['status'],
            'resource_status_reason': res['reason'],
            'creation_time': res['creation_time'],
            'updated_time': res['updated_time'],
            'required_by': res['required_by'], 'links': links}
    if stack['parent']:
        body['parent_resource'] = stack['parent_resource']
    return body
