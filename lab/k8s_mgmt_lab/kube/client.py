"""A small HTTPS client of the API server stand-in, for the other stand-ins
(kubeadm, kubelet, kubectl): standard library only, so they start fast."""

import json
import urllib.parse

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab.kube import pki


class APIFailure(Exception):
    def __init__(self, status, body):
        self.status, self.body = status, body
        message = body.get('message') if isinstance(body, dict) else body
        super().__init__('HTTP %s: %s' % (status, message))


def _as_oserror(err):
    """http.client's protocol errors as OSError, what callers catch."""
    return err if isinstance(err, OSError) else ConnectionError(
        '%s: %s' % (type(err).__name__, err))


class Client(object):
    """``keep_alive``: reuse one connection (the kubelet's heartbeats: a TLS
    handshake a second per node was most of the API server's idle work)."""

    def __init__(self, server, ca_pem=None, token=None, timeout=10.0,
                 keep_alive=False):
        url = urllib.parse.urlsplit(server)
        self.host, self.port = url.hostname, url.port or 443
        self.token, self.timeout = token, timeout
        self.keep_alive, self._conn = keep_alive, None
        import ssl  # with http.client below: ~20 ms a "version" never needs
        if ca_pem is None:  # discovery before the CA is trusted
            self.context = ssl._create_unverified_context()
        else:
            self.context = ssl.create_default_context(
                cadata=ca_pem.decode() if isinstance(ca_pem, bytes)
                else ca_pem)

    @classmethod
    def from_kubeconfig(cls, path, timeout=10.0, keep_alive=False):
        server, ca_pem, token = pki.read_kubeconfig(path)
        return cls(server, ca_pem, token, timeout, keep_alive)

    def request(self, method, path, body=None,
                content_type='application/json'):
        """(status, JSON body or text); raises OSError when unreachable."""
        import http.client
        headers = {'Accept': 'application/json'}
        if self.token:
            headers['Authorization'] = 'Bearer ' + self.token
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body)
            headers['Content-Type'] = content_type
        reused = self._conn is not None
        try:
            resp, raw = self._exchange(method, path, data, headers)
        except (OSError, http.client.HTTPException) as err:
            if not reused:
                raise _as_oserror(err)
            # The server closed the idle connection: one fresh attempt.
            try:
                resp, raw = self._exchange(method, path, data, headers)
            except (OSError, http.client.HTTPException) as again:
                raise _as_oserror(again)
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw.decode(errors='replace')

    def _exchange(self, method, path, data, headers):
        import http.client
        conn = self._conn or http.client.HTTPSConnection(
            self.host, self.port, timeout=self.timeout, context=self.context)
        self._conn = None
        try:
            conn.request(method, path, data, headers)
            resp = conn.getresponse()
            raw = resp.read()
        except BaseException:
            conn.close()
            raise
        if self.keep_alive and not resp.will_close:
            self._conn = conn
        else:
            conn.close()
        return resp, raw

    def call(self, method, path, body=None, ok=(200, 201),
             content_type='application/json'):
        status, answer = self.request(method, path, body, content_type)
        if status not in ok:
            raise APIFailure(status, answer)
        return answer

    def wait_ready(self, timeout):
        """Poll /readyz with backoff until it answers ok, for at most
        ``timeout`` seconds; returns True when ready."""
        for _ in Poll(timeout, first=0.05, maximum=1.0):
            try:
                status, _ = self.request('GET', '/readyz')
                if status == 200:
                    return True
            except OSError:  # ssl.SSLError is an OSError
                pass
        return False
