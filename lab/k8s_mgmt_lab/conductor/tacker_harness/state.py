"""What the harness keeps between runs, under ``D/tacker``.

Tacker's database lives in memory while a run lasts (see :mod:`.config`);
:func:`restore_database` copies ``tacker.sqlite`` in before anything
else happens and :func:`save_database` copies it back out at the end.
``harness.json`` names what the first run set up (the VIM, the package,
the VNF instance), so that later runs find them.
"""

import contextlib
import json
import os
import sqlite3

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

STATE_FILE = 'harness.json'


@contextlib.contextmanager
def _databases(paths):
    """(the in-memory database's connection, the file's)."""
    from tacker.db import api as db_api
    raw = db_api.get_engine().raw_connection()
    try:
        with contextlib.closing(sqlite3.connect(paths.database)) as saved:
            yield raw.driver_connection, saved
    finally:
        raw.close()


def restore_database(paths):
    """The saved database into the in-memory one; False when none."""
    if not os.path.exists(paths.database):
        return False
    with _databases(paths) as (memory, saved):
        saved.backup(memory)
    LOG.info('Tacker database restored from %s', paths.database)
    return True


def save_database(paths):
    """Copy the in-memory database to ``paths.database``."""
    with _databases(paths) as (memory, saved):
        memory.backup(saved)
    return paths.database


def state_file(paths):
    return os.path.join(paths.root, STATE_FILE)


def read(paths):
    """{'vim_id', 'vnf_package_id', 'vnf_instance_id'}, or {} before the
    first instantiate."""
    try:
        with open(state_file(paths)) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return {}


def write(paths, state):
    path = state_file(paths)
    tmp = path + '.tmp'
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
              'w') as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
    os.replace(tmp, path)
