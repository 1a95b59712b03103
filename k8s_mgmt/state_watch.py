"""Who is told when a file of an instance's state directory changes.

:mod:`k8s_mgmt.shared_state` watches the state directory of the instance
a hook works on, and saves each change to Tacker's database as it is made;
the writers (:mod:`k8s_mgmt.state`, the host-key store) call
:func:`changed`. Kept apart, with nothing to import, so the host-key store
can tell without depending on the state module.
"""

import contextlib
import os
import threading

# State directory -> what to call when a file in it changes (watched).
_watchers = {}
_watchers_guard = threading.Lock()


@contextlib.contextmanager
def watched(directory, callback):
    """While in the block, ``callback()`` runs after each change to a file
    of ``directory`` (an instance's state directory) or to the directory
    itself: see :func:`changed`. shared_state pushes with it."""
    directory = os.path.abspath(directory)
    with _watchers_guard:
        _watchers[directory] = callback
    try:
        yield
    finally:
        with _watchers_guard:
            if _watchers.get(directory) is callback:
                del _watchers[directory]


def changed(path):
    """``path`` (a state directory, or a file in one) was just written or
    removed: tell the directory's watcher, if any."""
    path = os.path.abspath(path)
    with _watchers_guard:
        callback = _watchers.get(path) or _watchers.get(
            os.path.dirname(path))
    if callback is not None:
        callback()
