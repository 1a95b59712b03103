"""A container registry VM for the lab: Debian's real docker-registry,
installed with apt-get from the VMs' local repository, serving HTTPS with
a certificate of a CA made here, its images on the VM's own disk; and a
client that pushes a small image into it through the registry's HTTP API,
as ``docker push`` would.

What a cluster request names to use it: the registry's ``HOST:PORT`` and
the CA certificate (:class:`Tls`), and a hosts line when the host is a
name.
"""

import dataclasses
import gzip
import hashlib
import io
import json
import tarfile
import textwrap
import urllib.parse

import requests

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.kube import pki

PORT = 5000
CONFIG_DIR = '/etc/docker/registry'
STORAGE_DIR = '/var/lib/docker-registry'
SERVICE = 'docker-registry'
READY_DEADLINE = 60.0
REQUEST_TIMEOUT = 30.0
OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'
OCI_CONFIG = 'application/vnd.oci.image.config.v1+json'
OCI_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip'


@dataclasses.dataclass(frozen=True)
class Tls:
    """The registry's CA certificate (what clients trust) and its own
    certificate and key, PEM."""
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


def make_tls(names):
    """A new CA and a serving certificate for ``names`` (IPs or DNS
    names)."""
    ca_pem, ca_key = pki.make_ca()
    cert_pem, key_pem = pki.make_serving_cert(ca_pem, ca_key, names)
    return Tls(ca_pem, cert_pem, key_pem)


def config(ip, port=PORT):
    """docker-registry's config.yml: HTTPS on ``ip:port``, images on the
    VM's disk, no deletes."""
    return textwrap.dedent("""\
        version: 0.1
        log:
          level: info
        storage:
          filesystem:
            rootdirectory: {storage}
          delete:
            enabled: false
        http:
          addr: {ip}:{port}
          tls:
            certificate: {etc}/tls.crt
            key: {etc}/tls.key
        """).format(storage=STORAGE_DIR, ip=ip, port=port, etc=CONFIG_DIR)


def set_up(vms, vm_id, ip, tls, port=PORT):
    """Install docker-registry in the VM with apt-get, give it ``tls``,
    start it, and wait until it answers ``/v2/`` over HTTPS; its base
    URL."""
    run = _runner(vms, vm_id)
    run(['apt-get', 'update', '-q'], timeout=120.0)
    run(['apt-get', 'install', '-y', '-q', SERVICE], timeout=300.0)
    run(['install', '-m', '0644', '/dev/stdin', CONFIG_DIR + '/tls.crt'],
        input=tls.cert_pem)
    # The key: readable by the service's group only.
    run(['install', '-m', '0640', '-g', SERVICE, '/dev/stdin',
         CONFIG_DIR + '/tls.key'], input=tls.key_pem)
    run(['install', '-m', '0644', '/dev/stdin',
         CONFIG_DIR + '/config.yml'], input=config(ip, port).encode())
    run(['systemctl', 'start', SERVICE])
    base = 'https://%s:%d' % (ip, port)
    with _trusting(tls) as verify:
        for _ in Poll(READY_DEADLINE, first=0.2, maximum=2.0):
            try:
                if requests.get(base + '/v2/', verify=verify,
                                timeout=5.0).status_code == 200:
                    return base
            except requests.RequestException:
                continue
    raise LabError('docker-registry in %s does not answer %s/v2/ within '
                   '%.0f s' % (vm_id, base, READY_DEADLINE))


def _runner(vms, vm_id):
    def run(argv, input=None, timeout=60.0):
        return vms.exec(vm_id, argv, input=input, timeout=timeout)
    return run


class _trusting(object):
    """A CA file for requests' ``verify``, removed after."""

    def __init__(self, tls):
        self.tls = tls

    def __enter__(self):
        import tempfile
        self.handle = tempfile.NamedTemporaryFile(suffix='.pem')
        self.handle.write(self.tls.ca_pem)
        self.handle.flush()
        return self.handle.name

    def __exit__(self, *exc):
        self.handle.close()


def image(files):
    """(config bytes, layer bytes, diff id) of a one-layer image holding
    ``files`` ({path: bytes})."""
    tar_bytes = io.BytesIO()
    with tarfile.open(fileobj=tar_bytes, mode='w') as archive:
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            archive.addfile(info, io.BytesIO(data))
    raw = tar_bytes.getvalue()
    layer = gzip.compress(raw, mtime=0)
    diff_id = 'sha256:' + hashlib.sha256(raw).hexdigest()
    config_doc = {'architecture': 'amd64', 'os': 'linux', 'config': {},
                  'rootfs': {'type': 'layers', 'diff_ids': [diff_id]}}
    return json.dumps(config_doc, sort_keys=True).encode(), layer, diff_id


def push(base, tls, repository, tag, files):
    """Push a one-layer image of ``files`` as ``repository:tag`` through
    the registry's HTTP API (blobs, then the OCI manifest); the
    manifest's digest."""
    config_bytes, layer, _diff_id = image(files)
    with _trusting(tls) as verify:
        session = requests.Session()
        session.verify = verify
        descriptors = [_blob(session, base, repository, data, media)
                       for data, media in ((config_bytes, OCI_CONFIG),
                                           (layer, OCI_LAYER))]
        manifest = json.dumps({
            'schemaVersion': 2, 'mediaType': OCI_MANIFEST,
            'config': descriptors[0], 'layers': descriptors[1:]},
            sort_keys=True).encode()
        response = session.put(
            '%s/v2/%s/manifests/%s' % (base, repository, tag), data=manifest,
            headers={'Content-Type': OCI_MANIFEST}, timeout=REQUEST_TIMEOUT)
        _expect(response, 201, 'put the manifest of %s:%s'
                % (repository, tag))
    return 'sha256:' + hashlib.sha256(manifest).hexdigest()


def _blob(session, base, repository, data, media):
    digest = 'sha256:' + hashlib.sha256(data).hexdigest()
    started = session.post('%s/v2/%s/blobs/uploads/' % (base, repository),
                           timeout=REQUEST_TIMEOUT)
    _expect(started, 202, 'start a blob upload to %s' % repository)
    location = urllib.parse.urljoin(base + '/', started.headers['Location'])
    joiner = '&' if '?' in location else '?'
    done = session.put(location + joiner + urllib.parse.urlencode(
        {'digest': digest}), data=data,
        headers={'Content-Type': 'application/octet-stream'},
        timeout=REQUEST_TIMEOUT)
    _expect(done, 201, 'upload blob %s' % digest)
    return {'mediaType': media, 'digest': digest, 'size': len(data)}


def _expect(response, status, what):
    if response.status_code != status:
        raise LabError('%s: HTTP %d: %s' % (
            what, response.status_code, response.text[:300]))
