"""Requests to Tacker's API over a keystoneauth1 session, each with a
timeout; whatever goes wrong comes back as one :class:`TackerApiError`.

The endpoint is the catalog's ``nfv-orchestration`` service unless a URL
is given. Paths are relative to it (``vnflcm/v1/vnf_instances``).
"""

import re

from keystoneauth1 import adapter
from keystoneauth1 import exceptions as ks_exc

from k8s_mgmt_lab.tacker_api.errors import detail_of
from k8s_mgmt_lab.tacker_api.errors import one_line
from k8s_mgmt_lab.tacker_api.errors import TackerApiError

SERVICE_TYPE = 'nfv-orchestration'
REGION = 'RegionOne'
# Seconds one request may take; Tacker answers API calls at once and
# leaves the work to its conductor.
REQUEST_TIMEOUT = 30.0
# The socket's own words at the end of what requests says, or the
# innermost exception's ("Remote end closed connection without response").
_ERRNO = re.compile(r'\[Errno -?\d+\] ([^"\'()]+)')
_INNER = re.compile(r"\w+\('([^'()]+)'\)")
# Attempts of a GET whose connection broke: a kept-alive connection the
# server closed just as it was reused breaks the first.
GET_ATTEMPTS = 2


class Rest(object):
    """One Tacker endpoint reached through ``session``."""

    def __init__(self, session, url=None, timeout=REQUEST_TIMEOUT,
                 region=REGION, interface='public', headers=None):
        self.adapter = adapter.Adapter(
            session, service_type=SERVICE_TYPE, interface=interface,
            region_name=region, endpoint_override=url,
            additional_headers=dict(headers or {}))
        self.timeout = timeout

    def endpoint(self):
        """Tacker's URL: the one given, else the catalog's."""
        try:
            url = self.adapter.get_endpoint()
        except ks_exc.EndpointNotFound:
            url = None
        except ks_exc.ClientException as error:
            raise _unreachable('find Tacker', error, self.timeout)
        if not url:
            raise self._not_in_catalog('find Tacker')
        return url

    def call(self, operation, method, path, expect, op_id=None,
             timeout=None, **kwargs):
        """The response to ``method path`` when its status is in
        ``expect``; else TackerApiError naming ``operation`` (and
        ``op_id``) with Tacker's reason."""
        timeout = timeout or self.timeout
        attempts = GET_ATTEMPTS if method == 'GET' else 1
        for attempt in range(1, attempts + 1):
            try:
                response = self.adapter.request(
                    path, method, raise_exc=False, timeout=timeout, **kwargs)
                break
            except ks_exc.EndpointNotFound:
                raise self._not_in_catalog(operation, op_id)
            except ks_exc.ConnectTimeout as error:
                raise _unreachable(operation, error, timeout, op_id)
            except ks_exc.ConnectFailure as error:
                if attempt == attempts:
                    raise _unreachable(operation, error, timeout, op_id)
            except ks_exc.ClientException as error:
                raise _unreachable(operation, error, timeout, op_id)
        if response.status_code not in expect:
            raise TackerApiError(operation, detail_of(response.content),
                                 op_id=op_id, status=response.status_code)
        return response

    def _not_in_catalog(self, operation, op_id=None):
        return TackerApiError(
            operation, 'Keystone\'s catalog has no %s endpoint in %s (is '
                       'Tacker in the control plane?)'
            % (SERVICE_TYPE, self.adapter.region_name), op_id=op_id)

    def all_records(self, operation, path, filter=None):
        """Every record under ``path`` (v1's ``all_records``: one page;
        v2 pages only when its operator sets a page size), filtered by a
        Tacker filter expression when one is given."""
        params = {} if '/v2/' in '/%s/' % path else {'all_records': 'yes'}
        if filter:
            params['filter'] = filter
        return self.json(operation, 'GET', path, params=params)

    def json(self, operation, method, path, expect=(200,), **kwargs):
        """The JSON body of the response to ``method path``."""
        response = self.call(operation, method, path, expect, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise TackerApiError(operation, 'Tacker answered HTTP %d with '
                                            'no JSON body: %s'
                                 % (response.status_code,
                                    one_line(response.text, 80)),
                                 op_id=kwargs.get('op_id'))


def _unreachable(operation, error, timeout, op_id=None):
    if isinstance(error, ks_exc.ConnectTimeout):
        return TackerApiError(operation, 'no answer within %g s' % timeout,
                              op_id=op_id)
    if isinstance(error, ks_exc.ConnectFailure):
        return TackerApiError(operation, 'cannot connect: %s'
                              % _last_reason(str(error)), op_id=op_id)
    return TackerApiError(operation, str(error), op_id=op_id)


def _last_reason(text):
    """"Connection refused" out of the nested text requests gives."""
    found = _ERRNO.search(text) or _INNER.search(text)
    return found.group(1).strip() if found else text


def op_id_from(response, operation):
    """The operation occurrence a 202 started: the last part of the
    ``Location`` Tacker answers with (its host is Tacker's configured
    ``[vnf_lcm] endpoint_url``, not necessarily the one called)."""
    location = response.headers.get('Location', '').rstrip('/')
    op_id = location.rsplit('/', 1)[-1]
    if '/vnf_lcm_op_occs/' not in location or not op_id:
        raise TackerApiError(operation, 'Tacker accepted it but named no '
                                        'operation occurrence (Location: '
                                        '%r)' % location)
    return op_id
