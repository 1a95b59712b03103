"""The bats unit tests of the scripts' functions (tests/scripts/bats),
one pytest case per .bats file (CI installs the Debian package bats)."""

import pathlib
import re
import subprocess

import pytest

from tests.functional.scripts.script_helpers import needs

BATS_DIR = pathlib.Path(__file__).resolve().parent / 'bats'
BATS_FILES = sorted(BATS_DIR.glob('*.bats'))
_RESULT = re.compile(r'^(ok|not ok) \d+ (.*)$', re.M)


def test_there_are_bats_files():
    assert len(BATS_FILES) >= 5


@needs('bats')
@pytest.mark.parametrize('path', BATS_FILES, ids=lambda p: p.stem)
def test_bats_file_passes(path):
    result = subprocess.run(['bats', '--tap', str(path)],
                            capture_output=True, text=True, timeout=300,
                            check=False)
    cases = _RESULT.findall(result.stdout)
    failed = [name for outcome, name in cases if outcome == 'not ok']
    assert not failed, 'failing bats cases in %s:\n  %s\n\n%s%s' % (
        path.name, '\n  '.join(failed), result.stdout, result.stderr)
    # bats also fails when a case stops it short (e.g. a closed fd 3).
    assert result.returncode == 0, result.stdout + result.stderr
    assert cases, 'no bats case ran:\n' + result.stdout + result.stderr
