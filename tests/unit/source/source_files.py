"""The files of the ``k8s_mgmt`` package and of the lab's ``k8s_mgmt_lab``
(``lab/`` of the repository) as text, for checks over their whole trees.

Such a check lists what it finds per file; files another change is still
rewriting are ``pending``: tolerated while they still have findings, and
reported once they have none, so that the list shrinks to nothing.
"""

import os

import k8s_mgmt

PACKAGE = os.path.dirname(k8s_mgmt.__file__)
LAB_PACKAGE = os.path.join(os.path.dirname(PACKAGE), 'lab', 'k8s_mgmt_lab')
PACKAGES = (PACKAGE, LAB_PACKAGE)


def findings(find, suffix='', skip=()):
    """``{path from the package's name on (k8s_mgmt/..., k8s_mgmt_lab/...):
    find(text)}`` for each file whose name ends with ``suffix``, not under a
    ``skip`` prefix, where ``find(text)`` found something."""
    found = {}
    for package in PACKAGES:
        found.update(_findings(package, find, suffix, skip))
    return found


def _findings(package, find, suffix, skip):
    found = {}
    for root, dirs, files in os.walk(package):
        dirs[:] = [d for d in dirs if d != '__pycache__']
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, os.path.dirname(package))
            if not name.endswith(suffix) or rel.startswith(tuple(skip)):
                continue
            with open(path, encoding='utf-8', errors='replace') as f:
                hits = find(f.read())
            if hits:
                found[rel] = hits
    return found


def tree_findings(folder, find, suffix=''):
    """As :func:`findings`, over one more tree (``folder``, keys from its
    own name on: ``lab/test_heal.py`` for tests/lab)."""
    return _findings(folder, find, suffix, ())


def split_pending(found, pending):
    """``(findings outside pending, pending files with no finding left)``."""
    return ({rel: hits for rel, hits in found.items() if rel not in pending},
            sorted(set(pending) - set(found)))
