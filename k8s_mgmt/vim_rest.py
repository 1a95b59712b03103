"""The cluster registered as a Kubernetes VIM through Tacker's REST API.

Under Tacker's v2 API a hook is a script: it gets no request context, so
the NFVO plugin the v1 driver calls in-process is out of reach, and v2
refuses a second ``vimConnectionInfo`` on the instance. What an operator
would do by hand is left: ``POST /v1.0/vims`` (``openstack vim register``),
here with the VNF's own OpenStack credentials (the instance's VIM
connection), so the Kubernetes VIM belongs to the project that owns the
VNF and its CNF users see it. Tacker's endpoint is the Keystone catalog's
``nfv-orchestration`` service.

The instance owns the one VIM whose id it recorded
(:func:`k8s_mgmt.vim_owner.register_vim`): a re-run reuses it, terminate
deletes that id alone, and another VIM under the name is a clash, refused,
never adopted (an admin's listing shows every project's).

Tacker's API never shows a VIM's token again, so :meth:`registered`
answers None and the driver reads the credentials from a master, as it
does after any loss. The bearer token goes only into the POST body, over
the session; errors quote Tacker's reason, never the body.
"""

from keystoneauth1 import adapter
from keystoneauth1 import exceptions as ks_exc
from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt import vim as vim_mod
from k8s_mgmt import vim_owner

LOG = logging.getLogger(__name__)

SERVICE_TYPE = 'nfv-orchestration'
VIMS = 'v1.0/vims'
REQUEST_TIMEOUT = 60.0


class RestVimRegistrar(object):
    """A Kubernetes VIM in Tacker, through its REST API over ``session``
    (a keystoneauth1 session for the VNF's project)."""

    where = 'Tacker (VIM API)'
    kind = 'tacker'

    def __init__(self, session, vnf_instance_id, region=None,
                 endpoint=None, timeout=REQUEST_TIMEOUT, project_id=None):
        self.api = adapter.Adapter(session, service_type=SERVICE_TYPE,
                                   interface='public', region_name=region,
                                   endpoint_override=endpoint)
        self.vnf_instance_id = vnf_instance_id
        self.timeout = timeout
        self._project_id = project_id

    @property
    def project_id(self):
        """The project of the session (the VNF's), or None when
        Keystone cannot tell."""
        if self._project_id is None:
            try:
                self._project_id = self.api.get_project_id()
            except Exception as err:  # only narrows what is deleted
                LOG.warning('the project of the VNF\'s credentials is '
                            'unknown (%s)', type(err).__name__)
        return self._project_id

    def _call(self, what, method, path, expect, **kwargs):
        try:
            response = self.api.request(path, method, raise_exc=False,
                                        timeout=self.timeout, **kwargs)
        except ks_exc.ClientException as err:
            raise exceptions.MgmtDriverError(error_message='%s: Tacker\'s '
                                             'VIM API unreachable: %s'
                                             % (what, _short(err)))
        if response.status_code not in expect:
            raise exceptions.MgmtDriverError(
                error_message='%s: Tacker answered HTTP %d: %s'
                % (what, response.status_code, _reason(response)))
        return response

    def named(self, name):
        """The VIMs Tacker lists under ``name`` for this project."""
        response = self._call('list VIMs named %s' % name, 'GET', VIMS,
                              (200,), params={'name': name})
        return [v for v in response.json().get('vims') or ()
                if v.get('name') == name]

    def body(self, record):
        return {'vim': {
            'name': record.name, 'type': vim_mod.VIM_TYPE,
            'description': vim_owner.vim_description(self.vnf_instance_id),
            'auth_url': record.endpoint,
            'auth_cred': {'bearer_token': record.bearer_token.reveal(),
                          'ssl_ca_cert': record.ssl_ca_cert},
            'vim_project': {'name': record.project_name},
            'is_default': False, **vim_mod.extra(record)}}

    def check_name(self, name, owned=None):
        """Refuse ``name`` when another VIM than ``owned`` holds it."""
        return vim_owner.owned_vim(self.named(name), name, owned)

    def register(self, record, owned=None):
        """Register ``record``; the VIM ``owned`` (the id the instance
        recorded) is reused on a re-run; another VIM under the name is a
        clash, refused."""
        found = self.check_name(record.name, owned)
        if found:
            LOG.info('VIM %s already registered as %s', record.name,
                     found['id'])
            return {'vim_id': found['id']}
        response = self._call('register VIM %s' % record.name, 'POST',
                              VIMS, (201,), json=self.body(record))
        vim_id = response.json()['vim']['id']
        LOG.info('Registered VIM %s (%s) as %s', record.name,
                 record.endpoint, vim_id)
        return {'vim_id': vim_id}

    def registered(self, name):
        """None: Tacker's API does not give a VIM's token back."""
        return None

    def unregister(self, name, owned=None):
        """Delete the VIM ``owned`` (gone already is fine), else only what
        :func:`k8s_mgmt.vim_owner.legacy_owned` proves the instance's."""
        if owned:
            targets = [owned]
        else:
            targets = vim_owner.legacy_owned(
                self.named(name), name, self.vnf_instance_id,
                self.project_id)
        deleted = []
        for vim_id in targets:
            response = self._call('delete VIM %s (%s)' % (name, vim_id),
                                  'DELETE', '%s/%s' % (VIMS, vim_id),
                                  (204, 404))
            if response.status_code == 404:
                LOG.info('VIM %s (%s) is gone already', name, vim_id)
                continue
            LOG.info('Deleted VIM %s (%s)', name, vim_id)
            deleted.append(vim_id)
        return {'vims_deleted': deleted}


def _reason(response):
    """Tacker's own words: its NeutronError/ProblemDetails message, else
    the start of the body; never a request's content."""
    try:
        data = response.json()
    except ValueError:
        return secrets.redact(' '.join(response.text.split())[:200])
    if isinstance(data, dict):
        for key in ('TackerError', 'NeutronError', 'error'):
            inner = data.get(key)
            if isinstance(inner, dict) and inner.get('message'):
                return secrets.redact(str(inner['message'])[:300])
        for key in ('detail', 'message', 'title'):
            if data.get(key):
                return secrets.redact(str(data[key])[:300])
    return secrets.redact(str(data)[:200])


def _short(err):
    return ' '.join(str(err).split())[:200]
