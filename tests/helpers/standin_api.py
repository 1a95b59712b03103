"""A real etcd on loopback and the lab's API server stand-in in-process
over it, for tests that reach it with the official ``kubernetes`` client
(tests/functional/kube/test_drain.py,
 tests/functional/standins)."""

import contextlib
import shutil
import socket
import subprocess
import threading

from k8s_mgmt import polling
from k8s_mgmt_lab.kube import apiserver
from k8s_mgmt_lab.kube import pki
from k8s_mgmt_lab.kube import store as store_mod

ETCD = shutil.which('etcd')


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_etcd(data_dir, name):
    """A one-member etcd in ``data_dir``; yields its client address."""
    client, peer = free_port(), free_port()
    proc = subprocess.Popen(
        [ETCD, '--name', name, '--data-dir', str(data_dir),
         '--listen-client-urls', 'http://127.0.0.1:%d' % client,
         '--advertise-client-urls', 'http://127.0.0.1:%d' % client,
         '--listen-peer-urls', 'http://127.0.0.1:%d' % peer,
         '--initial-advertise-peer-urls', 'http://127.0.0.1:%d' % peer,
         '--initial-cluster', '%s=http://127.0.0.1:%d' % (name, peer)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    store = store_mod.EtcdStore('127.0.0.1', client)
    try:
        for _ in polling.Poll(30, first=0.05, maximum=0.5):
            if store.healthy():
                break
            assert proc.poll() is None, 'etcd exited'
        else:
            raise AssertionError('etcd not healthy in 30 s')
        yield '127.0.0.1:%d' % client
    finally:
        proc.terminate()
        proc.wait(10)


def serve(etcd, directory):
    """The API server stand-in on ``etcd`` with its own CA (files in
    ``directory``), serving in a thread; ``url``, ``ca_file`` and
    ``ca_pem`` set on the server returned."""
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
    srv.ca_pem = ca_pem.decode()
    return srv
