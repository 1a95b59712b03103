"""Build the sample VNF package (CSAR) with the driver that is installed.

Tacker's v1 conductor refuses to run a MgmtDriver hook when the package's
driver artifact differs from the module that defines the installed driver
class (it compares SHA-256 digests), and it refuses a CSAR whose
``TOSCA-Metadata/TOSCA.meta`` lists a digest that does not match. So the
package is assembled, not hand-edited: the sample source tree that the
distribution ships (``k8s_mgmt/samples/vnf_package``, or another tree given
with ``--source``), each installed driver module as
the artifact its flavours' VNFDs name (``Scripts/k8s_mgmt_driver.py`` for
``mgmt-drivers-kubernetes``, ``Scripts/k8s_mgmt_kubespray_driver.py`` for
``mgmt-drivers-kubespray``), the shipped node scripts under ``Scripts/``
(the cluster install, the load balancers and the storage server's
script),
and a TOSCA.meta whose artifact entries (``Source``/``Algorithm``/``Hash``,
ETSI SOL004) are computed here. The zip is reproducible: sorted entries and a
fixed timestamp, so the same inputs give the same bytes.

``api='v2'`` builds the package for Tacker's v2 VNF LCM API instead: the
v2 script in place of the driver artifacts, and the changes
:mod:`k8s_mgmt.package_v2` describes.
"""

import hashlib
import importlib
import inspect
import io
import os
import pathlib
import re
import shutil
import tempfile
import zipfile

from oslo_log import log as logging

from k8s_mgmt import shipped

LOG = logging.getLogger(__name__)

TOSCA_META = 'TOSCA-Metadata/TOSCA.meta'
DRIVER_ARTIFACT = 'Scripts/k8s_mgmt_driver.py'
KUBESPRAY_DRIVER_ARTIFACT = 'Scripts/k8s_mgmt_kubespray_driver.py'
# Artifact path -> (module, class) of the driver whose defining module
# Tacker hashes; a new driver is one more entry here.
DRIVER_ARTIFACTS = {
    DRIVER_ARTIFACT: ('k8s_mgmt.driver', 'KubernetesMgmtDriver'),
    KUBESPRAY_DRIVER_ARTIFACT: ('k8s_mgmt.kubespray.driver',
                                'KubesprayMgmtDriver'),
}
HASH_ALGORITHM = 'SHA-256'
# The Tacker VNF LCM APIs a package can be built for.
API_V1 = 'v1'
API_V2 = 'v2'
APIS = (API_V1, API_V2)
# The zip format cannot store dates before 1980; any fixed date will do.
ZIP_TIMESTAMP = (1980, 1, 1, 0, 0, 0)
_SKIPPED_DIRS = {'__pycache__'}
_SKIPPED_SUFFIXES = ('.pyc', '.pyo', '.swp', '~')


class PackageError(Exception):
    """The package cannot be built from what is on disk."""


def driver_module_path(artifact=DRIVER_ARTIFACT):
    """The file that defines the installed driver class of ``artifact``:
    what Tacker hashes."""
    module_name, class_name = DRIVER_ARTIFACTS[artifact]
    module = importlib.import_module(module_name)
    return inspect.getsourcefile(getattr(module, class_name))


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def _read(entry):
    """Bytes of a file: a path or an importlib.resources Traversable."""
    try:
        if isinstance(entry, (str, os.PathLike)):
            entry = pathlib.Path(entry)
        return entry.read_bytes()
    except OSError as err:
        raise PackageError('cannot read %s: %s' % (entry, err.strerror or err))


def _source_root(source_dir):
    """The source tree as a Traversable: the shipped sample by default."""
    if source_dir is None:
        return shipped.sample_package()
    return pathlib.Path(source_dir)


def _walk(entry, prefix='', root=None):
    """(archive name, Traversable) of every file under ``entry``.

    ``root`` is the resolved source tree when it is on disk: its links and
    special files are checked (:func:`_check_on_disk`)."""
    for child in sorted(entry.iterdir(), key=lambda c: c.name):
        name = prefix + child.name
        if root is not None:
            _check_on_disk(child, name, root)
        if child.is_dir():
            if child.name not in _SKIPPED_DIRS:
                yield from _walk(child, name + '/', root)
        elif not child.name.endswith(_SKIPPED_SUFFIXES):
            yield name, child


def _check_on_disk(path, name, root):
    """Refuse a symlink that leaves the tree or names a directory, and
    anything that is not a regular file or a directory.

    A link to a file inside the tree is followed: its bytes are in the tree
    already. A directory link would repeat a subtree or loop back up it.
    """
    if path.is_symlink():
        target = os.readlink(path)
        resolved = os.path.realpath(path)
        if os.path.commonpath([root, resolved]) != root:
            raise PackageError('%r is a symlink to %r, outside the source '
                               'tree %r; copy the file in instead'
                               % (name, target, root))
        if os.path.isdir(resolved):
            raise PackageError('%r is a symlink to the directory %r; '
                               'directory links are not followed' %
                               (name, target))
        if not os.path.isfile(resolved):
            raise PackageError('%r is a symlink to %r, which is no file'
                               % (name, target))
    if not (path.is_dir() or path.is_file()):
        raise PackageError('%r is not a regular file or a directory'
                           % name)


def _source_files(root):
    """{archive name: bytes} of the source tree, TOSCA.meta excluded."""
    if not root.joinpath(*TOSCA_META.split('/')).is_file():
        raise PackageError('%s is not a VNF package source: %s is missing'
                           % (root, TOSCA_META))
    on_disk = (os.path.realpath(root) if isinstance(root, pathlib.Path)
               else None)
    return {name: _read(entry) for name, entry in _walk(root, root=on_disk)
            if name != TOSCA_META}


def _added_files(api=API_V1):
    """The driver modules (v1) and the scripts, from this installation.

    Every shipped script must be there: a package without one would fail
    only when the driver needs it on a VM."""
    added = ({artifact: _read(driver_module_path(artifact))
              for artifact in DRIVER_ARTIFACTS} if api == API_V1 else {})
    for name in shipped.SCRIPTS:
        entry = shipped.script(name)
        if not entry.is_file():
            raise PackageError('this installation of k8s-mgmt lacks the '
                               'node script %s (looked in %s)'
                               % (name, entry))
        added['Scripts/' + name] = _read(entry)
    return added


def tosca_meta_header(root):
    """Block 0 of the source TOSCA.meta (its artifact entries dropped)."""
    text = _read(root.joinpath(*TOSCA_META.split('/'))).decode('utf-8')
    block = text.replace('\r\n', '\n').split('\n\n', 1)[0]
    lines = [line for line in block.splitlines() if line.strip()]
    keys = {line.split(':', 1)[0].strip() for line in lines}
    missing = [k for k in ('TOSCA-Meta-File-Version', 'Entry-Definitions')
               if k not in keys]
    if missing:
        raise PackageError('%s lacks %s' % (TOSCA_META, ', '.join(missing)))
    return '\n'.join(lines) + '\n'


def render_tosca_meta(header, files):
    """TOSCA.meta: the header, then one Source/Algorithm/Hash block per file.

    Blocks are separated by a blank line, which is how Tacker splits them.
    """
    blocks = [header.rstrip('\n')]
    for name in sorted(files):
        blocks.append('Source: %s\nAlgorithm: %s\nHash: %s'
                      % (name, HASH_ALGORITHM, sha256_hex(files[name])))
    return ('\n\n'.join(blocks) + '\n').encode('utf-8')


def parse_tosca_meta(data):
    """{Source: (Algorithm, Hash)} of the artifact blocks of a TOSCA.meta."""
    entries = {}
    for block in data.decode('utf-8').replace('\r\n', '\n').split('\n\n'):
        fields = {}
        for line in block.splitlines():
            key, sep, value = line.partition(':')
            if sep:
                fields[key.strip()] = value.strip()
        if 'Source' in fields:
            entries[fields['Source']] = (fields.get('Algorithm'),
                                         fields.get('Hash'))
    return entries


# The descriptor_id of the sample VNFD.
SAMPLE_VNFD_ID = '2807101a-7250-45ae-8908-d3151a302ea9'
_UUID = re.compile(r'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}$')


def with_vnfd_id(files, vnfd_id):
    """The package's VNFD files with ``vnfd_id`` as their descriptor_id
    instead of the sample's. Tacker 16 keeps a VNFD id it onboarded for
    good (its ``vnfd`` row outlives the package): a rebuilt package is
    onboarded again under a new id."""
    if not _UUID.match(vnfd_id or ''):
        raise PackageError('--vnfd-id must be a lower-case UUID, not %r'
                           % (vnfd_id,))
    found = False
    changed = dict(files)
    for name, data in files.items():
        if name.startswith('Definitions/') and \
                SAMPLE_VNFD_ID.encode() in data:
            changed[name] = data.replace(SAMPLE_VNFD_ID.encode(),
                                         vnfd_id.encode())
            found = True
    if not found:
        raise PackageError('no VNFD under Definitions/ has the sample\'s '
                           'descriptor_id %s to replace' % SAMPLE_VNFD_ID)
    return changed


def _check_api(api):
    if api not in APIS:
        raise PackageError('--api must be one of %s, not %r'
                           % (', '.join(APIS), api))


def _v2_files(files):
    """The v1 package's files (TOSCA.meta aside) made into the v2 one."""
    from k8s_mgmt import package_v2
    try:
        return package_v2.transform(files)
    except package_v2.V2PackageError as err:
        raise PackageError(str(err)) from err


# The file naming the Kubernetes version of the package
# (k8s_mgmt.params.package_version.FILE, which this module does not import:
# the package builder stays apart from the parameters).
VERSION_FILE = 'Files/k8s-mgmt/kubernetes_version'


def version_file(kubernetes_version):
    """{VERSION_FILE: bytes} naming ``kubernetes_version`` (1.36 or
    1.36.1, a minor the shipped install script supports)."""
    from k8s_mgmt import kube_versions
    found = kube_versions.parse(kubernetes_version or '')
    if found is None or str(found) != kubernetes_version.strip():
        raise PackageError('--kubernetes-version must be a version such as '
                           '1.36 or 1.36.1, not %r' % (kubernetes_version,))
    if found.minor not in shipped.SUPPORTED_MINORS:
        raise PackageError(
            '--kubernetes-version %s: the install script supports 1.%d to '
            '1.%d' % (found, shipped.SUPPORTED_MINORS[0],
                      shipped.SUPPORTED_MINORS[-1]))
    return {VERSION_FILE: ('%s\n' % found).encode('ascii')}


def assemble(source_dir=None, vnfd_id=None, api=API_V1,
             kubernetes_version=None):
    """{archive name: bytes} of the whole package, TOSCA.meta included.

    ``source_dir`` None means the sample source tree this distribution
    ships; ``vnfd_id`` replaces the sample's descriptor_id; ``api`` 'v2'
    makes the package for Tacker's v2 API (see :mod:`k8s_mgmt.package_v2`);
    ``kubernetes_version`` is the version the package names: the default
    of an instantiate, and the target of a change to this package (v2).
    """
    _check_api(api)
    root = _source_root(source_dir)
    files = _source_files(root)
    if vnfd_id:
        files = with_vnfd_id(files, vnfd_id)
    if kubernetes_version:
        files.update(version_file(kubernetes_version))
    files.update(_added_files(api))
    if api == API_V2:
        files = _v2_files(files)
    files[TOSCA_META] = render_tosca_meta(tosca_meta_header(root), files)
    return dict(sorted(files.items()))


def _mode(name):
    return 0o755 if name.endswith('.sh') else 0o644


def zip_bytes(files):
    """The CSAR as bytes: same files in, same bytes out."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, 'w', zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=ZIP_TIMESTAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so the mode bits below count
            info.external_attr = (0o100000 | _mode(name)) << 16
            archive.writestr(info, files[name])
    return buffer.getvalue()


def write_zip(files, path):
    data = zip_bytes(files)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix='.csar-')
    try:
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _looks_like_package(path):
    return (not os.listdir(path) or
            os.path.isfile(os.path.join(path, TOSCA_META)))


def write_dir(files, path):
    """The package unpacked into ``path`` (replacing an earlier build there).

    A non-empty directory that is not a package is refused rather than wiped.
    """
    path = os.path.abspath(path)
    if os.path.isdir(path) and not _looks_like_package(path):
        raise PackageError('%s exists and is not a VNF package directory; '
                           'refusing to replace it' % path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(dir=parent, prefix='.pkg-')
    try:
        for name, data in files.items():
            target = os.path.join(staging, *name.split('/'))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, 'wb') as handle:
                handle.write(data)
            os.chmod(target, _mode(name))
        os.chmod(staging, 0o755)
        if os.path.isdir(path):
            shutil.rmtree(path)
        os.replace(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return path


def build(output=None, output_dir=None, source_dir=None, vnfd_id=None,
          api=API_V1, kubernetes_version=None):
    """Assemble the package and write it as a zip and/or a directory.

    Returns the assembled ``{archive name: bytes}``.
    """
    files = assemble(source_dir, vnfd_id, api=api,
                     kubernetes_version=kubernetes_version)
    if output:
        write_zip(files, output)
        LOG.info('VNF package written to %s (%d files)', output, len(files))
    if output_dir:
        write_dir(files, output_dir)
        LOG.info('VNF package unpacked into %s', output_dir)
    return files
