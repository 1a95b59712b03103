"""VIM record files and the per-instance state directory."""

import base64
import dataclasses
import os
import stat
import types

import pytest
import yaml

from k8s_mgmt import secrets
from k8s_mgmt import state as state_mod
from k8s_mgmt import vim

CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'
TOKEN = 'eyJhbGciOiJSUzI1NiJ9.vim-token-value'


def _record():
    return vim.VimRecord(name='kubernetes_vim_abc',
                         endpoint='https://10.0.0.100:16443',
                         bearer_token=secrets.Secret(TOKEN), ssl_ca_cert=CA)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_vim_config_is_what_openstack_vim_register_reads():
    assert vim.vim_config(_record()) == {
        'auth_url': 'https://10.0.0.100:16443', 'bearer_token': TOKEN,
        'ssl_ca_cert': CA, 'project_name': 'default', 'type': 'kubernetes'}


def test_a_cluster_with_helm_says_so_in_the_vims_extra():
    record = dataclasses.replace(_record(), use_helm=True)
    assert vim.vim_config(record)['extra'] == {'use_helm': True}


def test_kubeconfig_points_where_the_vim_points():
    config = vim.kubeconfig(_record())
    cluster = config['clusters'][0]['cluster']
    assert cluster['server'] == vim.vim_config(_record())['auth_url']
    assert base64.b64decode(cluster['certificate-authority-data']).decode() \
        == CA
    assert config['users'][0]['user']['token'] == TOKEN
    assert config['current-context'] == 'kubernetes_vim_abc'


def test_record_never_prints_its_token():
    record = _record()
    assert TOKEN not in repr(record) and TOKEN not in str(record)
    assert vim.VimRecord('n', 'https://x:1', TOKEN, CA).bearer_token \
        == secrets.Secret(TOKEN)


def _ctx(tacker_context, vnf_instance=None, registrar=None):
    return types.SimpleNamespace(tacker_context=tacker_context,
                                 vnf_instance=vnf_instance or {},
                                 vim_registrar=registrar)


def test_file_registrar_writes_both_files_0600(tmp_path):
    state = state_mod.InstanceState('inst-1', base_dir=str(tmp_path))
    registrar = vim.registrar_for(_ctx(None, {'id': 'inst-1'}), state)
    assert isinstance(registrar, vim.FileVimRegistrar)
    paths = registrar.register(_record())
    assert _mode(state.path) == 0o700
    for path in paths.values():
        assert _mode(path) == 0o600
    with open(paths['vim_config']) as src:
        assert yaml.safe_load(src) == vim.vim_config(_record())
    with open(paths['kubeconfig']) as src:
        assert yaml.safe_load(src) == vim.kubeconfig(_record())


def test_file_registrar_reads_back_what_it_registered(tmp_path):
    state = state_mod.InstanceState('inst-1', base_dir=str(tmp_path))
    registrar = vim.FileVimRegistrar(state)
    assert registrar.registered('kubernetes_vim_abc') is None
    registrar.register(_record())
    assert registrar.registered('kubernetes_vim_abc') == _record()
    # A damaged file is not trusted: the credentials are read again.
    state.write(state_mod.VIM_CONFIG, 'auth_url: [')
    assert registrar.registered('kubernetes_vim_abc') is None
    state.write(state_mod.VIM_CONFIG, 'auth_url: https://x:1\n')
    assert registrar.registered('kubernetes_vim_abc') is None


def test_tacker_registrar_only_for_a_tacker_context(tmp_path):
    state = state_mod.InstanceState('inst-1', base_dir=str(tmp_path))

    class FakeTackerContext(object):
        pass
    FakeTackerContext.__module__ = 'tacker.context'
    assert isinstance(vim.registrar_for(_ctx(FakeTackerContext()), state),
                      vim.TackerVimRegistrar)
    assert isinstance(vim.registrar_for(_ctx(object()), state),
                      vim.FileVimRegistrar)
    # An operation that brings its own (a v2 hook) gets it, context or not.
    own = object()
    assert vim.registrar_for(_ctx(FakeTackerContext(), registrar=own),
                             state) is own


def test_file_registrar_unregister_removes_both_files(tmp_path):
    state = state_mod.InstanceState('inst-1', base_dir=str(tmp_path))
    registrar = vim.FileVimRegistrar(state)
    paths = registrar.register(_record())
    assert sorted(registrar.unregister('kubernetes_vim_abc')
                  ['files_removed']) == sorted(paths.values())
    assert registrar.registered('kubernetes_vim_abc') is None
    assert registrar.unregister('kubernetes_vim_abc') == {
        'files_removed': []}


def test_vrrp_password_made_once_kept_private(tmp_path):
    state = state_mod.InstanceState('inst-2', base_dir=str(tmp_path))
    first = state.vrrp_password()
    assert isinstance(first, secrets.Secret) and len(first) == 8
    assert first.reveal().isalnum()
    assert state.vrrp_password() == first
    assert state_mod.InstanceState('inst-2', base_dir=str(tmp_path)) \
        .vrrp_password() == first
    assert _mode(state.file(state_mod.VRRP_PASSWORD)) == 0o600
    other = state_mod.InstanceState('inst-3', base_dir=str(tmp_path))
    assert other.vrrp_password() != first


def test_cluster_record_merges(tmp_path):
    state = state_mod.InstanceState('inst-4', base_dir=str(tmp_path))
    assert state.cluster_record() == {}
    state.update_cluster_record(init_master_server_id='s1')
    state.update_cluster_record(endpoint='https://e:6443')
    assert state.cluster_record() == {'init_master_server_id': 's1',
                                      'endpoint': 'https://e:6443'}


@pytest.mark.parametrize('bad', ['', '../x', 'a/b', None, '.hidden'])
def test_state_dir_refuses_unsafe_ids(bad, tmp_path):
    with pytest.raises(ValueError):
        state_mod.InstanceState(bad, base_dir=str(tmp_path))
