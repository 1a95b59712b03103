"""ClusterAPI against a real HTTPS server on loopback (own CA, token)."""

import datetime
import http.server
import ipaddress
import json
import ssl
import threading
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from k8s_mgmt import exceptions
from k8s_mgmt import kube

TOKEN = 'bearer-token-for-tests-0123456789'


def _cert(subject, issuer_key, key, issuer=None, ca=False, san_ip=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (x509.CertificateBuilder().subject_name(name)
               .issuer_name(issuer or name).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=1))
               .not_valid_after(now + datetime.timedelta(hours=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None),
                              critical=True))
    if san_ip:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address(san_ip))]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope='module')
def pki(tmp_path_factory):
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert('test-ca', ca_key, ca_key, ca=True)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _cert('apiserver', ca_key, key, issuer=ca.subject,
                 san_ip='127.0.0.1')
    d = tmp_path_factory.mktemp('pki')
    (d / 'tls.crt').write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / 'tls.key').write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return {'ca': ca.public_bytes(serialization.Encoding.PEM).decode(),
            'cert': str(d / 'tls.crt'), 'key': str(d / 'tls.key')}


class FakeAPI(object):
    """Nodes become Ready after ``ready_after`` list calls."""

    def __init__(self, names, ready_after=0):
        self.names = names
        self.ready_after = ready_after
        self.lists = 0
        self.patches = []
        self.auth = []
        # The next requests closed without an answer, as HAProxy's
        # hard-stop-after closes a kept-alive connection.
        self.drops = 0

    def node(self, name):
        ready = 'True' if self.lists > self.ready_after else 'False'
        return {'metadata': {'name': name, 'labels': {
            'node-role.kubernetes.io/control-plane': ''} if 'master' in name
            else {}}, 'status': {'conditions': [
                {'type': 'MemoryPressure', 'status': 'False'},
                {'type': 'Ready', 'status': ready}]}}


@pytest.fixture
def serve(pki):
    servers = []

    def start(fake):
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _dropped(self):
                if fake.drops:
                    fake.drops -= 1
                    self.close_connection = True
                    return True
                return False

            def _authorised(self):
                if self._dropped():
                    return False
                fake.auth.append(self.headers.get('Authorization'))
                if self.headers.get('Authorization') != 'Bearer ' + TOKEN:
                    self._send(401, {'kind': 'Status', 'code': 401})
                    return False
                return True

            def do_GET(self):
                if not self._authorised():
                    return
                if self.path.startswith('/api/v1/nodes'):
                    fake.lists += 1
                    self._send(200, {'kind': 'NodeList', 'items': [
                        fake.node(n) for n in fake.names]})
                else:
                    self._send(404, {})

            def do_PATCH(self):
                if not self._authorised():
                    return
                length = int(self.headers.get('Content-Length', 0))
                fake.patches.append((self.path,
                                     self.headers.get('Content-Type'),
                                     json.loads(self.rfile.read(length))))
                self._send(200, fake.node(self.path.rsplit('/', 1)[-1]))

        server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki['cert'], pki['key'])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return 'https://127.0.0.1:%d' % server.server_address[1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_wait_ready_polls_until_every_node_is_ready(serve, pki):
    fake = FakeAPI(['master-1', 'worker-1'], ready_after=2)
    url = serve(fake)
    started = time.monotonic()
    with kube.ClusterAPI(url, TOKEN, pki['ca']) as api:
        states = api.wait_ready(['master-1', 'worker-1'], timeout=20)
    assert fake.lists == 3
    assert time.monotonic() - started < 10
    assert states['master-1'].ready and states['master-1'].roles == (
        'control-plane',)
    assert set(fake.auth) == {'Bearer ' + TOKEN}


def test_wait_ready_fails_at_the_deadline_naming_the_nodes(serve, pki):
    fake = FakeAPI(['master-1', 'worker-1'], ready_after=10 ** 6)
    url = serve(fake)
    with kube.ClusterAPI(url, TOKEN, pki['ca']) as api:
        started = time.monotonic()
        with pytest.raises(exceptions.KubernetesAPIError) as err:
            api.wait_ready(['worker-1', 'worker-9'], timeout=1.5)
    assert 1.4 < time.monotonic() - started < 5
    assert 'worker-1, worker-9' in str(err.value)
    assert fake.lists >= 2


def test_label_node_is_a_merge_patch(serve, pki):
    fake = FakeAPI(['worker-1'])
    url = serve(fake)
    with kube.ClusterAPI(url, TOKEN, pki['ca']) as api:
        api.label_node('worker-1', {'CIS-node': 'compute-1'})
    assert fake.patches == [('/api/v1/nodes/worker-1',
                             'application/merge-patch+json',
                             {'metadata': {'labels': {
                                 'CIS-node': 'compute-1'}}})]


def test_wrong_token_and_wrong_ca_are_errors_without_the_token(serve, pki):
    fake = FakeAPI(['worker-1'])
    url = serve(fake)
    with kube.ClusterAPI(url, 'not-the-token', pki['ca']) as api:
        with pytest.raises(exceptions.KubernetesAPIError) as err:
            api.nodes()
    assert 'HTTP 401' in str(err.value)
    other_key = ec.generate_private_key(ec.SECP256R1())
    other_ca = _cert('other-ca', other_key, other_key, ca=True).public_bytes(
        serialization.Encoding.PEM).decode()
    with kube.ClusterAPI(url, TOKEN, other_ca) as api:
        with pytest.raises(exceptions.KubernetesAPIError) as err:
            api.nodes()
    assert TOKEN not in str(err.value)
    assert 'SSL' in str(err.value) or 'certificate' in str(err.value)


def test_node_state_from_json():
    state = kube.node_state({'metadata': {'name': 'n', 'labels': {
        'node-role.kubernetes.io/control-plane': '', 'a': 'b'}},
        'status': {'conditions': [{'type': 'Ready', 'status': 'Unknown'}]}})
    assert state == kube.NodeState('n', False, {
        'node-role.kubernetes.io/control-plane': '', 'a': 'b'},
        ('control-plane',))
    assert not kube.node_state({'metadata': {'name': 'x'}}).ready


def test_wait_answering_returns_nodes_that_are_not_ready_yet(serve, pki):
    fake = FakeAPI(['master-1'], ready_after=10 ** 6)
    url = serve(fake)
    with kube.ClusterAPI(url, TOKEN, pki['ca']) as api:
        states = api.wait_answering(timeout=5)
    assert fake.lists == 1 and not states['master-1'].ready


def test_a_read_closed_unanswered_is_asked_again_once(serve, pki):
    fake = FakeAPI(['master-1'])
    url = serve(fake)
    with kube.ClusterAPI(url, TOKEN, pki['ca']) as api:
        fake.drops = 1
        assert list(api.nodes()) == ['master-1']
        assert fake.lists == 1
        # Twice in a row: the second is the error, naming the call.
        fake.drops = 2
        with pytest.raises(exceptions.KubernetesAPIError) as err:
            api.nodes()
        assert 'list nodes' in str(err.value)
        # A write is never repeated.
        fake.drops = 1
        with pytest.raises(exceptions.KubernetesAPIError):
            api.label_node('master-1', {'a': 'b'})
        assert fake.patches == []
