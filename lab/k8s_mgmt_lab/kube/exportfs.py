"""exportfs stand-in (``/usr/local/sbin/exportfs`` in lab VMs).

``exportfs -v`` lists the exports as exportfs does; ``exportfs -ra``
rebuilds the export table from /etc/exports and restarts a running
nfs-ganesha on it (see :mod:`nfs` and :mod:`systemctl`); anything else is
refused loudly. Apart from :mod:`nfs` so that it and the service manager
do not import each other.
"""

import sys

from k8s_mgmt_lab.kube import nfs
from k8s_mgmt_lab.kube import systemctl


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    if not nfs.unit_installed():  # exportfs comes with nfs-kernel-server
        sys.stderr.write('sh: 1: %s: not found\n' % nfs.PROG)
        return 127
    if args == ['-v']:
        for line in nfs.listing():
            print(line)
        return 0
    if sorted(''.join(a.lstrip('-') for a in args)) != ['a', 'r'] or \
            not all(a.startswith('-') for a in args):
        sys.stderr.write('%s: the k8s-mgmt lab stand-in supports only '
                         '"exportfs -ra" and "exportfs -v", not %r\n'
                         % (nfs.PROG, ' '.join(args)))
        return 2
    return reexport()


def reexport():
    """exportfs -ra: the table from /etc/exports; a running server restarts
    on it. Exit 1 when an export could not be made, as exportfs does."""
    try:
        errors = nfs.prepare()
    except nfs.ExportsError as exc:
        sys.stderr.write('%s: %s\n' % (nfs.PROG, exc))
        return 1
    if systemctl.running_pid(systemctl.NFS_SERVER):
        status, errors = systemctl.restart_nfs_server()
        if status:
            return status
    for line in errors:
        sys.stderr.write(line + '\n')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
