""".ci/run's closing summary: the slowest tests of every lane, read from
each lane's pytest log, slowest first, each with its lane."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SPEC = importlib.util.spec_from_file_location(
    'ci_slowest', os.path.join(ROOT, '.ci', 'slowest.py'))
slowest = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(slowest)

UNIT = """\
tests/unit/test_a.py ....
========== slowest 15 durations ==========
2.50s call     tests/unit/test_a.py::test_one
0.30s setup    tests/unit/test_a.py::test_two[x y]

(3 durations < 0.005s hidden.  Use -vv to show these durations.)
============ 4 passed in 3.1s ============
"""
LAB = """\
========== slowest 15 durations ==========
612.00s setup    tests/lab/test_b.py::test_first
301.25s call     tests/lab/test_b.py::test_second
====== short test summary info ======
FAILED tests/lab/test_b.py::test_second - AssertionError
0.10s call     tests/lab/test_b.py::test_not_a_duration_line
"""


def test_the_slowest_of_every_lane_slowest_first():
    rows = slowest.slowest({'unit': UNIT, 'lab': LAB}, 3)
    assert rows == [
        (612.0, 'lab', 'setup', 'tests/lab/test_b.py::test_first'),
        (301.25, 'lab', 'call', 'tests/lab/test_b.py::test_second'),
        (2.5, 'unit', 'call', 'tests/unit/test_a.py::test_one')]
    assert slowest.lines(rows[:1]) == [
        '   612.0 s  lab        setup    tests/lab/test_b.py::test_first']


def test_a_missing_log_prints_nothing(tmp_path, capsys):
    assert slowest.main(['5', 'lab=%s' % (tmp_path / 'none.log')]) == 0
    assert capsys.readouterr().out == ''


def test_a_test_id_with_spaces_is_kept_whole():
    assert slowest.durations(UNIT)[1] == (
        0.3, 'setup', 'tests/unit/test_a.py::test_two[x y]')
