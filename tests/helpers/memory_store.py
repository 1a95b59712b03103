"""The etcd store of the API server stand-in kept in memory, with etcd's
revisions and transactions, for unit tests of the API server's logic
that need no real etcd (``tests/helpers/standin_api.py`` runs the real
one)."""

import json
import threading

from k8s_mgmt_lab.kube import store as store_mod


class MemoryStore(store_mod.EtcdStore):
    """EtcdStore's interface over a dict: values as JSON text (what etcd
    keeps), a revision per write, Conflict as etcd's failed compares."""

    def __init__(self):
        super().__init__('memory', 0)
        self._data = {}           # key -> (JSON text, mod_revision)
        self._revision = 1
        self._lock = threading.Lock()

    def _call(self, path, body):
        raise AssertionError('MemoryStore reached etcd: %s' % path)

    def healthy(self):
        return True

    def revision(self):
        return self._revision

    def get(self, key):
        with self._lock:
            found = self._data.get(key)
        if found is None:
            return None, 0
        return json.loads(found[0]), found[1]

    def list(self, prefix):
        with self._lock:
            items = [(key, json.loads(text), mod)
                     for key, (text, mod) in sorted(self._data.items())
                     if key.startswith(prefix)]
            return items, self._revision

    def _put(self, key, value):
        self._revision += 1
        self._data[key] = (json.dumps(value), self._revision)
        return self._revision

    def put(self, key, value):
        with self._lock:
            return self._put(key, value)

    def create(self, key, value):
        with self._lock:
            if key in self._data:
                raise store_mod.Conflict(key)
            return self._put(key, value)

    def update(self, key, value, mod_revision):
        with self._lock:
            if key not in self._data or \
                    self._data[key][1] != int(mod_revision):
                raise store_mod.Conflict(key)
            return self._put(key, value)

    def transaction(self, puts, deletes, versions, prefixes=()):
        with self._lock:
            for key, revision in versions.items():
                if self._data.get(key, (None, 0))[1] != int(revision):
                    raise store_mod.Conflict(key)
            for prefix, revision in prefixes:
                if any(mod > revision for key, (_, mod) in self._data.items()
                       if key.startswith(prefix)):
                    raise store_mod.Conflict(prefix)
            self._revision += 1
            for key, value in puts.items():
                self._data[key] = (json.dumps(value), self._revision)
            for key in deletes:
                self._data.pop(key, None)
            return self._revision

    def delete(self, key):
        with self._lock:
            if self._data.pop(key, None) is None:
                return 0
            self._revision += 1
            return 1


ADMIN_TOKEN = 'unit-admin-token'


def memory_api(namespaces=('default', 'kube-system')):
    """The API server stand-in's request handling (authentication,
    routing, discovery, resources) over a MemoryStore, with an admin
    token (ADMIN_TOKEN) and ``namespaces``; no socket, no TLS."""
    from k8s_mgmt_lab.kube import apiserver
    from k8s_mgmt_lab.kube import resources
    api = apiserver.API.__new__(apiserver.API)
    api.config = {}
    api.store = MemoryStore()
    api.ca_pem = b''
    api._tokens = {}
    api.resources = resources.Resources(api.store, api.ca_pem, 3600.0)
    api.store.add_token(ADMIN_TOKEN, 'admin', ['system:masters'])
    for name in namespaces:
        api.resources.create('', 'v1', 'namespaces', None,
                             {'metadata': {'name': name}})
    return api


class InProcessClient(object):
    """k8s_mgmt_lab.kube.client.Client's request/call on ``api`` (a
    memory_api) in this process: what the kubectl stand-in sends, as the
    HTTP handler would answer it."""

    def __init__(self, api, token=ADMIN_TOKEN):
        self.api, self.token = api, token
        self.requests = []

    def request(self, method, path, body=None,
                content_type='application/json'):
        import urllib.parse
        from k8s_mgmt_lab.kube import objects
        self.requests.append((method, path))
        url = urllib.parse.urlsplit(path)
        data = b'' if body is None else (
            body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {'Authorization': 'Bearer ' + self.token,
                   'Content-Type': content_type}
        try:
            return self.api.handle(method, url.path,
                                   dict(urllib.parse.parse_qsl(url.query)),
                                   data, headers)
        except objects.APIError as err:
            return err.code, err.status()

    def call(self, method, path, body=None, ok=(200, 201),
             content_type='application/json'):
        from k8s_mgmt_lab.kube import client
        status, answer = self.request(method, path, body, content_type)
        if status not in ok:
            raise client.APIFailure(status, answer)
        return answer
