"""Directories only their owner may enter (mode 0700), made with every
missing parent: the state directory and a shared pin file's directory."""

import os

PRIVATE_DIR_MODE = 0o700


def make_private_dirs(path):
    """Create ``path`` and every missing directory above it, mode 0700;
    directories that exist are left as they are."""
    path = os.path.abspath(path)
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR_MODE)
        except FileExistsError:
            pass   # made by a concurrent operation meanwhile
