"""The driver waits only through polling.Poll: no hand-written sleep loops.

Every call of a ``sleep`` (``time.sleep``, ``eventlet.sleep``, an injected
``self._sleep``, ``from time import sleep``) in the ``k8s_mgmt`` package and
the lab's ``k8s_mgmt_lab`` is an error, except in ``polling.py`` itself. A
sleep that is not a wait (there should hardly be one) says why on its line,
behind ``# not a poll:``. The lab suite (tests/lab) is held to the same
rule: a test waits for a condition against a deadline, never for a fixed
time (issue 28, item 8).
"""

import ast
import os

import source_files

MARKER = '# not a poll:'
EXEMPT = (os.path.join('k8s_mgmt', 'polling.py'),)
TESTS = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
LAB_SUITES = ('lab',)
# Sleeps in files another change rewrites: each entry says which, and goes
# when that file has no sleep left.
PENDING = {}


def _is_sleep(name):
    return name.lstrip('_') == 'sleep'


def sleeps_in(source):
    """Line numbers of the unmarked sleep calls and imports in ``source``."""
    lines = source.splitlines()
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = (func.attr if isinstance(func, ast.Attribute) else
                    getattr(func, 'id', ''))
            if _is_sleep(name):
                found.add(node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if any(_is_sleep(alias.name) for alias in node.names):
                found.add(node.lineno)
    return sorted(n for n in found if MARKER not in lines[n - 1])


def test_the_package_waits_only_through_poll():
    found, stale = source_files.split_pending(
        source_files.findings(sleeps_in, '.py', EXEMPT), PENDING)
    assert found == {}, (
        'hand-written waits (file: lines): %s; wait with '
        'k8s_mgmt.polling.Poll, or say on the line why it is no wait '
        '(%s ...)' % (found, MARKER))
    assert stale == [], ('no sleep left in %s: remove it from PENDING'
                         % ', '.join(stale))


def test_the_lab_suite_waits_only_through_poll():
    found = {}
    for suite in LAB_SUITES:
        found.update(source_files.tree_findings(
            os.path.join(TESTS, suite), sleeps_in, '.py'))
    assert found == {}, (
        'fixed sleeps in the lab suite (file: lines): %s; poll for the '
        'condition with k8s_mgmt.polling.Poll' % found)


def test_each_form_of_sleep_is_found_and_the_marker_is_heard():
    source = '\n'.join([
        'import time',                               # 1
        'from time import sleep as pause',           # 2
        'time.sleep(1)',                             # 3
        'eventlet.sleep(0)',                         # 4
        'self._sleep(min(delay, remaining))',        # 5
        'sleep(2)',                                  # 6
        'time.sleep(0)  %s yields to a thread' % MARKER,  # 7
        'f(sleep=time.sleep)',                       # 8: a reference only
        'time.monotonic()',                          # 9
    ])
    assert sleeps_in(source) == [2, 3, 4, 5, 6]
