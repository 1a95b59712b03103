"""A real etcd on loopback and the API server stand-in in-process over it,
reached with the official ``kubernetes`` client: nothing mocked."""

import shutil
import socket
import subprocess
import threading

import pytest

from k8s_mgmt import polling
from k8s_mgmt_lab.standins import apiserver
from k8s_mgmt_lab.standins import pki
from k8s_mgmt_lab.standins import store as store_mod

TOKEN = 'volume-test-admin-token-0123456789abcdef'
ETCD = shutil.which('etcd')


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


@pytest.fixture(scope='module')
def etcd(tmp_path_factory):
    if ETCD is None:
        pytest.skip('needs etcd-server')
    data = tmp_path_factory.mktemp('etcd')
    client, peer = _free_port(), _free_port()
    proc = subprocess.Popen(
        [ETCD, '--name', 'volumes', '--data-dir', str(data / 'data'),
         '--listen-client-urls', 'http://127.0.0.1:%d' % client,
         '--advertise-client-urls', 'http://127.0.0.1:%d' % client,
         '--listen-peer-urls', 'http://127.0.0.1:%d' % peer,
         '--initial-advertise-peer-urls', 'http://127.0.0.1:%d' % peer,
         '--initial-cluster', 'volumes=http://127.0.0.1:%d' % peer],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store = store_mod.EtcdStore('127.0.0.1', client)
    try:
        for _ in polling.Poll(30, first=0.05, maximum=0.5):
            if store.healthy():
                break
            assert proc.poll() is None, 'etcd exited'
        else:
            pytest.fail('etcd not healthy in 30 s')
        yield '127.0.0.1:%d' % client
    finally:
        proc.terminate()
        proc.wait(10)


def _serve(etcd, directory):
    ca_pem, ca_key = pki.make_ca()
    cert, key = pki.make_serving_cert(ca_pem, ca_key, ['127.0.0.1'])
    for name, data in (('ca.crt', ca_pem), ('tls.crt', cert),
                       ('tls.key', key)):
        (directory / name).write_bytes(data)
    srv = apiserver.serve({'cert': str(directory / 'tls.crt'),
                           'key': str(directory / 'tls.key'),
                           'ca': str(directory / 'ca.crt'), 'etcd': etcd,
                           'node_grace': 3600, 'bind': '127.0.0.1',
                           'port': 0})
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    srv.url = 'https://127.0.0.1:%d' % srv.server_address[1]
    srv.ca_file = str(directory / 'ca.crt')
    return srv


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
