"""The lab's Kubernetes apt repository: a stand-in for pkgs.k8s.io.

The install script adds pkgs.k8s.io's repository of the cluster's minor
and installs kubeadm, kubelet and kubectl from it with apt-get. Lab VMs
reach no Internet, so the lab builds a repository laid out like
pkgs.k8s.io and serves it over HTTP from the bridge's gateway address
(:mod:`.repo_server`). The
repository, its signatures and the apt-get that reads them are real; the
packages hold the lab's stand-ins (the wrappers the caller's ``payload``
gives, ``k8s_mgmt_lab.kube``'s Python behind them), not Kubernetes.

Every minor of ``shipped.SUPPORTED_MINORS`` is a flat repository of its
own, at the path pkgs.k8s.io uses::

    core:/stable:/v1.35/deb/InRelease      Release, clearsigned
    core:/stable:/v1.35/deb/Release        what apt checks Packages against
    core:/stable:/v1.35/deb/Release.gpg    Release's detached signature
    core:/stable:/v1.35/deb/Release.key    the signing key, ASCII-armored
    core:/stable:/v1.35/deb/Packages       and Packages.gz
    core:/stable:/v1.35/deb/amd64/kubeadm_1.35.1-1.1_amd64.deb ...

read with ``deb [signed-by=KEYRING] URL/core:/stable:/v1.35/deb/ /``,
where KEYRING is Release.key through ``gpg --dearmor``, as operators make
it. An operator's mirror of pkgs.k8s.io (for VMs without Internet) must
serve the same paths under its own URL: those files of every minor it
offers, the ``.deb`` files its Packages name, and the same key.

The ``.deb`` files are kept in a cache directory of the caller's, named by
a hash of everything in them, so a build with the same payload only copies
them, writes the indexes and signs (well under a second).
"""

import collections
from collections.abc import Mapping
import concurrent.futures
import contextlib
import email.utils
import fcntl
import gzip
import hashlib
import logging
import os
import shutil
import tempfile
import time

from k8s_mgmt import shipped
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines import repo_signing
from k8s_mgmt_lab.machines.repo_signing import run_tool as _run

LOG = logging.getLogger(__name__)

# Patch releases of kubeadm, kubelet and kubectl in every minor's repository.
PATCHES = (0, 1)
# pkgs.k8s.io's Debian revision (its packages are built by openSUSE's OBS).
REVISION = '-1.1'
CNI_VERSION = '1.7.1' + REVISION
ARCH = 'amd64'
# What the caller's payload gives: the executable of each, per version.
TOOLS = ('kubeadm', 'kubelet', 'kubectl', 'crictl')
CNI_PLUGINS = ('bridge', 'host-local', 'loopback', 'portmap')
MAINTAINER = 'k8s-mgmt lab <k8s-mgmt-lab@lab.invalid>'
# -Znone over -Zgzip: a .deb of a few hundred bytes of payload takes 5 ms
# to build, 7 ms with gzip (measured; the files are 20 KiB, not 0.6).
COMPRESSION = '-Znone'
# Every .deb's timestamps, so a cache entry's bytes depend on its key only.
SOURCE_DATE_EPOCH = '1735689600'
# In every cache key: change it when what goes into a .deb changes here.
_DEB_FORMAT = 'k8s-repo-deb-1'

KUBEADM_DROPIN = """\
# kubelet as kubeadm runs it (k8s-mgmt lab stand-in package, not Kubernetes)
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=\
--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf \
--kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# Written by "kubeadm init" and "kubeadm join".
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# The operator's own flags, in KUBELET_EXTRA_ARGS.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS \
$KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
"""

KUBELET_UNIT = """\
# k8s-mgmt lab stand-in package, not Kubernetes
[Unit]
Description=kubelet: The Kubernetes Node Agent (k8s-mgmt lab stand-in)
Wants=network-online.target
After=network-online.target

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
"""

CNI_STANDIN = """#!/bin/sh
# k8s-mgmt lab stand-in for the {plugin} CNI plugin (not the real one)
echo "{plugin}: k8s-mgmt lab stand-in, not a CNI plugin" >&2
exit 1
"""

# A package: its control fields and its files, each (path, mode, bytes).
Package = collections.namedtuple(
    'Package', 'name version depends summary files')


def minor_dir(root, minor):
    """The directory of minor ``minor``'s repository under ``root``."""
    return os.path.join(root, 'core:', 'stable:', 'v1.%d' % minor, 'deb')


def base_url(host, port):
    """What apt source lines start with: ``http://HOST:PORT/core:/stable:/``
    (the minor's ``v1.35/deb/`` follows)."""
    if ':' in host:
        host = '[%s]' % host
    return 'http://%s:%d/core:/stable:/' % (host, port)


def source_line(base, minor, keyring):
    """The apt source line of minor ``minor``'s flat repository."""
    return 'deb [signed-by=%s] %sv1.%d/deb/ /' % (keyring, base, minor)


def versions(minor, patches=PATCHES):
    """kubeadm's, kubelet's and kubectl's versions in minor ``minor``."""
    return ['1.%d.%d%s' % (minor, patch, REVISION) for patch in patches]


# -- the packages ------------------------------------------------------------

def packages(minor, payload, patches=PATCHES):
    """Minor ``minor``'s packages, with the payload's executables."""
    made = []
    for version in versions(minor, patches):
        upstream = version[:-len(REVISION)]
        made += [
            _package('kubeadm', version, 'cri-tools (>= 1.%d.0)' % minor,
                     'Kubernetes cluster bootstrapping tool',
                     [_tool(payload, 'kubeadm', upstream),
                      ('usr/lib/systemd/system/kubelet.service.d/'
                       '10-kubeadm.conf', 0o644, KUBEADM_DROPIN)]),
            _package('kubelet', version, 'kubernetes-cni (>= 1.1.1)',
                     'Kubernetes node agent',
                     [_tool(payload, 'kubelet', upstream),
                      ('usr/lib/systemd/system/kubelet.service', 0o644,
                       KUBELET_UNIT)]),
            _package('kubectl', version, None,
                     'Kubernetes command-line client',
                     [_tool(payload, 'kubectl', upstream)]),
        ]
    crictl = '1.%d.0' % minor
    made.append(_package('cri-tools', crictl + REVISION, None,
                         'command-line client of CRI runtimes',
                         [_tool(payload, 'crictl', crictl)]))
    made.append(_package(
        'kubernetes-cni', CNI_VERSION, None, 'CNI plugins',
        [('opt/cni/bin/' + plugin, 0o755, CNI_STANDIN.format(plugin=plugin))
         for plugin in CNI_PLUGINS]))
    return made


# dl.k8s.io's layout of the release binaries, which kubespray downloads
# (its dl_k8s_io_url): DOWNLOADS/release/v1.35.1/bin/linux/amd64/kubeadm.
DOWNLOADS = 'dl'
DOWNLOADED_TOOLS = ('kubeadm', 'kubelet', 'kubectl')


def download_path(root, version, tool):
    """Where ``tool`` of ``version`` ('1.35.1') is under ``root``."""
    return os.path.join(root, DOWNLOADS, 'release', 'v' + version, 'bin',
                        'linux', ARCH, tool)


def write_downloads(root, payload, minors=None, patches=PATCHES):
    """The same executables as the packages, laid out as dl.k8s.io serves
    release binaries (for the kubespray stand-in, which downloads them as
    kubespray does). Written into the built ``root``."""
    minors = shipped.SUPPORTED_MINORS if minors is None else minors
    for minor in minors:
        for version in versions(minor, patches):
            upstream = version[:-len(REVISION)]
            for tool in DOWNLOADED_TOOLS:
                _, mode, text = _tool(payload, tool, upstream)
                path = download_path(root, upstream, tool)
                _makedirs(os.path.dirname(path))
                _write(path, mode, text.encode() if isinstance(text, str)
                       else text)


def downloads_url(base):
    """dl.k8s.io's stand-in URL beside the repository at ``base``
    (:func:`base_url`)."""
    return base.split('/core:/', 1)[0] + '/' + DOWNLOADS


def _package(name, version, depends, summary, files):
    return Package(name, version, depends, summary, tuple(
        (path, mode, data.encode() if isinstance(data, str) else data)
        for path, mode, data in files))


def _tool(payload, tool, version):
    try:
        text = (payload[tool] if isinstance(payload, Mapping)
                else payload(tool, version))
    except KeyError:
        text = None
    if not isinstance(text, (str, bytes)):
        raise LabError('the Kubernetes repository\'s payload gives no '
                       'executable for %s %s' % (tool, version))
    return ('usr/bin/' + tool, 0o755, text)


def control(pkg):
    """The package's DEBIAN/control text."""
    fields = [('Package', pkg.name), ('Version', pkg.version),
              ('Architecture', ARCH), ('Maintainer', MAINTAINER),
              ('Installed-Size', str(_installed_size(pkg)))]
    if pkg.depends:
        fields.append(('Depends', pkg.depends))
    fields += [('Section', 'admin'), ('Priority', 'optional'),
               ('Description', _description(pkg))]
    return ''.join('%s: %s\n' % field for field in fields)


def _installed_size(pkg):
    return sum(-(-len(data) // 1024) for _, _, data in pkg.files) or 1


def _description(pkg):
    return ('%s (k8s-mgmt lab stand-in, not Kubernetes)\n'
            ' A stand-in the k8s-mgmt lab runs in place of this tool on its\n'
            ' test VMs; it is not software of the Kubernetes project. Do not\n'
            ' install it on a real machine.' % pkg.summary)


def cache_key(pkg):
    """A hash of everything that goes into the package's ``.deb``."""
    digest = hashlib.sha256()
    for part in (_DEB_FORMAT, COMPRESSION, control(pkg)):
        digest.update(part.encode() + b'\0')
    for path, mode, data in sorted(pkg.files):
        digest.update(b'%s\0%o\0%d\0' % (path.encode(), mode, len(data)))
        digest.update(data)
    return digest.hexdigest()[:32]


def deb_name(pkg):
    """pkgs.k8s.io's file name: ``kubeadm_1.35.1-1.1_amd64.deb``."""
    return '%s_%s_%s.deb' % (pkg.name, pkg.version, ARCH)


def cached_deb(pkg, cache):
    """The package's ``.deb`` in ``cache``, built with dpkg-deb when the
    cache has none of this content."""
    path = os.path.join(cache, '%s_%s_%s.deb' % (pkg.name, pkg.version,
                                                 cache_key(pkg)))
    if os.path.exists(path):
        return path
    os.makedirs(cache, exist_ok=True)
    stage = tempfile.mkdtemp(prefix='.build-', dir=cache)
    try:
        tree = os.path.join(stage, 'tree')
        _write(os.path.join(tree, 'DEBIAN', 'control'), 0o644,
               control(pkg).encode())
        for name, mode, data in pkg.files:
            _write(os.path.join(tree, name), mode, data)
        out = os.path.join(stage, 'out.deb')
        _run(['dpkg-deb', '--build', '--root-owner-group', COMPRESSION,
              tree, out], 'dpkg-deb',
             env=dict(os.environ, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH))
        os.replace(out, path)  # whole or not at all, for a builder alongside
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return path


def _write(path, mode, data):
    _makedirs(os.path.dirname(path))
    with open(path, 'wb') as f:
        f.write(data)
    os.chmod(path, mode)


def _makedirs(path):
    if not os.path.isdir(path):
        _makedirs(os.path.dirname(path))
        os.mkdir(path)
        os.chmod(path, 0o755)  # not the umask's: dpkg-deb checks DEBIAN's


# -- the indexes -------------------------------------------------------------

def stanza(pkg, deb_path, filename):
    """The package's Packages stanza; ``filename`` is the ``.deb``'s path
    relative to the repository's directory."""
    with open(deb_path, 'rb') as f:
        data = f.read()
    text = control(pkg)
    head, description = text.split('Description: ', 1)
    return '%sFilename: %s\nSize: %d\nMD5sum: %s\nSHA256: %s\n' \
        'Description: %s' % (head, filename, len(data),
                             hashlib.md5(data).hexdigest(),
                             hashlib.sha256(data).hexdigest(), description)


def release(files, minor, date):
    """Release of minor ``minor``'s repository: ``files`` maps an index's
    name to its bytes, ``date`` is a POSIX time."""
    lines = ['Origin: k8s-mgmt lab',
             'Label: k8s-mgmt lab stand-in for pkgs.k8s.io '
             'core:/stable:/v1.%d' % minor,
             'Architectures: %s' % ARCH,
             'Date: %s' % email.utils.formatdate(date, usegmt=True),
             'Description: k8s-mgmt lab stand-in packages, not Kubernetes']
    for field, algorithm in (('MD5Sum', hashlib.md5),
                             ('SHA256', hashlib.sha256)):
        lines.append(field + ':')
        lines += [' %s %8d %s' % (algorithm(data).hexdigest(), len(data),
                                  name)
                  for name, data in sorted(files.items())]
    return '\n'.join(lines) + '\n'


def write_unsigned(directory, minor, pkgs, cache, date):
    """Minor ``minor``'s repository in ``directory`` without signatures:
    the ``.deb`` files (from ``cache``), Packages, Packages.gz, Release."""
    os.makedirs(os.path.join(directory, ARCH), exist_ok=True)
    stanzas = []
    for pkg in pkgs:
        filename = '%s/%s' % (ARCH, deb_name(pkg))
        source = cached_deb(pkg, cache)
        shutil.copyfile(source, os.path.join(directory, filename))
        stanzas.append(stanza(pkg, source, filename))
    index = '\n'.join(stanzas).encode()
    files = {'Packages': index,
             'Packages.gz': gzip.compress(index, 6, mtime=0)}
    for name, data in files.items():
        _write(os.path.join(directory, name), 0o644, data)
    _write(os.path.join(directory, 'Release'), 0o644,
           release(files, minor, date).encode())


# -- the whole repository ----------------------------------------------------

def build(root, gnupg_home, cache, payload, minors=None, patches=PATCHES):
    """Make ``root`` the repository of ``minors`` (all the supported ones
    when None), its packages holding what ``payload`` gives: a mapping
    tool -> executable, or a callable ``payload(tool, version)``, for
    ``TOOLS`` and versions such as ``'1.35.1'``. ``gnupg_home`` keeps the
    signing key (made once), ``cache`` the ``.deb`` files; neither may be
    under ``root``, which is replaced whole. Returns the key's fingerprint.
    """
    root = os.path.abspath(root)
    for name, path in (('GnuPG home', gnupg_home), ('package cache', cache)):
        if _inside(os.path.abspath(path), root):
            raise LabError('the Kubernetes repository\'s %s %s must not be '
                           'under the served %s' % (name, path, root))
    minors = shipped.SUPPORTED_MINORS if minors is None else minors
    made = {minor: packages(minor, payload, patches) for minor in minors}
    _fill_cache(made, cache)
    parent = os.path.dirname(root)
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix='.%s-' % os.path.basename(root),
                            dir=parent)
    gpg = repo_signing.Gpg(gnupg_home)
    try:
        os.chmod(work, 0o755)
        with _locked(os.path.join(gnupg_home, '.k8s-repo.lock')):
            try:
                _fill(work, made, cache, gpg)
            finally:
                gpg.close()  # under the lock: another build's agent else
        _replace(root, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return gpg.fingerprint


@contextlib.contextmanager
def _locked(path):
    with open(path, 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # builds sharing a key: one signs
        yield


def _inside(path, root):
    return os.path.commonpath([os.path.realpath(path),
                               os.path.realpath(root)]) == \
        os.path.realpath(root)


def _fill_cache(made, cache):
    """Build the missing ``.deb`` files, on every CPU."""
    unique = {cache_key(pkg): pkg for pkgs in made.values() for pkg in pkgs}
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for future in [pool.submit(cached_deb, pkg, cache)
                       for pkg in unique.values()]:
            future.result()


def _fill(work, made, cache, gpg):
    date = time.time()
    key = gpg.public_key()
    directories = []
    for minor, pkgs in made.items():
        directory = minor_dir(work, minor)
        _makedirs(directory)
        write_unsigned(directory, minor, pkgs, cache, date)
        _write(os.path.join(directory, 'Release.key'), 0o644, key.encode())
        directories.append(directory)
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for future in [pool.submit(gpg.sign, d) for d in directories]:
            future.result()


def _replace(root, work):
    old = None
    if os.path.lexists(root):
        old = tempfile.mkdtemp(prefix='.old-', dir=os.path.dirname(root))
        os.rename(root, os.path.join(old, 'root'))
    os.rename(work, root)
    if old:
        shutil.rmtree(old, ignore_errors=True)
