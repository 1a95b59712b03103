"""The cluster's VIM through Tacker's VIM REST API (the v2 hooks' way):
what is sent, what a re-run finds, what an error says, and that the
instance owns its VIM by id, never by name (issue 47): an admin's listing
shows every project's VIMs."""

import dataclasses
import json

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import state as state_mod
from k8s_mgmt import vim as vim_mod
from k8s_mgmt import vim_owner
from k8s_mgmt import vim_rest

TOKEN = 'eyJhbGciOiJSUzI1NiJ9.k8s-bearer-token-value'
CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'
NAME = 'kubernetes_vim_inst-1'
MINE, OTHER = 'project-mine', 'project-other'


class Response(object):
    def __init__(self, status, body=None):
        self.status_code = status
        self.text = json.dumps(body) if body is not None else ''

    def json(self):
        return json.loads(self.text)


class FakeApi(object):
    """Tacker's /v1.0/vims, in memory, as admin credentials see it: every
    project's VIMs, each with id, name, type, tenant_id, description."""

    def __init__(self, refuse=None):
        self.vims = {}
        self.calls = []
        self.refuse = refuse

    def request(self, path, method, raise_exc, timeout, **kwargs):
        self.calls.append((method, path, kwargs))
        if self.refuse:
            return Response(*self.refuse)
        if method == 'GET':
            name = kwargs['params']['name']
            return Response(200, {'vims': [
                dict(v, auth_cred={'bearer_token': '***'})
                for v in self.vims.values() if v['name'] == name]})
        if method == 'POST':
            vim = dict(kwargs['json']['vim'], id='vim-%d' % len(self.calls),
                       tenant_id=MINE)
            self.vims[vim['id']] = vim
            return Response(201, {'vim': vim})
        if method == 'DELETE':
            gone = self.vims.pop(path.rsplit('/', 1)[-1], None)
            return Response(204 if gone else 404)
        raise AssertionError(method)

    def add(self, tenant_id, vim_type='kubernetes', description='',
            name=NAME):
        """A VIM someone else registered."""
        vim_id = 'theirs-%d' % len(self.vims)
        self.vims[vim_id] = {'id': vim_id, 'name': name, 'type': vim_type,
                             'tenant_id': tenant_id,
                             'description': description}
        return vim_id

    def deleted(self):
        return [path.rsplit('/', 1)[-1] for method, path, _ in self.calls
                if method == 'DELETE']

    def get_project_id(self):
        return MINE


def registrar(api):
    found = vim_rest.RestVimRegistrar.__new__(vim_rest.RestVimRegistrar)
    found.api, found.vnf_instance_id, found.timeout = api, 'inst-1', 5
    found._project_id = None
    return found


@pytest.fixture
def state(tmp_path):
    return state_mod.InstanceState('inst-1', base_dir=str(tmp_path))


def record(name=NAME):
    return vim_mod.VimRecord(name=name, endpoint='https://10.0.0.5:6443',
                             bearer_token=TOKEN, ssl_ca_cert=CA)


def test_register_posts_a_kubernetes_vim_once():
    api = FakeApi()
    first = registrar(api).register(record())
    vim = api.vims[first['vim_id']]
    assert vim['type'] == 'kubernetes' and vim['is_default'] is False
    assert vim['auth_url'] == 'https://10.0.0.5:6443'
    assert vim['auth_cred'] == {'bearer_token': TOKEN, 'ssl_ca_cert': CA}
    assert 'inst-1' in vim['description']
    # A re-run (retry) finds the VIM it recorded instead of registering a
    # second one.
    assert registrar(api).register(record(), first['vim_id']) == first
    assert [c[0] for c in api.calls] == ['GET', 'POST', 'GET']


def test_a_cluster_with_helm_is_a_helm_vim_for_v2():
    """extra.use_helm: Tacker's v2 API then takes the VIM for Helm charts
    (vimType ETSINFV.HELM.V_3); without Helm, no extra at all."""
    api = FakeApi()
    assert 'extra' not in api.vims[registrar(api).register(record())[
        'vim_id']]
    helm = dataclasses.replace(record('kubernetes_vim_inst-2'),
                               use_helm=True)
    assert api.vims[registrar(api).register(helm)['vim_id']]['extra'] == {
        'use_helm': True}


def test_registered_is_none_tacker_never_gives_a_token_back():
    api = FakeApi()
    registrar(api).register(record())
    assert registrar(api).registered('kubernetes_vim_inst-1') is None


def test_unregister_deletes_the_recorded_vim_and_is_idempotent(state):
    api = FakeApi()
    made = vim_owner.register_vim(registrar(api), state, record())['vim_id']
    registrar(api).register(record('other'))
    assert vim_owner.unregister_vim(registrar(api), state, NAME) == {
        'vims_deleted': [made]}
    assert [v['name'] for v in api.vims.values()] == ['other']
    assert vim_owner.unregister_vim(registrar(api), state, NAME) == {
        'vims_deleted': []}


def test_terminate_never_deletes_another_projects_vim_of_the_name(state):
    api = FakeApi()
    mine = vim_owner.register_vim(registrar(api), state, record())['vim_id']
    assert state.cluster_record()['vim_id'] == mine
    theirs = api.add(OTHER, description=vim_owner.vim_description('inst-1'))
    assert vim_owner.unregister_vim(registrar(api), state, NAME) == {
        'vims_deleted': [mine]}
    assert list(api.vims) == [theirs] and api.deleted() == [mine]
    assert state.cluster_record().get('vim_id') is None
    vim_owner.unregister_vim(registrar(api), state, NAME)   # a retry
    assert list(api.vims) == [theirs]


def test_a_clash_is_refused_naming_project_and_type_never_adopted(state):
    api = FakeApi()
    theirs = api.add(OTHER, vim_type='openstack')
    with pytest.raises(exceptions.MgmtDriverError) as caught:
        vim_owner.register_vim(registrar(api), state, record())
    text = str(caught.value)
    assert '\n' not in text and TOKEN not in text
    assert theirs in text and OTHER in text and 'openstack' in text
    assert 'vim_name' in text
    assert [c[0] for c in api.calls] == ['GET']
    assert state.cluster_record().get('vim_id') is None


def test_a_rerun_reuses_the_vim_whose_id_is_recorded(state):
    api = FakeApi()
    first = vim_owner.register_vim(registrar(api), state, record())
    assert vim_owner.register_vim(registrar(api), state, record()) == first
    assert list(api.vims) == [first['vim_id']]
    assert [c[0] for c in api.calls] == ['GET', 'POST', 'GET']


def test_heal_unregister_then_register_records_the_new_vim(state):
    api = FakeApi()
    old = vim_owner.register_vim(registrar(api), state, record())['vim_id']
    vim_owner.unregister_vim(registrar(api), state, NAME)          # heal_start
    new = vim_owner.register_vim(registrar(api), state, record())['vim_id']
    assert new != old and list(api.vims) == [new]
    assert state.cluster_record()['vim_id'] == new


def test_state_without_a_recorded_id_deletes_only_a_vim_matching_all_rules(
        state):
    api = FakeApi()
    ours = vim_owner.vim_description('inst-1')
    left = [api.add(MINE, vim_type='openstack', description=ours),
            api.add(MINE, description='Kubernetes cluster of VNF instance '
                    'inst-2'),
            api.add(OTHER, description=ours)]
    old = api.add(MINE, description=ours)           # an older version's
    assert vim_owner.unregister_vim(registrar(api), state, NAME) == {
        'vims_deleted': [old]}
    assert sorted(api.vims) == sorted(left) and api.deleted() == [old]


def test_an_unknown_project_deletes_no_vim_of_a_shown_project(state):
    api = FakeApi()
    api.get_project_id = None                     # Keystone cannot tell
    api.add(MINE, description=vim_owner.vim_description('inst-1'))
    assert vim_owner.unregister_vim(registrar(api), state, NAME) == {
        'vims_deleted': []}
    assert api.deleted() == []


def test_a_refusal_names_tackers_reason_and_never_the_token():
    api = FakeApi(refuse=(409, {'TackerError': {
        'type': 'VimInUseException',
        'message': 'VIM vim-1 is still in use by VNF'}}))
    with pytest.raises(exceptions.MgmtDriverError) as caught:
        registrar(api).register(record())
    text = str(caught.value)
    assert 'HTTP 409' in text and 'still in use' in text
    assert TOKEN not in text
