"""A temporary directory no other user can write to, on its whole path.

The kubespray mode refuses an inventory directory with a world-writable
directory on its path, and pytest's tmp_path is under /tmp: the tests that
need such a directory get one under the user's home instead, removed
afterwards, or are skipped when even that path is not private. Its path is
short: Ansible's SSH master sockets go below it, and a socket path has at
most 107 bytes.
"""

import contextlib
import os
import pathlib
import shutil
import tempfile

import pytest

from k8s_mgmt.ansible import remote_checks


@contextlib.contextmanager
def private_dir(prefix='t-'):
    base = os.path.join(os.path.expanduser('~'), '.k8s-mgmt-tests')
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        remote_checks.check_dirs(base)
    except (OSError, remote_checks.Refused) as err:
        pytest.skip('no private directory under the home directory (%s)'
                    % (err,))
    path = tempfile.mkdtemp(prefix=prefix, dir=base)
    try:
        yield pathlib.Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)
