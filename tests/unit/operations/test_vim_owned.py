"""The instance's VIM is owned by id, never by name (issue 47): Tacker's
VIM names are unique per project only and the credentials that list them
are often admin's, so terminate deletes the one VIM the instance recorded
and another VIM under the name is refused, never adopted. Here through
Tacker's NFVO plugin (v1) and the files (outside Tacker); the REST API's
(v2) are in tests/unit/v2/test_vim_rest.py."""

import logging
import types

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import state as state_mod
from k8s_mgmt import vim
from k8s_mgmt import vim_owner
from tests.helpers import fake_nfvo

NAME = 'k8s'
MINE, OTHER = 'project-mine', 'project-other'


def record(name=NAME):
    return vim.VimRecord(name=name, endpoint='https://10.0.0.5:6443',
                         bearer_token='tok-not-to-show',
                         ssl_ca_cert='-----BEGIN CERTIFICATE-----\n')


@pytest.fixture
def nfvo(monkeypatch):
    return fake_nfvo.install(monkeypatch)


@pytest.fixture
def state(tmp_path):
    return state_mod.InstanceState('inst-1', base_dir=str(tmp_path))


def registrar(instance=None):
    instance = instance or types.SimpleNamespace(id='inst-1',
                                                 vim_connection_info=[])
    return vim.TackerVimRegistrar(fake_nfvo.tacker_context(MINE), instance)


def connected(reg):
    return [c.vim_id for c in reg.vnf_instance.vim_connection_info]


def test_terminate_never_deletes_another_projects_vim_of_the_name(
        nfvo, state):
    reg = registrar()
    mine = vim_owner.register_vim(reg, state, record())['vim_id']
    assert state.cluster_record()['vim_id'] == mine
    # Another project registers its own VIM under the same name (Tacker
    # allows it), even with this instance's description.
    theirs = nfvo.add(NAME, OTHER, description=vim_owner.vim_description(
        'inst-1'))
    assert vim_owner.unregister_vim(reg, state, NAME) == {
        'vims_deleted': [mine]}
    assert nfvo.named(NAME) == [theirs]
    assert ('delete_vim', theirs) not in nfvo.calls
    assert state.cluster_record().get('vim_id') is None
    assert connected(reg) == []
    # Again (a retried terminate): nothing of theirs either.
    vim_owner.unregister_vim(reg, state, NAME)
    assert nfvo.named(NAME) == [theirs]


def test_a_clash_is_refused_naming_project_and_type_never_adopted(
        nfvo, state):
    theirs = nfvo.add(NAME, OTHER, vim_type='openstack')
    with pytest.raises(exceptions.MgmtDriverError) as caught:
        vim_owner.register_vim(registrar(), state, record())
    text = str(caught.value)
    assert '\n' not in text
    assert theirs in text and OTHER in text and 'openstack' in text
    assert 'vim_name' in text and 'tok-not-to-show' not in text
    assert not [c for c in nfvo.calls if c[0] == 'create_vim']
    assert state.cluster_record().get('vim_id') is None


def test_a_rerun_reuses_the_vim_whose_id_is_recorded(nfvo, state):
    reg = registrar()
    first = vim_owner.register_vim(reg, state, record())
    assert vim_owner.register_vim(reg, state, record()) == first
    assert nfvo.named(NAME) == [first['vim_id']]
    assert connected(reg) == [first['vim_id']]
    # The check at instantiate_start lets the instance's own VIM pass.
    assert reg.check_name(NAME, first['vim_id'])['id'] == first['vim_id']


def test_heal_unregister_then_register_records_the_new_vim(nfvo, state):
    reg = registrar()
    old = vim_owner.register_vim(reg, state, record())['vim_id']
    vim_owner.unregister_vim(reg, state, NAME)       # heal_start
    new = vim_owner.register_vim(reg, state, record())['vim_id']  # heal_end
    assert new != old and nfvo.named(NAME) == [new]
    assert state.cluster_record()['vim_id'] == new
    assert connected(reg) == [new]


def test_a_recorded_vim_already_gone_is_fine(nfvo, state):
    reg = registrar()
    mine = vim_owner.register_vim(reg, state, record())['vim_id']
    del nfvo.vims[mine]
    assert vim_owner.unregister_vim(reg, state, NAME) == {'vims_deleted': []}
    assert state.cluster_record().get('vim_id') is None


def test_state_without_a_recorded_id_deletes_only_a_vim_matching_all_rules(
        nfvo, state, caplog):
    caplog.set_level(logging.INFO)
    ours = vim_owner.vim_description('inst-1')
    left = [nfvo.add(NAME, MINE, vim_type='openstack', description=ours),
            nfvo.add(NAME, MINE, description='Kubernetes cluster of VNF '
                     'instance inst-2'),
            nfvo.add(NAME, OTHER, description=ours)]
    old = nfvo.add(NAME, MINE, description=ours)  # an older version's
    reg = registrar(types.SimpleNamespace(
        id='inst-1', vim_connection_info=[types.SimpleNamespace(
            vim_id=old, vim_type='kubernetes')]))
    assert vim_owner.unregister_vim(reg, state, NAME) == {
        'vims_deleted': [old]}
    assert nfvo.named(NAME) == sorted(left)
    assert connected(reg) == []
    logged = caplog.text
    assert 'deleted as the instance' in logged
    assert 'type openstack' in logged and 'another description' in logged
    assert OTHER in logged


def test_the_files_outside_tacker_keep_working(state):
    reg = vim.FileVimRegistrar(state)
    made = vim_owner.register_vim(reg, state, record())
    assert 'vim_config' in made and 'vim_id' not in state.cluster_record()
    vim_owner.check_vim_name(reg, state, NAME)      # no clash for files
    assert vim_owner.unregister_vim(reg, state, NAME)['files_removed']
