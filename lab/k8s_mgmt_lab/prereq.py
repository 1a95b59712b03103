"""What the lab needs from the machine, checked before anything is made."""

import os
import shutil

# Binary -> the Debian package that ships it.
REQUIRED = {
    'ip': 'iproute2', 'unshare': 'util-linux', 'nsenter': 'util-linux',
    'mount': 'mount', 'umount': 'mount', 'chroot': 'coreutils',
    'mknod': 'coreutils', 'ssh-keygen': 'openssh-client',
    'openssl': 'openssl', '/usr/sbin/sshd': 'openssh-server',
    'sudo': 'sudo', '/usr/bin/python3': 'python3',
    '/usr/lib/openssh/sftp-server': 'openssh-sftp-server',
}


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
    return found
