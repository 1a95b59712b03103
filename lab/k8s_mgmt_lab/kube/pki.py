"""The cluster's CA and certificates, kubeconfigs and the uploaded-certs box.

Real X.509 from ``cryptography``: a self-signed CA like kubeadm's
(``kubernetes``), an API server serving certificate with the SANs clients
use, the CA's SubjectPublicKeyInfo hash that ``kubeadm join`` pins, and
AES-GCM sealing of the control-plane certificates under the certificate key
(what ``kubeadm init phase upload-certs`` does).
"""

import base64
import datetime
import hashlib
import ipaddress
import os
import secrets

from k8s_mgmt_lab import kube

# cryptography (~40 ms) and PyYAML (~15 ms) are imported inside the functions
# that use them: most stand-in runs (``version``, the kubelet's heartbeats,
# ``systemctl``) never sign, parse a certificate or read a kubeconfig twice.

CA_CERT = kube.PKI_DIR + '/ca.crt'
CA_KEY = kube.PKI_DIR + '/ca.key'
APISERVER_CERT = kube.PKI_DIR + '/apiserver.crt'
APISERVER_KEY = kube.PKI_DIR + '/apiserver.key'
# What a control-plane join downloads (the stand-in's CA is all it needs).
SHARED_FILES = ('ca.crt', 'ca.key')


def _name(common_name):
    from cryptography import x509
    from cryptography.x509.oid import NameOID
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key):
    from cryptography.hazmat.primitives import serialization
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _validity(builder, days):
    start = datetime.datetime.now(datetime.timezone.utc)
    return builder.not_valid_before(start - datetime.timedelta(minutes=5)) \
        .not_valid_after(start + datetime.timedelta(days=days))


def make_ca():
    """(cert PEM, key PEM) of a new cluster CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _validity(x509.CertificateBuilder(), 3650) \
        .subject_name(_name('kubernetes')).issuer_name(_name('kubernetes')) \
        .public_key(key.public_key()) \
        .serial_number(x509.random_serial_number()) \
        .add_extension(x509.BasicConstraints(ca=True, path_length=None),
                       critical=True) \
        .add_extension(x509.KeyUsage(True, False, False, False, False, True,
                                     True, False, False), critical=True)
    cert = builder.sign(key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def make_serving_cert(ca_cert_pem, ca_key_pem, sans):
    """(cert PEM, key PEM) for the API server; ``sans`` are IPs or names."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, None)
    key = ec.generate_private_key(ec.SECP256R1())
    names = []
    for san in dict.fromkeys(s for s in sans if s):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(san)))
        except ValueError:
            names.append(x509.DNSName(san))
    builder = _validity(x509.CertificateBuilder(), 365) \
        .subject_name(_name('kube-apiserver')) \
        .issuer_name(ca_cert.subject).public_key(key.public_key()) \
        .serial_number(x509.random_serial_number()) \
        .add_extension(x509.SubjectAlternativeName(names), critical=False) \
        .add_extension(x509.ExtendedKeyUsage(
            [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def apiserver_sans(node_ip, node_name, endpoint_host=None, extra=()):
    return ([node_ip, endpoint_host, '127.0.0.1', 'localhost', node_name,
             '10.96.0.1', 'kubernetes', 'kubernetes.default',
             'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local']
            + list(extra))


def ca_cert_hash(ca_cert_pem):
    """``sha256:<hex>`` of the CA's SubjectPublicKeyInfo (kubeadm's pin)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    cert = x509.load_pem_x509_certificate(ca_cert_pem)
    spki = cert.public_key().public_bytes(
        serialization.Encoding.DER,
        serialization.PublicFormat.SubjectPublicKeyInfo)
    return 'sha256:' + hashlib.sha256(spki).hexdigest()


def write_ca(cert_pem, key_pem):
    kube.write_file(CA_CERT, cert_pem, 0o644)
    kube.write_file(CA_KEY, key_pem, 0o600)


def write_serving_cert(sans):
    with open(CA_CERT, 'rb') as f:
        ca_pem = f.read()
    with open(CA_KEY, 'rb') as f:
        ca_key = f.read()
    cert, key = make_serving_cert(ca_pem, ca_key, sans)
    kube.write_file(APISERVER_CERT, cert, 0o644)
    kube.write_file(APISERVER_KEY, key, 0o600)


def read_ca():
    with open(CA_CERT, 'rb') as f:
        return f.read()


def new_token(nbytes=24):
    return secrets.token_urlsafe(nbytes)


# -- kubeconfig --------------------------------------------------

def kubeconfig(server, ca_pem, user, token):
    """A kubeconfig (YAML text) with the CA inline and a bearer token."""
    import yaml
    doc = {
        'apiVersion': 'v1', 'kind': 'Config',
        'clusters': [{'name': 'kubernetes', 'cluster': {
            'server': server,
            'certificate-authority-data': base64.b64encode(ca_pem).decode()}}],
        'users': [{'name': user, 'user': {'token': token}}],
        'contexts': [{'name': '%s@kubernetes' % user,
                      'context': {'cluster': 'kubernetes', 'user': user}}],
        'current-context': '%s@kubernetes' % user,
        'preferences': {},
    }
    return yaml.safe_dump(doc, default_flow_style=False)


def read_kubeconfig(path):
    """(server, CA PEM bytes, token) of a kubeconfig written above."""
    import yaml
    with open(path) as f:
        doc = yaml.safe_load(f)
    context = next(c['context'] for c in doc['contexts']
                   if c['name'] == doc['current-context'])
    cluster = next(c['cluster'] for c in doc['clusters']
                   if c['name'] == context['cluster'])
    user = next(u['user'] for u in doc['users']
                if u['name'] == context['user'])
    return (cluster['server'],
            base64.b64decode(cluster['certificate-authority-data']),
            user.get('token'))


# -- uploaded certificates ---------------------------------------------------

def seal(files, certificate_key):
    """{name: base64(nonce + AES-GCM ciphertext)} under the hex key."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    box = AESGCM(bytes.fromhex(certificate_key))
    sealed = {}
    for name, data in files.items():
        nonce = os.urandom(12)
        blob = nonce + box.encrypt(nonce, data, name.encode())
        sealed[name] = base64.b64encode(blob).decode()
    return sealed


def unseal(sealed, certificate_key):
    """The inverse of seal; raises ValueError for a wrong key."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    try:
        box = AESGCM(bytes.fromhex(certificate_key))
        files = {}
        for name, text in sealed.items():
            blob = base64.b64decode(text)
            files[name] = box.decrypt(blob[:12], blob[12:], name.encode())
        return files
    except Exception:
        raise ValueError('the certificate key does not decrypt the uploaded '
                         'certificates')
