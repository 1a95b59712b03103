"""A container registry VM for the lab: this project's setup_registry.sh
run in it, so Debian's real docker-registry, installed with apt-get from
the VMs' local repository, serves HTTPS with a self-signed certificate
the script makes; and a client that pushes a small image into it through
the registry's HTTP API, as ``docker push`` would.

What a cluster request names to use it: the registry's ``HOST:PORT``, the
certificate as the CA to trust, and a hosts line when the host is a name.
"""

import gzip
import hashlib
import io
import json
import os
import tarfile
import tempfile
import urllib.parse

import requests

from k8s_mgmt import shipped
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.kube import pki

PORT = 5000
# Where the registry keeps images and TLS material in the VM (a volume's
# mount point on a real registry VNF).
DATA_DIR = '/srv/registry'
SCRIPT_DIR = '/root/k8s-mgmt-registry'
REQUEST_TIMEOUT = 30.0
OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'
OCI_CONFIG = 'application/vnd.oci.image.config.v1+json'
OCI_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip'


def other_ca():
    """The certificate of a CA that signed nothing of the registry's."""
    return pki.make_ca()[0]


def set_up(vms, vm_id, ip, names, port=PORT):
    """setup_registry.sh in the VM (with its library): docker-registry on
    ``ip:port`` with a self-signed certificate for ``ip`` and ``names``.
    (base URL, the certificate PEM clients trust)."""
    vms.exec(vm_id, ['install', '-d', '-m', '0700', SCRIPT_DIR])
    for name in (shipped.SCRIPT_LIBRARY, shipped.REGISTRY_SCRIPT):
        vms.exec(vm_id, ['install', '-m', '0755', '/dev/stdin',
                         SCRIPT_DIR + '/' + name],
                 input=shipped.script(name).read_bytes())
    vms.exec(vm_id, [SCRIPT_DIR + '/' + shipped.REGISTRY_SCRIPT,
                     '--listen', '%s:%d' % (ip, port), '--dir', DATA_DIR,
                     '--self-signed', ','.join(names)], timeout=300.0)
    ca_pem = vms.exec(vm_id, ['cat', DATA_DIR + '/tls/tls.crt']).stdout
    return 'https://%s:%d' % (ip, port), ca_pem.encode()


class _trusting(object):
    """A CA file for requests' ``verify``, removed after."""

    def __init__(self, ca_pem):
        self.ca_pem = ca_pem

    def __enter__(self):
        handle, self.path = tempfile.mkstemp(suffix='.pem')
        with os.fdopen(handle, 'wb') as out:
            out.write(self.ca_pem)
        return self.path

    def __exit__(self, *exc):
        os.unlink(self.path)


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


def push(base, ca_pem, repository, tag, files):
    """Push a one-layer image of ``files`` as ``repository:tag`` through
    the registry's HTTP API (blobs, then the OCI manifest); the
    manifest's digest."""
    config_bytes, layer, _diff_id = image(files)
    with _trusting(ca_pem) as verify:
        session = requests.Session()
        # Lab traffic only: no proxy from the environment.
        session.trust_env = False
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


def manifest_digest(base, ca_pem, repository, tag):
    """The digest the registry serves for ``repository:tag`` (its
    ``Docker-Content-Digest``, checked against the manifest's bytes)."""
    with _trusting(ca_pem) as verify:
        session = requests.Session()
        session.trust_env = False
        response = session.get(
            '%s/v2/%s/manifests/%s' % (base, repository, tag),
            headers={'Accept': OCI_MANIFEST}, verify=verify,
            timeout=REQUEST_TIMEOUT)
        _expect(response, 200, 'get the manifest of %s:%s'
                % (repository, tag))
    digest = 'sha256:' + hashlib.sha256(response.content).hexdigest()
    served = response.headers.get('Docker-Content-Digest')
    if served not in (None, digest):
        raise LabError('the registry names manifest %s:%s %s, its bytes '
                       'are %s' % (repository, tag, served, digest))
    return digest
