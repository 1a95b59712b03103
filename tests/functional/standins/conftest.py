"""A real etcd on loopback and the API server stand-in in-process over it,
reached with the official ``kubernetes`` client: nothing mocked."""

import pytest

from tests.helpers import standin_api

TOKEN = 'volume-test-admin-token-0123456789abcdef'
ETCD = standin_api.ETCD


@pytest.fixture(scope='module')
def etcd(tmp_path_factory):
    if ETCD is None:
        pytest.skip('needs etcd-server')
    with standin_api.running_etcd(tmp_path_factory.mktemp('etcd') / 'data',
                                  'volumes') as address:
        yield address


def _serve(etcd, directory):
    return standin_api.serve(etcd, directory)


@pytest.fixture(scope='module')
def servers(etcd, tmp_path_factory):
    """Two API servers on one etcd, as two masters are."""
    made = [_serve(etcd, tmp_path_factory.mktemp('pki')) for _ in range(2)]
    made[0].api.store.add_token(TOKEN, 'admin', ['system:masters'])
    for name in ('default', 'apps'):
        made[0].api.resources.create('', 'v1', 'namespaces', None,
                                     {'metadata': {'name': name}})
    yield made
    for srv in made:
        srv.shutdown()
        srv.server_close()


def core_api(srv):
    import kubernetes.client as kclient
    conf = kclient.Configuration()
    conf.host = srv.url
    conf.ssl_ca_cert = srv.ca_file
    conf.api_key = {'authorization': TOKEN}
    conf.api_key_prefix = {'authorization': 'Bearer'}
    return kclient.CoreV1Api(kclient.ApiClient(conf))


@pytest.fixture(scope='module')
def core(servers):
    """CoreV1Api on the first API server."""
    return core_api(servers[0])


@pytest.fixture(scope='module')
def other_core(servers):
    """CoreV1Api on the second API server (the other master)."""
    return core_api(servers[1])
