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
