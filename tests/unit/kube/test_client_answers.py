"""ClusterAPI turns every answer it cannot use into one named APIError."""

import types

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import kube

CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'


def _answer(status, data):
    def fn(*args, **kwargs):
        return types.SimpleNamespace(status=status, data=data)
    return fn


@pytest.mark.parametrize('status, data, reason', [
    (200, b'<html>proxy error</html>',
     'HTTP 200 with a body that is no JSON: <html>proxy error</html>'),
    (503, b'unavailable', 'HTTP 503: unavailable'),
])
def test_an_answer_without_usable_json_is_a_named_error(status, data,
                                                        reason):
    api = kube.ClusterAPI('https://127.0.0.1:6443', 'token-abc', CA)
    with pytest.raises(exceptions.KubernetesAPIError) as caught:
        api.call('list nodes', _answer(status, data))
    assert 'list nodes' in str(caught.value)
    assert reason in str(caught.value)
    assert api.call('list nodes', _answer(200, b'{"items": []}')) == {
        'items': []}


def test_a_node_says_its_kubelet_cordon_and_upgrade_mark():
    from k8s_mgmt.kube import client
    state = client.node_state({
        'metadata': {'name': 'w-1', 'annotations': {
            client.UPGRADE_MARK: '1.36.1'}},
        'spec': {'unschedulable': True},
        'status': {'nodeInfo': {'kubeletVersion': 'v1.35.2'},
                   'conditions': [{'type': 'Ready', 'status': 'True'}]}})
    assert (state.kubelet_version, state.unschedulable,
            state.upgrade_mark, state.ready) == ('v1.35.2', True, '1.36.1',
                                                 True)
    bare = client.node_state({'metadata': {'name': 'w-2'}})
    assert (bare.kubelet_version, bare.unschedulable, bare.upgrade_mark,
            bare.ready) == (None, False, None, False)
