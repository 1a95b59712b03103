"""What the lab needs from the machine, checked before anything is made,
and the Debian packages it keeps for its VMs.

Lab VMs reach no package mirror. The packages the storage script installs
in them (``VM_PACKAGES``) are downloaded once by the host into a local file
repository that the VMs' apt sees as their only source; the NFS server the
lab runs in place of the kernel's (nfs-ganesha) is unpacked into a private
tree, not installed: its Debian package depends on nfs-common, which the
host must not have, or every VM would have it too.
"""

import contextlib
import fcntl
import glob
import os
import shutil
import subprocess

from k8s_mgmt_lab.errors import LabError

# Binary -> the Debian package that ships it.
REQUIRED = {
    'ip': 'iproute2', 'unshare': 'util-linux', 'nsenter': 'util-linux',
    'mount': 'mount', 'umount': 'mount', 'chroot': 'coreutils',
    'mknod': 'coreutils', 'ssh-keygen': 'openssh-client',
    'openssl': 'openssl', '/usr/sbin/sshd': 'openssh-server',
    'sudo': 'sudo', '/usr/bin/python3': 'python3',
    '/usr/lib/openssh/sftp-server': 'openssh-sftp-server',
    '/usr/sbin/rpcbind': 'rpcbind', 'nfs-ls': 'libnfs-utils',
    'dpkg-scanpackages': 'dpkg-dev',
}

# Kept between runs (a download is needed once).
PACKAGE_CACHE = '/var/cache/k8s-mgmt-lab'
VM_REPOSITORY = PACKAGE_CACHE + '/debs'
GANESHA_DIR = PACKAGE_CACHE + '/nfs-ganesha'
GANESHA_ROOT = GANESHA_DIR + '/root'
# What the node scripts install from Debian: the NFS server and client
# (storage script), containerd and runc (install script); and the lab's
# container registry VM, Debian's docker-registry (image_registry).
VM_PACKAGES = ('nfs-kernel-server', 'nfs-common', 'containerd', 'runc',
               'docker-registry')
GANESHA_PACKAGES = ('nfs-ganesha', 'nfs-ganesha-vfs')
_STAMP = '.complete'
# Changes with how the cache is made, so an older cache is made again.
_CACHE_FORMAT = 'repacked-1'
# Debian packages bigger than this are repacked uncompressed (REPACKED).
REPACK_OVER = 1024 * 1024


def problems():
    """One line per reason the lab cannot run here; empty when it can."""
    found = []
    if os.geteuid() != 0:
        found.append('the lab needs root (network namespaces and mounts)')
    missing = sorted({pkg for binary, pkg in REQUIRED.items()
                      if not (shutil.which(binary) or
                              (binary.startswith('/') and
                               os.path.exists(binary)))})
    if missing:
        found.append('the lab needs Debian packages that are not installed: '
                     '%s (apt-get install %s)' % (', '.join(missing),
                                                  ' '.join(missing)))
    on_host = installed(VM_PACKAGES)
    if on_host:
        found.append('the lab VMs see the host\'s packages, so %s must not '
                     'be installed on the host (a test that the node '
                     'scripts install them would prove nothing): apt-get '
                     'purge %s' % (', '.join(on_host), ' '.join(on_host)))
    return found


def installed(packages):
    """The ones of ``packages`` dpkg has installed on this machine."""
    if not shutil.which('dpkg-query'):
        return []
    proc = subprocess.run(
        ['dpkg-query', '-W', '-f=${Package} ${Status}\n'] + list(packages),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return [line.split()[0] for line in proc.stdout.splitlines()
            if line.endswith(' installed') and ' ok ' in line]


def local_packages():
    """Fill the package cache once: the VMs' repository (the ``.deb`` files
    ``VM_PACKAGES`` need beyond what the host has, indexed with
    dpkg-scanpackages) and the unpacked NFS server. Returns the repository
    directory; raises LabError when the packages cannot be fetched."""
    os.makedirs(PACKAGE_CACHE, mode=0o755, exist_ok=True)
    with _locked(os.path.join(PACKAGE_CACHE, '.lock')):
        _fill(VM_REPOSITORY, VM_PACKAGES, _index)
        _fill(GANESHA_DIR, GANESHA_PACKAGES, _unpack)
    return VM_REPOSITORY


@contextlib.contextmanager
def _locked(path):
    with open(path, 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # labs starting together
        yield


def _fill(directory, packages, finish):
    wanted = '%s %s\n' % (_CACHE_FORMAT, ' '.join(packages))
    stamp = os.path.join(directory, _STAMP)
    if os.path.exists(stamp):
        with open(stamp) as f:
            if f.read() == wanted:
                return
    work = directory + '.tmp'
    shutil.rmtree(work, ignore_errors=True)
    debs = os.path.join(work, 'debs')
    os.makedirs(os.path.join(debs, 'partial'))
    _download(debs, packages)
    finish(work)
    with open(os.path.join(work, _STAMP), 'w') as f:
        f.write(wanted)
    shutil.rmtree(directory, ignore_errors=True)
    os.rename(work, directory)


def _download(debs, packages):
    # Resolved against the host's installed set, which the VMs share.
    argv = ['apt-get', 'install', '-y', '-q', '--download-only',
            '-o', 'Dir::Cache::archives=' + debs] + list(packages)
    proc = subprocess.run(argv, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ,
                                   DEBIAN_FRONTEND='noninteractive'))
    if proc.returncode != 0:
        raise LabError(
            'cannot fetch the Debian packages the lab VMs install (%s): '
            '%s; the host needs a reachable Debian mirror once ("apt-get '
            'update"), the lab then keeps them in %s' % (
                ' '.join(packages), _last_lines(proc.stdout), PACKAGE_CACHE))
    for name in ('lock', 'partial'):
        path = os.path.join(debs, name)
        (shutil.rmtree if os.path.isdir(path) else os.unlink)(path)


def _last_lines(text, count=3):
    return ' / '.join(text.strip().splitlines()[-count:]) or 'no output'


def _index(work):
    """A flat repository: ``deb [trusted=yes] file:DIR ./``."""
    debs = os.path.join(work, 'debs')
    for path in glob.glob(os.path.join(debs, '*.deb')):
        target = os.path.join(work, os.path.basename(path))
        if os.path.getsize(path) > REPACK_OVER:
            repack_uncompressed(path, target)
            os.unlink(path)
        else:
            os.rename(path, target)
    os.rmdir(debs)
    proc = subprocess.run(['dpkg-scanpackages', '--multiversion', '.',
                           '/dev/null'], cwd=work, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise LabError('dpkg-scanpackages failed in %s: %s'
                       % (work, _last_lines(proc.stderr)))
    with open(os.path.join(work, 'Packages'), 'w') as f:
        f.write(proc.stdout)


def repack_uncompressed(source, target):
    """``source`` rebuilt as ``target`` with uncompressed members (the same
    files, modes, control and maintainer scripts, only not xz-compressed):
    each lab VM unpacks containerd's 26 MB of xz, about 2 s of CPU on this
    2-core machine, which a VM pays again at every install."""
    tree = target + '.tree'
    shutil.rmtree(tree, ignore_errors=True)
    try:
        for argv in (['dpkg-deb', '--raw-extract', source, tree],
                     ['dpkg-deb', '-Znone', '--build',
                      tree, target]):
            proc = subprocess.run(argv, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
            if proc.returncode != 0:
                raise LabError('%s failed: %s' % (
                    ' '.join(argv[:2]), _last_lines(proc.stderr)))
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def _unpack(work):
    """The server and its libraries under ``root/``; nfs-common and the
    other tools it pulls in stay packed."""
    root = os.path.join(work, 'root')
    for path in sorted(glob.glob(os.path.join(work, 'debs', '*.deb'))):
        name = subprocess.run(['dpkg-deb', '-f', path, 'Package'],
                              stdout=subprocess.PIPE, text=True,
                              check=True).stdout.strip()
        if name.startswith(('nfs-ganesha', 'lib')):
            subprocess.run(['dpkg-deb', '-x', path, root], check=True)
