"""tests/lab/COVERAGE.md tells the truth: every lab test its table names
is a top-level function of its file (read with ``ast``, nothing of the lab
imported), and each LCM operation has a test through Tacker's v1 API and
one through its v2 API, but for the known gaps, each a "not covered" row
of the table. A new gap fails, and so does a gap filled: the table and
KNOWN_GAPS change together."""

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
COVERAGE = os.path.join(ROOT, 'tests', 'lab', 'COVERAGE.md')
COLUMNS = ['operation', 'API', 'flavour', 'test', 'note']
APIS = ('v1', 'v2', 'lab conductor')
NO_TEST = '—'
NOT_COVERED = 'not covered'
OPERATIONS = (
    'instantiate', 'scale out', 'scale in', 'heal worker', 'heal master',
    'heal whole VNF', 'heal storage server', 'heal registry',
    'heal external LB', 'terminate', 'rollback of instantiate',
    'rollback of scale out', 'retry', 'fail', 'cancel', 'upgrade',
    'certificate check', 'certificate renewal',
    'refused instantiate', 'refused scale out', 'refused heal master',
    'refused heal whole VNF', 'refused heal storage server',
    'refused heal registry', 'refused upgrade', 'refused retry',
    'refused rollback')
# What each operation counts as, where it is not itself.
COUNTS_AS = {'rollback of instantiate': 'rollback',
             'rollback of scale out': 'rollback'}
# Each needs a test on v1 and on v2.
REQUIRED = ('instantiate', 'scale out', 'scale in', 'heal worker',
            'heal master', 'heal whole VNF', 'terminate', 'rollback', 'fail',
            'upgrade', 'certificate renewal')
THROUGH_TACKER = ('v1', 'v2')
# (operation, API) of REQUIRED with no test yet: "not covered" rows.
KNOWN_GAPS = set()
NODE_ID = re.compile(r'^(tests/lab/test_\w+\.py)::(test_\w+)$')


def _cells(line):
    return [cell.strip() for cell in line.strip().strip('|').split('|')]


def table(text):
    """The rows of the table whose header is COLUMNS, as dicts."""
    lines = text.splitlines()
    starts = [n for n, line in enumerate(lines)
              if line.startswith('|') and _cells(line) == COLUMNS]
    assert len(starts) == 1, 'one table with the columns %s' % COLUMNS
    rows = []
    for line in lines[starts[0] + 2:]:
        if not line.startswith('|'):
            break
        cells = _cells(line)
        assert len(cells) == len(COLUMNS), line
        rows.append(dict(zip(COLUMNS, cells)))
    return rows


def node_ids(cell):
    """The node ids of a test cell (none for NO_TEST)."""
    return [] if cell == NO_TEST else re.findall(r'`([^`]+)`', cell)


def _rows():
    with open(COVERAGE, encoding='utf-8') as handle:
        return table(handle.read())


def top_level_functions(path):
    with open(path, encoding='utf-8') as handle:
        tree = ast.parse(handle.read(), path)
    return {node.name for node in tree.body
            if isinstance(node, ast.FunctionDef)}


def test_every_row_is_well_formed():
    rows = _rows()
    assert rows
    seen = set()
    for row in rows:
        key = (row['operation'], row['API'], row['flavour'])
        assert row['operation'] in OPERATIONS, row
        assert row['API'] in APIS, row
        assert row['flavour'], row
        assert key not in seen, 'two rows for %s' % (key,)
        seen.add(key)
        gap = row['test'] == NO_TEST
        assert gap == row['note'].startswith(NOT_COVERED), (
            'a row has a test, or "%s" and a note saying "%s": %s'
            % (NO_TEST, NOT_COVERED, row))
        assert gap or node_ids(row['test']), row


def test_every_named_test_is_a_function_of_its_file():
    functions = {}
    missing = []
    for row in _rows():
        for node_id in node_ids(row['test']):
            found = NODE_ID.match(node_id)
            assert found, ('a node id tests/lab/test_*.py::test_name, '
                           'without parameters: %s' % node_id)
            path, name = found.groups()
            full = os.path.join(ROOT, path)
            if not os.path.isfile(full):
                missing.append('%s (no such file)' % node_id)
                continue
            if path not in functions:
                functions[path] = top_level_functions(full)
            if name not in functions[path]:
                missing.append(node_id)
    assert missing == [], (
        'tests/lab/COVERAGE.md names tests that are not there: %s'
        % ', '.join(missing))


def uncovered(rows):
    """(operation, API) of REQUIRED x THROUGH_TACKER with no test."""
    covered = {(COUNTS_AS.get(row['operation'], row['operation']),
                row['API']) for row in rows if node_ids(row['test'])}
    return {(operation, api) for operation in REQUIRED
            for api in THROUGH_TACKER} - covered


def test_each_operation_has_a_test_through_tacker_v1_and_v2():
    rows = _rows()
    gaps = uncovered(rows)
    assert gaps - KNOWN_GAPS == set(), (
        'no lab test through Tacker for %s: add one, or a "%s" row to '
        'tests/lab/COVERAGE.md and the pair to KNOWN_GAPS'
        % (sorted(gaps - KNOWN_GAPS), NOT_COVERED))
    assert KNOWN_GAPS - gaps == set(), (
        '%s now have a test: remove them from KNOWN_GAPS and their "%s" '
        'rows from tests/lab/COVERAGE.md'
        % (sorted(KNOWN_GAPS - gaps), NOT_COVERED))
    marked = {(COUNTS_AS.get(row['operation'], row['operation']),
               row['API']) for row in rows if row['test'] == NO_TEST}
    assert KNOWN_GAPS <= marked, (
        'known gaps without a "%s" row in tests/lab/COVERAGE.md: %s'
        % (NOT_COVERED, sorted(KNOWN_GAPS - marked)))


def test_the_table_is_read_as_written():
    text = '\n'.join([
        'intro | not a row',
        '| operation | API | flavour | test | note |',
        '|---|---|---|---|---|',
        '| heal master | v1 | complex | `tests/lab/test_a.py::test_b`'
        '<br>`tests/lab/test_c.py::test_d` | |',
        '| fail | v2 | any | — | not covered |',
        '',
        '| after | the | table | `x` | |',
    ])
    rows = table(text)
    assert [(r['operation'], r['API'], r['flavour']) for r in rows] == [
        ('heal master', 'v1', 'complex'), ('fail', 'v2', 'any')]
    assert node_ids(rows[0]['test']) == ['tests/lab/test_a.py::test_b',
                                         'tests/lab/test_c.py::test_d']
    assert node_ids(rows[1]['test']) == []
    found = uncovered(rows)
    assert ('heal master', 'v1') not in found
    assert ('fail', 'v2') in found and ('heal master', 'v2') in found
