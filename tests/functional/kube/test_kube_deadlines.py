"""Every Kubernetes API request ends by kube_api_timeout with a named error.

The real ``kubernetes`` client (through :class:`k8s_mgmt.kube.ClusterAPI`)
talks to loopback servers that accept the connection and never answer
(tests/helpers/silent_server.py): one completes the TLS handshake and then
says nothing, one never even starts TLS.
"""

import time

import pytest
from oslo_config import fixture as cfg_fixture

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import kube
from k8s_mgmt_lab.kube import pki
from tests.helpers import silent_server

TOKEN = 'deadline-test-token-0123456789abcdef'
LIMIT = 1.0


@pytest.fixture(scope='module')
def tls(tmp_path_factory):
    d = tmp_path_factory.mktemp('pki')
    ca_pem, ca_key = pki.make_ca()
    cert, key = pki.make_serving_cert(ca_pem, ca_key, ['127.0.0.1'])
    (d / 'tls.crt').write_bytes(cert)
    (d / 'tls.key').write_bytes(key)
    return {'ca': ca_pem.decode(),
            'pair': (str(d / 'tls.crt'), str(d / 'tls.key'))}


@pytest.fixture
def kube_timeout():
    fix = cfg_fixture.Config(conf.CONF)
    fix.setUp()
    fix.config(kube_api_timeout=LIMIT, group='k8s_mgmt')
    yield fix
    fix.cleanUp()


def _fails(call, *args, **kwargs):
    started = time.monotonic()
    with pytest.raises(exceptions.KubernetesAPIError) as caught:
        call(*args, **kwargs)
    return time.monotonic() - started, str(caught.value)


@pytest.mark.parametrize('with_tls', [True, False],
                         ids=['silent-after-tls', 'silent-before-tls'])
def test_list_nodes_ends_at_kube_api_timeout(kube_timeout, tls, with_tls):
    with silent_server.SilentServer(
            tls=tls['pair'] if with_tls else None) as silent:
        url = 'https://127.0.0.1:%d' % silent.port
        with kube.ClusterAPI(url, TOKEN, tls['ca']) as api:
            took, text = _fails(api.nodes)
        # One attempt: urllib3 would otherwise retry a GET 3 more times.
        assert silent.accepted == 1
        # After TLS the request went out: the wait was for its answer.
        assert (b'GET /api/v1/nodes' in silent.received) == with_tls
    assert LIMIT * 0.9 <= took < 2 * LIMIT, 'took %.1f s' % took
    assert 'list nodes: no answer within 1.0 s' in text
    assert TOKEN not in text


def test_an_answer_that_stalls_after_its_headers_is_a_named_error(
        kube_timeout, tls):
    """The VIP probe of a master heal died of this (a CI run): the headers
    came, the body stalled, and reading it raised urllib3's
    ReadTimeoutError past the client's error handling."""
    start = (b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
             b'Content-Length: 100\r\n\r\n{"items": [')
    with silent_server.SilentServer(tls=tls['pair'],
                                    answer_start=start) as stalls:
        with kube.ClusterAPI(stalls.url, TOKEN, tls['ca']) as api:
            took, text = _fails(api.nodes)
    assert LIMIT * 0.9 <= took < 2 * LIMIT, 'took %.1f s' % took
    assert 'list nodes: no answer within 1.0 s' in text


def test_label_node_ends_at_kube_api_timeout(kube_timeout, tls):
    with silent_server.SilentServer(tls=tls['pair']) as silent:
        url = 'https://127.0.0.1:%d' % silent.port
        with kube.ClusterAPI(url, TOKEN, tls['ca']) as api:
            took, text = _fails(api.label_node, 'worker-1', {'a': 'b'})
    assert took < 2 * LIMIT
    assert 'label node worker-1: no answer within 1.0 s' in text


def test_wait_ready_cuts_requests_to_its_own_deadline(kube_timeout, tls):
    # A request may take kube_api_timeout (30 s here), but not past the
    # deadline of the wait it belongs to.
    kube_timeout.config(kube_api_timeout=30, group='k8s_mgmt')
    with silent_server.SilentServer(tls=tls['pair']) as silent:
        url = 'https://127.0.0.1:%d' % silent.port
        with kube.ClusterAPI(url, TOKEN, tls['ca']) as api:
            took, text = _fails(api.wait_ready, ['worker-1'], timeout=1.5)
    assert 1.4 <= took < 2.5, 'took %.1f s' % took
    assert 'wait for Ready nodes' in text and 'worker-1' in text
    assert 'no answer within' in text


def test_request_timeout_is_the_option_cut_to_the_deadline(kube_timeout):
    assert kube.client.request_timeout() == LIMIT
    soon = time.monotonic() + 0.5
    assert 0.3 < kube.client.request_timeout(soon) <= 0.5
    past = time.monotonic() - 5
    assert kube.client.request_timeout(past) == (
        kube.client.MIN_REQUEST_TIMEOUT)
