"""Tokens checked as keystonemiddleware checks them: every request's
``X-Auth-Token`` is validated against Keystone (``GET /v3/auth/tokens``
with ``X-Subject-Token``, asked with the stand-in's own admin session),
and a valid one is remembered for a short while so Heat's polling does
not double Keystone's load. Tokens are kept only as hashes."""

import collections
import hashlib
import threading
import time

from k8s_mgmt_lab.openstack.iaas import model

CACHE_SECONDS = 60.0


class Caller(collections.namedtuple('Caller',
                                    'user_id project_id roles')):
    """Who a valid token speaks for."""

    @property
    def is_admin(self):
        return 'admin' in self.roles


class Unauthorized(model.IaasError):
    status = 401
    kind = 'Unauthorized'


class KeystoneTokens(object):
    """``caller(token)``: the Caller, or Unauthorized.

    ``session`` is a keystoneauth1 session of a user allowed to validate
    tokens (the admin, or a service user).
    """

    def __init__(self, session, keystone_url, cache_seconds=CACHE_SECONDS,
                 clock=time.monotonic):
        self.session = session
        self.url = keystone_url.rstrip('/') + '/auth/tokens'
        self.cache_seconds = cache_seconds
        self._clock = clock
        self._cache = {}
        self._lock = threading.Lock()

    def caller(self, token):
        if not token:
            raise Unauthorized('The request you have made requires '
                               'authentication.')
        key = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            cached = self._cache.get(key)
            if cached and cached[0] > self._clock():
                return cached[1]
        answer = self.session.get(self.url, raise_exc=False,
                                  headers={'X-Subject-Token': token})
        if answer.status_code in (401, 403, 404):
            raise Unauthorized('The request you have made requires '
                               'authentication.')
        if answer.status_code != 200:
            raise model.IaasError('The token could not be validated: '
                                  'Keystone answered %d.'
                                  % answer.status_code)
        found = answer.json()['token']
        caller = Caller(found['user']['id'],
                        (found.get('project') or {}).get('id', ''),
                        tuple(r['name'] for r in found.get('roles', ())))
        with self._lock:
            if len(self._cache) > 1000:
                self._cache.clear()
            self._cache[key] = (self._clock() + self.cache_seconds, caller)
        return caller


class StaticTokens(object):
    """Tokens known in advance (``{token: Caller}``), for tests that run
    no Keystone."""

    def __init__(self, callers):
        self.callers = dict(callers)

    def caller(self, token):
        found = self.callers.get(token or '')
        if found is None:
            raise Unauthorized('The request you have made requires '
                               'authentication.')
        return found
