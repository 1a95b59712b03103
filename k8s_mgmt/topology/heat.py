"""Reading the topology from Heat with python-heatclient.

One nested resource listing, then only the resources whose attributes the
builder needs, fetched concurrently. Inside Tacker the keystoneauth session
comes from the VIM Tacker resolved for the instance (:func:`session_for_vim`);
standalone from explicit settings (:func:`session_from_settings`).

Every request (Keystone and Heat alike) is bounded by ``[k8s_mgmt]
api_timeout``: an endpoint that accepts the connection and never answers
ends in a :class:`~k8s_mgmt.exceptions.TopologyError` naming the service
and the call, not in a hung operation.
"""

import concurrent.futures
import sys

from heatclient import client as heat_client
from heatclient import exc as heat_exc
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session
from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.topology import builder

LOG = logging.getLogger(__name__)

# Depth 2 reaches the servers and ports inside AutoScalingGroup members:
# top stack -> group stack -> member stacks.
DEFAULT_NESTED_DEPTH = 2
DEFAULT_MAX_CONCURRENCY = 8

_CLIENT_ERRORS = (heat_exc.BaseException, ks_exc.ClientException)


def _truthy(value, default=True):
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() not in ('false', '0', 'no', 'off', '')
    return bool(value)


def api_timeout():
    """Seconds one OpenStack API request may take (``api_timeout``)."""
    return conf.CONF.k8s_mgmt.api_timeout


def session_from_settings(auth_url, username, password, project_name,
                          user_domain_name='Default',
                          project_domain_name='Default', verify=True,
                          project_id=None, timeout=None):
    """A keystoneauth session from explicit Keystone v3 password settings.

    Every request through it, the token request included, gives up after
    ``timeout`` seconds (default ``[k8s_mgmt] api_timeout``).
    """
    auth = v3.Password(auth_url=auth_url, username=username,
                       password=secrets.reveal(password),
                       project_name=None if project_id else project_name,
                       project_id=project_id,
                       user_domain_name=user_domain_name,
                       project_domain_name=(None if project_id
                                            else project_domain_name))
    return ks_session.Session(auth=auth, verify=verify,
                              timeout=timeout or api_timeout())


def bound_session(session):
    """``session`` with a request timeout: its own, else ``api_timeout``.

    A session made elsewhere (by a caller, or one day handed over by Tacker)
    may have none, and keystoneauth then waits for an answer forever.
    """
    if getattr(session, 'timeout', None) is None:
        session.timeout = float(api_timeout())
    return session


def failure(service, call, err, timeout=None):
    """A TopologyError naming the service and the call that failed."""
    if isinstance(err, ks_exc.ConnectTimeout):
        # keystoneauth raises ConnectTimeout for connect and read timeouts.
        detail = 'no answer within %.0f s (%s)' % (timeout or api_timeout(),
                                                   err)
    else:
        detail = '%s: %s' % (type(err).__name__, err)
    return exceptions.TopologyError(reason='%s: %s: %s'
                                    % (service, call, detail))


def _vim_auth(vim_info):
    """The auth dict out of what Tacker hands around for a VIM.

    Accepts ``vnflcm_utils._get_vim()`` output (``access_info``),
    ``VimClient.get_vim()`` output (``vim_auth``) or the auth dict itself.
    """
    for key in ('access_info', 'vim_auth'):
        if isinstance(vim_info.get(key), dict):
            return vim_info[key]
    return vim_info


def session_for_vim(vim_info):
    """(session, region_name) for an OpenStack VIM as Tacker resolves it.

    Tacker's VIM auth dict holds ``auth_url``, ``username``, ``password``,
    ``project_id``/``project_name``, ``user_domain_name``,
    ``project_domain_name``, ``cert_verify`` (a string ``'True'``/``'False'``)
    and, from ``_get_vim``, ``region``.
    """
    auth = _vim_auth(vim_info or {})
    missing = [k for k in ('auth_url', 'username', 'password') if not
               auth.get(k)]
    if not (auth.get('project_id') or auth.get('project_name')):
        missing.append('project_id or project_name')
    if missing:
        raise exceptions.TopologyError(
            reason='VIM auth for Heat lacks %s' % ', '.join(missing))
    session = session_from_settings(
        auth_url=auth['auth_url'], username=auth['username'],
        password=secrets.Secret(secrets.reveal(auth['password'])),
        project_name=auth.get('project_name'),
        project_id=auth.get('project_id'),
        user_domain_name=auth.get('user_domain_name') or 'Default',
        project_domain_name=auth.get('project_domain_name') or 'Default',
        verify=_truthy(auth.get('cert_verify'), default=True))
    return session, auth.get('region') or None


def vim_info_for_instance(context, vnf_instance):
    """Tacker's VIM for the instance (needs tacker; imported here only)."""
    from tacker.vnflcm import utils as vnflcm_utils  # noqa: optional extra
    return vnflcm_utils._get_vim(context, vnf_instance.vim_connection_info)


def _field(obj, *names):
    for name in names:
        if isinstance(obj, dict):
            if obj.get(name) is not None:
                return obj[name]
        elif getattr(obj, name, None) is not None:
            return getattr(obj, name)
    return None


def top_stack_id(vnf_instance):
    """The Heat stack of the VNF: ``instantiated_vnf_info.instance_id``."""
    info = _field(vnf_instance, 'instantiated_vnf_info', 'instantiatedVnfInfo')
    return _field(info, 'instance_id', 'instanceId') if info else None


def vnfc_ids_from_instance(vnf_instance):
    """server id -> VNFC id from the instance's ``vnfc_resource_info``.

    Works with Tacker objects and with dicts (snake_case or camelCase).
    """
    info = _field(vnf_instance, 'instantiated_vnf_info', 'instantiatedVnfInfo')
    vnfcs = _field(info, 'vnfc_resource_info', 'vnfcResourceInfo') or ()
    mapping = {}
    for vnfc in vnfcs:
        compute = _field(vnfc, 'compute_resource', 'computeResource')
        server_id = _field(compute, 'resource_id', 'resourceId')
        if server_id:
            mapping[server_id] = _field(vnfc, 'id')
    return mapping


def run_bounded(func, items, limit):
    """``[func(i) for i in items]`` with at most ``limit`` running at once.

    Green threads when eventlet has patched threading (tacker-conductor),
    OS threads otherwise (CLI). Exceptions are returned, not raised.
    """
    def guarded(item):
        try:
            return func(item)
        except Exception as err:  # collected and reported by the caller
            return err

    items = list(items)
    if not items:
        return []
    limit = max(1, min(limit, len(items)))
    if _eventlet_patched():
        import eventlet
        # spawn() blocks only while the pool is full; GreenPool.imap would
        # also wait for results to be consumed in order (head-of-line).
        pool = eventlet.GreenPool(limit)
        threads = [pool.spawn(guarded, item) for item in items]
        return [thread.wait() for thread in threads]
    with concurrent.futures.ThreadPoolExecutor(max_workers=limit) as pool:
        return list(pool.map(guarded, items))


def _eventlet_patched():
    # Not imported means not patched; importing it here would cost ~0.3 s.
    if 'eventlet' not in sys.modules:
        return False
    from eventlet import patcher
    return patcher.is_monkey_patched('thread')


class HeatReader(object):
    """Reads a VNF's topology from Heat over a keystoneauth session."""

    def __init__(self, session, region_name=None, endpoint_override=None,
                 nested_depth=DEFAULT_NESTED_DEPTH,
                 max_concurrency=DEFAULT_MAX_CONCURRENCY):
        self._session = bound_session(session)
        kwargs = {'session': session}
        if region_name:
            kwargs['region_name'] = region_name
        if endpoint_override:
            kwargs['endpoint_override'] = endpoint_override
        self._client = heat_client.Client('1', **kwargs)
        self._nested_depth = nested_depth
        self._max_concurrency = max_concurrency

    def authenticate(self):
        """Get the Keystone token now, so a failure names Keystone."""
        auth = getattr(self._session, 'auth', None)
        if auth is None:
            return
        try:
            self._session.get_token()
        except ks_exc.ClientException as err:
            raise failure('Keystone', 'authenticate at %s'
                          % getattr(auth, 'auth_url', '?'), err,
                          self._session.timeout)

    def list_resources(self, stack_id):
        """The one nested listing, as plain dicts."""
        try:
            items = self._client.resources.list(
                stack_id, nested_depth=self._nested_depth)
        except _CLIENT_ERRORS as err:
            raise failure('Heat', 'list resources of stack %s' % stack_id,
                          err, self._session.timeout)
        return [item.to_dict() for item in items]

    def show_resources(self, keys, refs):
        """{(stack_id, name): resource dict} for each key, concurrently."""
        def show(key):
            stack_id, name = key
            return self._client.resources.get(refs.get(stack_id, stack_id),
                                              name).to_dict()

        results = run_bounded(show, keys, self._max_concurrency)
        failures = []
        for (stack_id, name), result in zip(keys, results):
            if isinstance(result, ks_exc.ConnectTimeout):
                failures.append('%s in stack %s: no answer within %.0f s' % (
                    name, stack_id, self._session.timeout))
            elif isinstance(result, _CLIENT_ERRORS):
                failures.append('%s in stack %s: %s: %s' % (
                    name, stack_id, type(result).__name__, result))
            elif isinstance(result, Exception):
                raise result
        if failures:
            raise exceptions.TopologyError(
                reason='Heat: show %d resource(s) failed: %s'
                       % (len(failures), '; '.join(failures)))
        return dict(zip(keys, results))

    def read_topology(self, spec, stack_id, vnfc_ids=None):
        """The topology of stack ``stack_id`` (a bare id, as Tacker stores
        it, or ``name/id``, which spares Heat's lookup redirect)."""
        stack_ref, stack_id = stack_id, stack_id.rstrip('/').rsplit('/', 1)[-1]
        self.authenticate()
        resources = self.list_resources(stack_ref)
        keys = builder.needed_details(spec, stack_id, resources)
        LOG.debug('Stack %s: %d resources listed, showing %d',
                  stack_id, len(resources), len(keys))
        details = self.show_resources(keys, builder.stack_refs(resources))
        return builder.build_topology(spec, stack_id, resources, details,
                                      vnfc_ids=vnfc_ids)


def read_instance_topology(context, vnf_instance, spec, vim_info=None,
                           **reader_kwargs):
    """The topology of a Tacker VNF instance, VNFC ids filled in.

    ``vim_info`` defaults to the VIM Tacker resolves for the instance (after
    terminate, Tacker has emptied vim_connection_info: the default VIM).
    """
    stack_id = top_stack_id(vnf_instance)
    if not stack_id:
        raise exceptions.TopologyError(
            reason='the VNF instance has no Heat stack '
                   '(instantiated_vnf_info.instance_id is empty)')
    if vim_info is None:
        vim_info = vim_info_for_instance(context, vnf_instance)
    session, region = session_for_vim(vim_info)
    reader = HeatReader(session, region_name=region, **reader_kwargs)
    return reader.read_topology(spec, stack_id,
                                vnfc_ids=vnfc_ids_from_instance(vnf_instance))
