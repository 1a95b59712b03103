"""The cluster's VIM through Tacker's VIM REST API (the v2 hooks' way):
what is sent, what a re-run finds, what an error says."""

import dataclasses
import json

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import vim as vim_mod
from k8s_mgmt import vim_rest

TOKEN = 'eyJhbGciOiJSUzI1NiJ9.k8s-bearer-token-value'
CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'


class Response(object):
    def __init__(self, status, body=None):
        self.status_code = status
        self.text = json.dumps(body) if body is not None else ''

    def json(self):
        return json.loads(self.text)


class FakeApi(object):
    """Tacker's /v1.0/vims, in memory."""

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
            vim = dict(kwargs['json']['vim'], id='vim-%d' % len(self.calls))
            self.vims[vim['id']] = vim
            return Response(201, {'vim': vim})
        if method == 'DELETE':
            gone = self.vims.pop(path.rsplit('/', 1)[-1], None)
            return Response(204 if gone else 404)
        raise AssertionError(method)


def registrar(api):
    found = vim_rest.RestVimRegistrar.__new__(vim_rest.RestVimRegistrar)
    found.api, found.vnf_instance_id, found.timeout = api, 'inst-1', 5
    return found


def record(name='kubernetes_vim_inst-1'):
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
    # A re-run (retry) finds it instead of registering a second one.
    assert registrar(api).register(record()) == first
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


def test_unregister_deletes_every_vim_of_the_name_and_is_idempotent():
    api = FakeApi()
    made = registrar(api).register(record())['vim_id']
    registrar(api).register(record('other'))
    assert registrar(api).unregister('kubernetes_vim_inst-1') == {
        'vims_deleted': [made]}
    assert [v['name'] for v in api.vims.values()] == ['other']
    assert registrar(api).unregister('kubernetes_vim_inst-1') == {
        'vims_deleted': []}


def test_a_refusal_names_tackers_reason_and_never_the_token():
    api = FakeApi(refuse=(409, {'TackerError': {
        'type': 'VimInUseException',
        'message': 'VIM vim-1 is still in use by VNF'}}))
    with pytest.raises(exceptions.MgmtDriverError) as caught:
        registrar(api).register(record())
    text = str(caught.value)
    assert 'HTTP 409' in text and 'still in use' in text
    assert TOKEN not in text
