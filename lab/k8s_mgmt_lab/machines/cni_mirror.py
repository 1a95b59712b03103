"""The lab's mirror of the CNI presets' pinned manifests: a stand-in for
raw.githubusercontent.com, as an operator's ``cni.mirror`` is.

A request's ``cni`` (:mod:`k8s_mgmt.cni_presets`) names Calico or flannel,
and Multus beside either; the install script fetches each manifest from
``MIRROR + Manifest.path`` (``<owner>/<repo>/<tag>/<path in the repo>``)
and checks its SHA-256 before it applies it. Lab VMs reach no Internet,
so the lab lays the same paths out in a directory (:func:`build`) and
serves it over HTTP beside its Kubernetes apt repository
(:mod:`.repo_server`; :func:`k8s_mgmt_lab.manager.build_cni_mirror`).

The files are the REAL upstream manifests, byte for byte: read at lab
time from clones of the projects' own repositories (never copied into this
repository), each at its release tag, and checked against the pin of
``cni_presets`` before it is written: a clone whose tag says otherwise
stops the build, naming both checksums. The clones are looked for under
a root directory: the caller's, else ``$K8S_MGMT_LAB_CNI_CLONES``, else
``/var/cache/k8s-mgmt-lab/git-clones`` (the lab's cache), as
``<owner>+<repo>/repo`` (a bare clone) or the like (:func:`git_dir`);
:func:`missing` says which manifest cannot be read there, for a test to
skip with that reason.
"""

import hashlib
import os
import subprocess

from k8s_mgmt import cni_presets
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines import prereq

# Where the clones are unless the caller says otherwise: this variable's
# directory, else one in the lab's cache.
SOURCE_ENV = 'K8S_MGMT_LAB_CNI_CLONES'
CACHE_SOURCE = os.path.join(prereq.PACKAGE_CACHE, 'git-clones')
# Seconds a git read may take (a cold cache of a large clone: a few).
GIT_SECONDS = 60


class MissingManifest(LabError):
    """A pinned manifest cannot be read from the clones (no clone, or no
    such tag or file in it); ``manifest`` is the cni_presets entry."""

    def __init__(self, manifest, message):
        super().__init__(message)
        self.manifest = manifest


def manifests():
    """Every pinned manifest: the presets' (by name) and Multus's."""
    return [cni_presets.PRESETS[name]
            for name in sorted(cni_presets.PRESETS)] + [cni_presets.MULTUS]


def default_source():
    """The root the clones are looked for under when the caller names
    none."""
    return os.environ.get(SOURCE_ENV) or CACHE_SOURCE


def parts(manifest):
    """(owner, repository, tag, path in the repository) of a manifest's
    ``path``, laid out as raw.githubusercontent.com serves it."""
    owner, repo, tag, path = manifest.path.split('/', 3)
    return owner, repo, tag, path


def _is_git_dir(path):
    return os.path.isfile(os.path.join(path, 'HEAD')) and \
        os.path.isdir(os.path.join(path, 'objects'))


def git_dir(source_root, owner, repo):
    """The git directory of github.com/OWNER/REPO's clone under
    ``source_root``, or None: ``<owner>+<repo>/repo`` (how this machine's
    clones are kept), ``<owner>+<repo>`` or ``<owner>/<repo>[.git]`` bare,
    or either with a work tree (its ``.git``)."""
    for relative in ('%s+%s/repo' % (owner, repo), '%s+%s' % (owner, repo),
                     '%s/%s.git' % (owner, repo), '%s/%s' % (owner, repo)):
        top = os.path.join(source_root, relative)
        for candidate in (top, os.path.join(top, '.git')):
            if _is_git_dir(candidate):
                return candidate
    return None


def read(manifest, source_root=None):
    """The bytes of ``manifest`` at its tag in its project's clone under
    ``source_root``, unchecked; MissingManifest saying what is missing.

    ``git cat-file blob TAG:PATH`` gives the blob as committed: no
    textconv, no smudge filter, no line-ending conversion (what GitHub's
    raw host serves)."""
    source_root = source_root or default_source()
    owner, repo, tag, path = parts(manifest)
    where = git_dir(source_root, owner, repo)
    if where is None:
        raise MissingManifest(manifest, 'the %s manifest (%s): no git clone '
                              'of github.com/%s/%s under %s (looked for '
                              '%s+%s/repo and the like)'
                              % (manifest.name, manifest.path, owner, repo,
                                 source_root, owner, repo))
    env = {key: value for key, value in os.environ.items()
           if not key.startswith('GIT_')}
    try:
        found = subprocess.run(
            ['git', '--git-dir', where, 'cat-file', 'blob',
             '%s:%s' % (tag, path)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            timeout=GIT_SECONDS, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise MissingManifest(manifest, 'the %s manifest: cannot run git on '
                              '%s: %s' % (manifest.name, where, err))
    if found.returncode != 0:
        said = found.stderr.decode(errors='replace').strip().splitlines()
        raise MissingManifest(manifest, 'the %s manifest: %s has no %s at '
                              '%s (git: %s)'
                              % (manifest.name, where, path, tag,
                                 said[-1] if said else 'exit %d'
                                 % found.returncode))
    return found.stdout


def check(manifest, data, where=''):
    """``data`` if its SHA-256 is the manifest's pin; else LabError naming
    both checksums (as ``sha256:HEX``, which LabError's redaction of
    64-digit hex runs keeps)."""
    digest = hashlib.sha256(data).hexdigest()
    if digest != manifest.sha256:
        raise LabError('the %s manifest %s%s has sha256:%s, not the '
                       'sha256:%s pinned in k8s_mgmt/cni_presets.py: '
                       'refused (is the clone\'s tag %s moved?)'
                       % (manifest.name, manifest.path,
                          ' from ' + where if where else '', digest,
                          manifest.sha256, parts(manifest)[2]))
    return data


def missing(source_root=None, wanted=None):
    """Why :func:`build` cannot run (which manifest is missing where), or
    None when every manifest of ``wanted`` (default: all) can be read."""
    for manifest in wanted or manifests():
        try:
            read(manifest, source_root)
        except MissingManifest as err:
            return str(err)
    return None


def build(target, source_root=None, wanted=None):
    """Lay the pinned manifests of ``wanted`` (default: all) out under
    ``target`` at their ``Manifest.path``, each read from its clone and
    checked against its pin before it is written (LabError naming both
    checksums on a mismatch; MissingManifest for a manifest not there).
    Returns {manifest name: file written}. Files are world-readable (the
    server serves what it can read) and replaced whole, never half
    written."""
    written = {}
    for manifest in wanted or manifests():
        owner, repo, tag, _ = parts(manifest)
        data = check(manifest, read(manifest, source_root),
                     '%s+%s at %s' % (owner, repo, tag))
        path = os.path.join(target, *manifest.path.split('/'))
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        tmp = '%s.tmp%d' % (path, os.getpid())
        with open(tmp, 'wb') as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        written[manifest.name] = path
    return written


def url(host, port, directory):
    """The URL of a mirror served at ``directory`` (a path under the
    server's root) on ``host``:``port``, as ``cni.mirror`` names it (ends
    with '/')."""
    if ':' in host:
        host = '[%s]' % host
    return 'http://%s:%d/%s/' % (host, port, directory.strip('/'))
