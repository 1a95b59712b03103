"""Tacker's NFVO plugin in memory, for :class:`k8s_mgmt.vim.
TackerVimRegistrar` (v1): the modules it imports inside Tacker, put in
``sys.modules`` for one test. Like Tacker's, a listing under admin
credentials shows every project's VIMs (id, name, type, tenant_id,
description...) and deleting an id that is gone raises
VimNotFoundException."""

import sys
import types
import uuid


class VimNotFoundException(Exception):
    pass


class Nfvo(object):
    """The VIMs, by id, and the calls made."""

    def __init__(self):
        self.vims = {}
        self.calls = []

    def add(self, name, tenant_id, vim_type='kubernetes', description='',
            vim_id=None):
        """A VIM registered by someone else."""
        vim = {'id': vim_id or str(uuid.uuid4()), 'name': name,
               'type': vim_type, 'tenant_id': tenant_id,
               'description': description}
        self.vims[vim['id']] = vim
        return vim['id']

    def named(self, name):
        return sorted(v['id'] for v in self.vims.values()
                      if v['name'] == name)


def install(monkeypatch, nfvo=None):
    """Put the fake ``tacker`` modules in place; the :class:`Nfvo`."""
    nfvo = nfvo or Nfvo()

    class NfvoPlugin(object):
        def get_vims(self, context, filters=None, fields=None):
            nfvo.calls.append(('get_vims', dict(filters or {})))
            name = (filters or {}).get('name')
            assert not isinstance(name, list)  # Tacker's column.in_([v])
            return [dict(v) for v in nfvo.vims.values()
                    if name is None or v['name'] == name]

        def create_vim(self, context, body):
            vim = dict(body['vim'], id=str(uuid.uuid4()))
            vim['tenant_id'] = vim.get('tenant_id') or context.project_id
            nfvo.vims[vim['id']] = vim
            nfvo.calls.append(('create_vim', vim['id']))
            return dict(vim)

        def delete_vim(self, context, vim_id):
            nfvo.calls.append(('delete_vim', vim_id))
            if nfvo.vims.pop(vim_id, None) is None:
                raise VimNotFoundException('VIM %s could not be found'
                                           % vim_id)

    class VimConnectionInfo(object):
        def __init__(self, **fields):
            self.__dict__.update(fields)

    tacker = types.ModuleType('tacker')
    tacker_nfvo = types.ModuleType('tacker.nfvo')
    plugin = types.ModuleType('tacker.nfvo.nfvo_plugin')
    objects = types.ModuleType('tacker.objects')
    plugin.NfvoPlugin = NfvoPlugin
    objects.VimConnectionInfo = VimConnectionInfo
    tacker.nfvo, tacker.objects, tacker_nfvo.nfvo_plugin = (
        tacker_nfvo, objects, plugin)
    for name, module in (('tacker', tacker), ('tacker.nfvo', tacker_nfvo),
                         ('tacker.nfvo.nfvo_plugin', plugin),
                         ('tacker.objects', objects)):
        monkeypatch.setitem(sys.modules, name, module)
    return nfvo


def tacker_context(project_id):
    """A request context :func:`k8s_mgmt.vim.is_tacker_context` takes."""
    context_cls = type('RequestContext', (object,),
                       {'__module__': 'tacker.context'})
    context = context_cls()
    context.project_id = project_id
    return context
