"""Objects kept in a REAL etcd, through its v3 JSON gateway over HTTP.

Keys are ``/registry/<group>/<plural>/[<namespace>/]<name>``; an object's
``resourceVersion`` is the etcd ``mod_revision`` of its key, so every master
answers with the same data and the same versions. Writes that must not race
(create, update at a version) are etcd transactions.
"""

import base64
import hashlib
import json

REGISTRY = '/registry/'
TOKENS = '/standin/tokens/'


class StoreError(Exception):
    """etcd did not answer or refused the request."""


class Conflict(Exception):
    """The key exists (create) or changed since it was read (update)."""


def _b64(text):
    return base64.b64encode(text.encode()).decode()


def _unb64(text):
    return base64.b64decode(text).decode()


def _prefix_end(prefix):
    raw = bytearray(prefix.encode())
    raw[-1] += 1
    return base64.b64encode(bytes(raw)).decode()


class EtcdStore(object):
    """A JSON-document store over one etcd client URL (host, port)."""

    def __init__(self, host='127.0.0.1', port=2379, timeout=5.0):
        self.host, self.port, self.timeout = host, port, timeout

    def _call(self, path, body):
        import http.client  # here: importing the store must stay cheap
        conn = http.client.HTTPConnection(self.host, self.port,
                                          timeout=self.timeout)
        try:
            conn.request('POST', path, json.dumps(body),
                         {'Content-Type': 'application/json'})
            resp = conn.getresponse()
            data = resp.read()
        except OSError as err:
            raise StoreError('etcd at %s:%s: %s' % (self.host, self.port, err))
        finally:
            conn.close()
        if resp.status != 200:
            raise StoreError('etcd %s: HTTP %d %s'
                             % (path, resp.status, data[:300]))
        return json.loads(data or b'{}')

    # -- raw keys -----------------------------------------------------------

    def healthy(self):
        import http.client
        try:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=2)
            conn.request('GET', '/health')
            resp = conn.getresponse()
            return resp.status == 200 and b'true' in resp.read()
        except OSError:
            return False

    def revision(self):
        out = self._call('/v3/kv/range', {'key': _b64('/'), 'limit': 1,
                                          'count_only': True})
        return int(out['header']['revision'])

    def get(self, key):
        """(value dict, mod_revision) or (None, 0)."""
        kvs = self._call('/v3/kv/range', {'key': _b64(key)}).get('kvs', [])
        if not kvs:
            return None, 0
        return json.loads(_unb64(kvs[0]['value'])), int(kvs[0]['mod_revision'])

    def list(self, prefix):
        """([(key, value, mod_revision)], list revision)."""
        out = self._call('/v3/kv/range', {'key': _b64(prefix),
                                          'range_end': _prefix_end(prefix)})
        items = [(_unb64(kv['key']), json.loads(_unb64(kv['value'])),
                  int(kv['mod_revision'])) for kv in out.get('kvs', [])]
        return items, int(out['header']['revision'])

    def put(self, key, value):
        out = self._call('/v3/kv/put', {'key': _b64(key),
                                        'value': _b64(json.dumps(value))})
        return int(out['header']['revision'])

    def create(self, key, value):
        """Put only when the key does not exist; returns the revision."""
        return self._txn(key, value, {'target': 'CREATE',
                                      'create_revision': '0'})

    def update(self, key, value, mod_revision):
        """Put only when the key is still at ``mod_revision``."""
        return self._txn(key, value, {'target': 'MOD',
                                      'mod_revision': str(mod_revision)})

    def _txn(self, key, value, compare):
        compare = dict(compare, key=_b64(key), result='EQUAL')
        put = {'request_put': {'key': _b64(key),
                               'value': _b64(json.dumps(value))}}
        out = self._call('/v3/kv/txn', {'compare': [compare],
                                        'success': [put]})
        if not out.get('succeeded'):
            raise Conflict(key)
        return int(out['header']['revision'])

    def transaction(self, puts, deletes, versions, prefixes=()):
        """Put ``puts`` {key: value} and delete ``deletes`` in one
        transaction, only when every key of ``versions`` {key: mod_revision}
        is unchanged and no key under a ``prefixes`` (prefix, revision) was
        written after that revision; raises Conflict otherwise."""
        compares = [{'key': _b64(k), 'target': 'MOD', 'result': 'EQUAL',
                     'mod_revision': str(v)} for k, v in versions.items()]
        compares += [{'key': _b64(p), 'range_end': _prefix_end(p),
                      'target': 'MOD', 'result': 'LESS',
                      'mod_revision': str(rev + 1)} for p, rev in prefixes]
        ops = [{'request_put': {'key': _b64(k), 'value': _b64(json.dumps(v))}}
               for k, v in puts.items()]
        ops += [{'request_delete_range': {'key': _b64(k)}} for k in deletes]
        out = self._call('/v3/kv/txn', {'compare': compares,
                                        'success': ops})
        if not out.get('succeeded'):
            raise Conflict(', '.join(sorted(versions)))
        return int(out['header']['revision'])

    def delete(self, key):
        out = self._call('/v3/kv/deleterange', {'key': _b64(key)})
        return int(out.get('deleted', 0))

    def members(self):
        """[{name, peerURLs, clientURLs, ID}] of the etcd cluster."""
        out = self._call('/v3/cluster/member/list', {})
        return [{'name': m.get('name', ''), 'id': m.get('ID'),
                 'peer_urls': m.get('peerURLs', []),
                 'client_urls': m.get('clientURLs', [])}
                for m in out.get('members', [])]

    def remove_member(self, member_id):
        """Remove member ``member_id`` (an ``id`` of members())."""
        self._call('/v3/cluster/member/remove', {'ID': member_id})

    # -- credentials ----------------------------------------------------------

    def add_token(self, token, user, groups):
        """Index a bearer token (by its SHA-256, never the token itself)."""
        self.put(TOKENS + token_digest(token),
                 {'user': user, 'groups': list(groups)})

    def lookup_token(self, token):
        value, _ = self.get(TOKENS + token_digest(token))
        return value


def token_digest(token):
    return hashlib.sha256(token.encode()).hexdigest()


def object_key(group, plural, namespace, name):
    parts = [group or 'core', plural] + ([namespace] if namespace else [])
    return REGISTRY + '/'.join(parts + [name])


def collection_prefix(group, plural, namespace=None):
    parts = [group or 'core', plural] + ([namespace] if namespace else [])
    return REGISTRY + '/'.join(parts) + '/'
