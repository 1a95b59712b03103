"""Registering the new cluster as a Kubernetes VIM.

One record (:class:`VimRecord`: name, API endpoint, bearer token, CA) and
three ways to register it, each with the same four members (``where`` and
``kind`` for the plan, ``register``, ``registered`` and ``unregister``):

* :class:`TackerVimRegistrar` - inside Tacker: a ``kubernetes`` VIM through
  Tacker's NFVO plugin and a ``kubernetes`` VimConnectionInfo appended to the
  instance (Tacker saves the instance after the hook). Imports Tacker only
  when used.
* :class:`FileVimRegistrar` - outside Tacker: a kubeconfig and a VIM config
  file for ``openstack vim register --config-file`` in the instance's state
  directory, both mode 0600 and pointing at the same endpoint.
* :class:`k8s_mgmt.vim_rest.RestVimRegistrar` - under Tacker's v2 API,
  which gives a script no request context: Tacker's VIM REST API with the
  VNF's own OpenStack credentials.

A VIM in Tacker is owned by id, never by name (:mod:`k8s_mgmt.vim_owner`).

:func:`registrar_for` picks one: the operation's own (v2), else by whether
a real Tacker context was given.
"""

import base64
import dataclasses
import os
import uuid

import yaml
from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt import state as state_mod
from k8s_mgmt import vim_owner
from k8s_mgmt.tacker_objects import field

LOG = logging.getLogger(__name__)

VIM_TYPE = vim_owner.VIM_TYPE
DEFAULT_PROJECT = 'default'
# Namespaces Tacker's kubernetes VIM offers as "regions" at first.
DEFAULT_NAMESPACES = ('default', 'kube-public', 'kube-system')
_USER = 'k8s-mgmt-vim'


def default_vim_name(vnf_instance_id):
    return 'kubernetes_vim_%s' % vnf_instance_id


def instance_vim_name(ctx):
    """The name of an operation's instance's VIM: additionalParams'
    ``vim_name``, else :func:`default_vim_name`."""
    return ctx.params.vim_name or default_vim_name(ctx.vnf_instance_id)


@dataclasses.dataclass(frozen=True)
class VimRecord:
    name: str
    endpoint: str                   # https://host:port, the VIP's for HA
    bearer_token: secrets.Secret
    ssl_ca_cert: str                # PEM
    project_name: str = DEFAULT_PROJECT
    # Helm is on the masters: Tacker's v2 API then deploys Helm charts on
    # the VIM (vimType ETSINFV.HELM.V_3, from extra.use_helm).
    use_helm: bool = False

    def __post_init__(self):
        if not isinstance(self.bearer_token, secrets.Secret):
            object.__setattr__(self, 'bearer_token',
                               secrets.Secret(self.bearer_token))


def vim_config(record):
    """The dict ``openstack vim register --config-file`` reads."""
    config = {'auth_url': record.endpoint,
              'bearer_token': record.bearer_token.reveal(),
              'ssl_ca_cert': record.ssl_ca_cert,
              'project_name': record.project_name,
              'type': VIM_TYPE}
    config.update(extra(record))
    return config


def extra(record):
    """The VIM's ``extra`` (as a dict to merge into a VIM body): Helm's
    flag when the masters have Helm, else nothing."""
    return {'extra': {'use_helm': True}} if record.use_helm else {}


def kubeconfig(record):
    """A kubeconfig for the same endpoint, token and CA as the VIM."""
    ca_b64 = base64.b64encode(record.ssl_ca_cert.encode()).decode()
    return {
        'apiVersion': 'v1', 'kind': 'Config',
        'clusters': [{'name': record.name, 'cluster': {
            'server': record.endpoint,
            'certificate-authority-data': ca_b64}}],
        'users': [{'name': _USER, 'user': {
            'token': record.bearer_token.reveal()}}],
        'contexts': [{'name': record.name, 'context': {
            'cluster': record.name, 'user': _USER}}],
        'current-context': record.name,
    }


def _dump(data):
    return yaml.safe_dump(data, default_flow_style=False, sort_keys=False)


class FileVimRegistrar(object):
    """Outside Tacker: kubeconfig + VIM config file in the state dir."""

    where = 'files in the instance\'s state directory'
    kind = 'local'

    def __init__(self, state):
        self.state = state

    def register(self, record, owned=None):
        """Write both files (``owned``: unused, the files are the
        instance's own)."""
        kube_path = self.state.write(state_mod.KUBECONFIG,
                                     secrets.Secret(_dump(kubeconfig(record))))
        vim_path = self.state.write(state_mod.VIM_CONFIG,
                                    secrets.Secret(_dump(vim_config(record))))
        LOG.info('VIM %s (%s): kubeconfig %s, VIM config %s (register with '
                 '"openstack vim register --config-file %s %s")',
                 record.name, record.endpoint, kube_path, vim_path, vim_path,
                 record.name)
        return {'kubeconfig': kube_path, 'vim_config': vim_path}

    def registered(self, name):
        """The record registered before (its VIM config file), or None."""
        text = self.state.read(state_mod.VIM_CONFIG)
        if not text:
            return None
        try:
            data = yaml.safe_load(text)
            return VimRecord(name=name, endpoint=data['auth_url'],
                             bearer_token=data['bearer_token'],
                             ssl_ca_cert=data['ssl_ca_cert'],
                             use_helm=bool((data.get('extra') or {})
                                           .get('use_helm')))
        except Exception:  # damaged: read the credentials again instead
            LOG.warning('%s cannot be read; ignored',
                        self.state.file(state_mod.VIM_CONFIG))
            return None

    def unregister(self, name, owned=None):
        """Remove both files; what was removed (``owned``: unused)."""
        removed = []
        for entry in (state_mod.KUBECONFIG, state_mod.VIM_CONFIG):
            path = self.state.file(entry)
            try:
                os.unlink(path)
                removed.append(path)
            except FileNotFoundError:
                pass
        LOG.info('VIM %s: removed %s', name,
                 ', '.join(removed) or 'nothing (no files left)')
        return {'files_removed': removed}


class TackerVimRegistrar(object):
    """Inside Tacker: NFVO plugin VIM + VimConnectionInfo on the instance."""

    where = 'Tacker (NFVO plugin)'
    kind = 'tacker'

    def __init__(self, tacker_context, vnf_instance):
        self.context = tacker_context
        self.vnf_instance = vnf_instance

    def _vim_body(self, record):
        return {'vim': {
            'name': record.name, 'type': VIM_TYPE,
            'description': vim_owner.vim_description(
                field(self.vnf_instance, 'id')),
            'auth_url': record.endpoint,
            'auth_cred': {'bearer_token': record.bearer_token.reveal(),
                          'ssl_ca_cert': record.ssl_ca_cert},
            'vim_project': {'name': record.project_name},
            'tenant_id': getattr(self.context, 'project_id', None),
            'is_default': False,
            'placement_attr': {'regions': list(DEFAULT_NAMESPACES)},
            **extra(record)}}

    @property
    def project_id(self):
        return getattr(self.context, 'project_id', None)

    def _listed(self, plugin, name):
        try:
            return vims_named(plugin, self.context, name)
        except Exception as err:
            raise exceptions.MgmtDriverError(
                error_message='listing VIMs named %s failed: %s: %s' % (
                    name, type(err).__name__, err))

    def check_name(self, name, owned=None):
        """Refuse ``name`` when another VIM than ``owned`` holds it."""
        from tacker.nfvo import nfvo_plugin  # noqa: only inside Tacker
        return vim_owner.owned_vim(
            self._listed(nfvo_plugin.NfvoPlugin(), name), name, owned)

    def register(self, record, owned=None):
        """Register ``record`` (the VIM ``owned``, the id the instance
        recorded, is reused on a re-run); another VIM under the name is a
        clash, refused."""
        from tacker.nfvo import nfvo_plugin  # noqa: only inside Tacker
        plugin = nfvo_plugin.NfvoPlugin()
        vim = vim_owner.owned_vim(self._listed(plugin, record.name),
                                  record.name, owned)
        if vim is None:
            try:
                vim = plugin.create_vim(self.context, self._vim_body(record))
            except Exception as err:
                raise exceptions.MgmtDriverError(
                    error_message='registering VIM %s failed: %s: %s' % (
                        record.name, type(err).__name__, err))
            LOG.info('Registered VIM %s (%s) as %s', record.name,
                     record.endpoint, vim['id'])
        else:
            LOG.info('VIM %s already registered as %s', record.name,
                     vim['id'])
        self._add_connection(vim['id'])
        return {'vim_id': vim['id']}

    def registered(self, name):
        """The record of the instance's Kubernetes VIM, read through
        Tacker's VIM client (which decrypts its token and CA), or None."""
        vim_ids = [field(c, 'vim_id') for c in
                   field(self.vnf_instance, 'vim_connection_info')
                   or () if field(c, 'vim_type') == VIM_TYPE]
        if not vim_ids:
            return None
        from tacker.vnfm import vim_client  # noqa: only inside Tacker
        try:
            vim = vim_client.VimClient().get_vim(self.context, vim_ids[-1])
            auth = vim['vim_auth']
            return VimRecord(name=name, endpoint=auth['auth_url'],
                             bearer_token=auth['bearer_token'],
                             ssl_ca_cert=auth['ssl_ca_cert'])
        except Exception as err:  # gone or unreadable: read them again
            LOG.warning('VIM %s of the instance cannot be read (%s); its '
                        'credentials will be read from a master',
                        vim_ids[-1], type(err).__name__)
            return None

    def _add_connection(self, vim_id):
        from tacker import objects  # noqa: only inside Tacker
        current = list(field(self.vnf_instance, 'vim_connection_info') or [])
        if any(field(c, 'vim_id') == vim_id for c in current):
            return
        current.append(objects.VimConnectionInfo(
            id=str(uuid.uuid4()), vim_id=vim_id, vim_type=VIM_TYPE,
            access_info={}, interface_info={}))
        self.vnf_instance.vim_connection_info = current

    def unregister(self, name, owned=None):
        """Delete the VIM ``owned`` (the id the instance recorded; gone
        already is fine), else only what :func:`legacy_owned` proves the
        instance's, and the instance's connections to them; what was
        deleted."""
        from tacker.nfvo import nfvo_plugin  # noqa: only inside Tacker
        plugin = nfvo_plugin.NfvoPlugin()
        if owned:
            targets = [owned]
        else:
            targets = vim_owner.legacy_owned(
                self._listed(plugin, name), name,
                field(self.vnf_instance, 'id'), self.project_id)
        deleted = []
        for vim_id in targets:
            try:
                plugin.delete_vim(self.context, vim_id)
            except Exception as err:
                if 'NotFound' not in type(err).__name__:
                    raise exceptions.MgmtDriverError(
                        error_message='deleting VIM %s (%s) failed: %s: %s'
                        % (name, vim_id, type(err).__name__, err))
                LOG.info('VIM %s (%s) is gone already', name, vim_id)
                continue
            LOG.info('Deleted VIM %s (%s)', name, vim_id)
            deleted.append(vim_id)
        drop_connections(self.vnf_instance, targets)
        return {'vims_deleted': deleted}


def vims_named(plugin, tacker_context, name):
    """The VIMs Tacker's NFVO plugin has under ``name``.

    Tacker filters with ``column.in_([value])``: the value is the name
    itself, not a list (a list only worked on MySQL, whose driver renders
    it as a tuple; SQLite refuses to bind it).
    """
    return [vim for vim in plugin.get_vims(tacker_context,
                                           filters={'name': name})
            if vim.get('name') == name]


def drop_connections(vnf_instance, vim_ids):
    """Remove the instance's VimConnectionInfo entries naming ``vim_ids``
    (VIMs just deleted): a whole-VNF heal deletes the cluster's VIM in
    heal_start and registers a new one in heal_end on the same instance
    object, which Tacker then saves; the old entry would be left naming a
    VIM that no longer exists."""
    gone = set(vim_ids)
    current = list(field(vnf_instance, 'vim_connection_info') or [])
    kept = [c for c in current if field(c, 'vim_id') not in gone]
    if len(kept) != len(current):
        if isinstance(vnf_instance, dict):
            vnf_instance['vim_connection_info'] = kept
        else:
            vnf_instance.vim_connection_info = kept
    return len(current) - len(kept)


def is_tacker_context(tacker_context):
    """True for a real Tacker request context (the lab passes None)."""
    if tacker_context is None:
        return False
    module = type(tacker_context).__module__ or ''
    return module.split('.', 1)[0] == 'tacker'


def registrar_for(ctx, state):
    """The operation's own registrar (a v2 hook gives one), else Tacker's
    NFVO plugin under a real Tacker context, else files."""
    if ctx.vim_registrar is not None:
        return ctx.vim_registrar
    tacker_context, vnf_instance = ctx.tacker_context, ctx.vnf_instance
    if is_tacker_context(tacker_context):
        return TackerVimRegistrar(tacker_context, vnf_instance)
    return FileVimRegistrar(state)
