"""The ``k8s_mgmt`` package's files as text, for checks over its whole tree.

Such a check lists what it finds per file; files another change is still
rewriting are ``pending``: tolerated while they still have findings, and
reported once they have none, so that the list shrinks to nothing.
"""

import os

import k8s_mgmt

PACKAGE = os.path.dirname(k8s_mgmt.__file__)


def findings(find, suffix='', skip=()):
    """``{path relative to the package: find(text)}`` for each file whose
    name ends with ``suffix``, not under a ``skip`` prefix, where
    ``find(text)`` found something."""
    found = {}
    for root, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != '__pycache__']
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, PACKAGE)
            if not name.endswith(suffix) or rel.startswith(tuple(skip)):
                continue
            with open(path, encoding='utf-8', errors='replace') as f:
                hits = find(f.read())
            if hits:
                found[rel] = hits
    return found


def split_pending(found, pending):
    """``(findings outside pending, pending files with no finding left)``."""
    return ({rel: hits for rel, hits in found.items() if rel not in pending},
            sorted(set(pending) - set(found)))
