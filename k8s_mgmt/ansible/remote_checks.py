"""Checks the driver runs on the Ansible server (``python3 -c`` this file).

``dirs PATH``: no directory a lookup of PATH passes through (symbolic links
followed one by one) may be writable by every user. ``key PATH``: an
existing key file must be a regular file of the connecting user with no
permission for anyone else. A refusal prints one JSON object and exits 3.
Plain Python 3 that imports nothing of k8s-mgmt: it runs on the server.
"""

import json
import os
import stat
import sys

REFUSED = 3
_MAX_LINKS = 40


class Refused(Exception):
    """A refusal: its argument is the dict printed."""


def _check_dir(path):
    mode = os.stat(path).st_mode
    if not stat.S_ISDIR(mode):
        raise Refused({'kind': 'not-a-directory', 'path': path})
    if mode & stat.S_IWOTH:
        raise Refused({'kind': 'world-writable', 'path': path,
                       'mode': '%04o' % stat.S_IMODE(mode)})


def check_dirs(path, links=None):
    """Check the directories a lookup of ``path`` passes through; return
    where its existing part resolves to (None when a part is missing: the
    driver makes it)."""
    links = [_MAX_LINKS] if links is None else links
    current = '/'
    _check_dir(current)
    for name in path.split('/'):
        if name in ('', '.'):
            continue
        if name == '..':
            current = os.path.dirname(current)
            continue
        step = os.path.join(current, name)
        try:
            info = os.lstat(step)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(info.st_mode):
            links[0] -= 1
            if links[0] < 0:
                raise Refused({'kind': 'link-loop', 'path': path})
            # The link's own directory was checked; now its target's.
            step = check_dirs(os.path.join(current, os.readlink(step)),
                              links)
            if step is None:
                return None
        else:
            _check_dir(step)
        current = step
    return current


def check_key(path):
    """Refuse an existing ``path`` that is not a private key file of ours
    alone; a missing one passes."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise Refused({'kind': 'not-a-file', 'path': path})
    if info.st_uid != os.geteuid():
        raise Refused({'kind': 'owner', 'path': path, 'uid': info.st_uid,
                       'user_uid': os.geteuid()})
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise Refused({'kind': 'mode', 'path': path,
                       'mode': '%04o' % stat.S_IMODE(info.st_mode)})


def main(argv):
    what, path = argv
    check = {'dirs': check_dirs, 'key': check_key}[what]
    try:
        check(path)
    except Refused as refusal:
        print(json.dumps(refusal.args[0]))
        return REFUSED
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
