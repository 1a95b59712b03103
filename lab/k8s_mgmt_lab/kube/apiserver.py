"""kube-apiserver stand-in: HTTPS on 6443, bearer tokens, objects in etcd.

Serves the subset of the Kubernetes REST API the driver and the install
script use, in the shapes the official ``kubernetes`` Python client parses.
Every master runs one against its local etcd member, so all masters answer
with the same data. Run as ``python -m k8s_mgmt_lab.kube.apiserver
--config FILE`` (kubeadm's stand-in writes FILE and starts it through the
systemctl stand-in).
"""

import argparse
import http.server
import json
import os
import socketserver
import ssl
import sys
import time
import urllib.parse

from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import controllers
from k8s_mgmt_lab.kube import crds
from k8s_mgmt_lab.kube import objects
from k8s_mgmt_lab.kube import pki
from k8s_mgmt_lab.kube import resources
from k8s_mgmt_lab.kube import store as store_mod

STANDIN_GROUP = 'standin.k8s-mgmt.lab'
PUBLIC_PATHS = ('/readyz', '/livez', '/healthz', '/version')
CLUSTER_INFO = '/api/v1/namespaces/kube-public/configmaps/cluster-info'
ADMIN_GROUPS = {'system:masters', 'system:serviceaccounts'}
SUBRESOURCES = {'status', 'eviction', 'finalize'}
TOKEN_CACHE_SECONDS = 10.0


def _bootstrap_may(method, path):
    """What a bootstrap token may do (kubeadm join's discovery and
    control-plane certificate download)."""
    if method == 'GET' and path.startswith(
            ('/api/v1/namespaces/kube-system/configmaps/',
             '/api/v1/namespaces/kube-public/configmaps/',
             '/apis/%s/v1/etcdmembers' % STANDIN_GROUP)):
        return True
    if method == 'GET' and path == \
            '/api/v1/namespaces/kube-system/secrets/kubeadm-certs':
        return True
    return method == 'POST' and path == \
        '/apis/%s/v1/nodecredentials' % STANDIN_GROUP


def parse_path(path):
    """(group, version, namespace, plural, name, subresource) or None."""
    parts = [urllib.parse.unquote(p) for p in path.strip('/').split('/')]
    if parts[0] == 'api' and len(parts) >= 2:
        group, version, rest = '', parts[1], parts[2:]
    elif parts[0] == 'apis' and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == 'namespaces' and \
            rest[2] not in SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    rest += [None] * (3 - len(rest))
    return group, version, namespace, rest[0], rest[1], rest[2]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'kube-apiserver-standin'
    # Go's net/http sets TCP_NODELAY; without it the body, written after
    # the headers, can wait for the client's delayed ACK (40 ms).
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass  # one line per request would drown the service log

    def do_GET(self):
        self._serve('GET')

    def do_POST(self):
        self._serve('POST')

    def do_PUT(self):
        self._serve('PUT')

    def do_PATCH(self):
        self._serve('PATCH')

    def do_DELETE(self):
        self._serve('DELETE')

    def _send(self, code, body, content_type='application/json'):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header('Content-Type', content_type)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(length) if length else b''

    def _serve(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        body = self._body()
        try:
            code, answer = self.server.api.handle(
                method, url.path, query, body, self.headers)
        except objects.APIError as err:
            code, answer = err.code, err.status()
        except store_mod.StoreError as err:
            code, answer = 503, objects.APIError(503, str(err)).status()
        except Exception as err:  # a bug must still answer like Kubernetes
            code, answer = 500, objects.APIError(
                500, '%s: %s' % (type(err).__name__, err)).status()
        if isinstance(answer, str):
            self._send(code, answer.encode(), 'text/plain; charset=utf-8')
        else:
            self._send(code, answer)


class API(object):
    """Authentication, authorization and routing of one API server."""

    def __init__(self, config):
        self.config = config
        self.store = store_mod.EtcdStore(*config['etcd'].split(':'))
        self.store.port = int(self.store.port)
        with open(config.get('ca', pki.CA_CERT), 'rb') as f:
            self.ca_pem = f.read()
        self._tokens = {}  # token digest -> (user, monotonic expiry)
        self.resources = resources.Resources(
            self.store, self.ca_pem, float(config.get('node_grace', 4.0)))

    def identity(self, headers):
        auth = headers.get('Authorization') or ''
        if not auth.startswith('Bearer '):
            return None
        token = auth[len('Bearer '):].strip()
        return self._known_token(token) or \
            controllers.bootstrap_token_user(self.store, token)

    def _known_token(self, token):
        """The token's user, remembered for TOKEN_CACHE_SECONDS: every
        kubelet heartbeat would otherwise cost one more etcd read. Tokens
        are never revoked in the lab; bootstrap tokens (which expire) are
        not cached."""
        digest = store_mod.token_digest(token)
        hit = self._tokens.get(digest)
        if hit and hit[1] > time.monotonic():
            return hit[0]
        who = self.store.lookup_token(token)
        if who:
            self._tokens[digest] = (
                who, time.monotonic() + TOKEN_CACHE_SECONDS)
        return who

    def authorize(self, method, path, who):
        if who is None:
            if not (method == 'GET' and path in (CLUSTER_INFO,)):
                raise objects.APIError(401, 'Unauthorized')
            return
        groups = set(who.get('groups', ()))
        if groups & ADMIN_GROUPS or 'system:nodes' in groups:
            return
        if 'system:bootstrappers' in groups and _bootstrap_may(method, path):
            return
        raise objects.APIError(403, 'User "%s" cannot %s %s'
                               % (who.get('user'), method.lower(), path),
                               reason='Forbidden')

    def handle(self, method, path, query, body, headers):
        path = '/' + path.strip('/')
        if path in PUBLIC_PATHS:
            return self.health(path)
        self.authorize(method, path, self.identity(headers))
        if path in ('/api', '/apis', '/api/v1') or (
                path.startswith('/apis/') and path.count('/') in (2, 3)):
            return 200, self.discovery(path)
        if path.startswith('/apis/%s/' % STANDIN_GROUP):
            return self.standin(method, path, body)
        route = parse_path(path)
        if route is None:
            raise objects.APIError(404, 'the server could not find the '
                                   'requested resource')
        return self.resource(method, route, query, body, headers)

    def health(self, path):
        if path == '/version':
            version = kube.kubernetes_version()
            major, minor = version.lstrip('v').split('.')[:2]
            return 200, {'major': major, 'minor': minor,
                         'gitVersion': version, 'platform': 'linux/amd64',
                         'goVersion': 'standin', 'compiler': 'gc',
                         'gitCommit': 'standin', 'gitTreeState': 'clean',
                         'buildDate': '2026-01-01T00:00:00Z'}
        if not self.store.healthy():
            return 500, '[-]etcd failed: etcd not healthy\n%s failed' % path
        return 200, 'ok'

    def _served(self):
        """{(group, version): [APIResource]}: the built-in resources and
        those the CustomResourceDefinitions define."""
        served = {}
        for plural, (group, version, kind, namespaced) in \
                objects.RESOURCES.items():
            served.setdefault((group, version), []).append({
                'name': plural, 'singularName': kind.lower(),
                'namespaced': namespaced, 'kind': kind,
                'verbs': ['create', 'delete', 'get', 'list', 'patch',
                          'update']})
        for crd in self.resources.definitions():
            for version in crds.served_versions(crd):
                served.setdefault((crd['spec']['group'], version), []).extend(
                    crds.discovery(crd, version))
        return served

    def discovery(self, path):
        if path == '/api':
            return {'kind': 'APIVersions', 'versions': ['v1'],
                    'serverAddressByClientCIDRs': []}
        served = self._served()
        groups = {}
        for group, version in served:
            if group:
                groups.setdefault(group, []).append(version)

        def group_entry(name):
            versions = [{'groupVersion': '%s/%s' % (name, v), 'version': v}
                        for v in sorted(groups[name],
                                        key=crds.version_priority)]
            return {'name': name, 'versions': versions,
                    'preferredVersion': versions[0]}
        if path == '/apis':
            return {'kind': 'APIGroupList', 'apiVersion': 'v1',
                    'groups': [group_entry(g) for g in sorted(groups)]}
        parts = path.split('/')[2:] if path.startswith('/apis/') \
            else ['', 'v1']
        if len(parts) == 1:
            if parts[0] not in groups:
                raise objects.no_resource()
            return dict(group_entry(parts[0]), kind='APIGroup',
                        apiVersion='v1')
        group, version = parts
        if (group, version) not in served:
            raise objects.no_resource()
        return {'kind': 'APIResourceList', 'apiVersion': 'v1',
                'groupVersion': objects.api_version(group, version),
                'resources': served[(group, version)]}

    def resource(self, method, route, query, body, headers):
        group, version, namespace, plural, name, sub = route
        res = self.resources
        info = res.resolve(group, version, plural)
        if namespace is not None and not info.namespaced:
            raise objects.no_resource()
        if namespace is None and info.namespaced and (
                name is not None or method != 'GET'):
            # Across namespaces a namespaced resource is only listed.
            if name is not None:
                raise objects.no_resource()
            raise objects.APIError(405, 'method %s not allowed on %s '
                                   'across namespaces' % (method, plural))
        if name is None:
            if method == 'GET':
                return 200, res.list(group, version, plural, namespace, query)
            if method == 'POST':
                return 201, res.create(group, version, plural, namespace,
                                       _json(body))
            raise objects.APIError(405, 'method %s not allowed on a '
                                   'collection' % method)
        if sub == 'eviction' and method == 'POST' and plural == 'pods':
            return 201, res.evict(namespace, name, _json(body))
        if method == 'GET':
            return 200, res.get(group, version, plural, namespace, name)
        if method == 'PUT':
            return 200, res.replace(group, version, plural, namespace, name,
                                    _json(body), sub)
        if method == 'PATCH':
            return 200, res.patch(group, version, plural, namespace, name,
                                  body, headers.get('Content-Type') or '',
                                  sub)
        if method == 'DELETE':
            return 200, res.delete(group, version, plural, namespace, name)
        raise objects.APIError(405, 'method %s not allowed' % method)

    def standin(self, method, path, body):
        what = path.rsplit('/', 1)[-1]
        if what == 'etcdmembers' and method == 'GET':
            return 200, {'members': self.store.members()}
        if what == 'nodecredentials' and method == 'POST':
            # TLS bootstrap, simplified: a node trades the bootstrap token
            # for a bearer token of its own.
            node = (_json(body) or {}).get('node')
            if not node:
                raise objects.APIError(422, 'node: Required value')
            token = pki.new_token()
            self.store.add_token(token, 'system:node:' + node,
                                 ['system:nodes', 'system:authenticated'])
            return 201, {'node': node, 'token': token}
        raise objects.APIError(404, 'no such stand-in endpoint %s' % path)


def _json(body):
    try:
        return json.loads(body or b'null')
    except ValueError as err:
        raise objects.APIError(400, 'the request body is not JSON: %s' % err)


class TLSServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address, api, context):
        self.api, self.context = api, context
        super().__init__(address, Handler)

    def finish_request(self, request, client_address):
        # The handshake runs in the request's thread, not the accept loop.
        request.settimeout(60)
        try:
            request = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        super().finish_request(request, client_address)


def serve(config):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(config['cert'], config['key'])
    server = TLSServer((config.get('bind', '0.0.0.0'),
                        int(config.get('port', kube.API_PORT))),
                       API(config), context)
    return server


def main(argv=None):
    parser = argparse.ArgumentParser(prog='kube-apiserver')
    parser.add_argument('--config', required=True)
    args = parser.parse_args(argv)
    config = kube.read_json(args.config)
    if config is None:
        kube.fail('kube-apiserver', 'no config %s' % args.config)
    if config.get('kubernetes_version'):
        os.environ[kube.VERSION_ENV] = config['kubernetes_version']
    server = serve(config)
    sys.stderr.write('kube-apiserver stand-in serving on %s:%s\n'
                     % server.server_address)
    sys.stderr.flush()
    server.serve_forever()


if __name__ == '__main__':
    main()
