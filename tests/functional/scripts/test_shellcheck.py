"""The scripts and their library are shellcheck clean (CI installs
shellcheck), and shellcheck reads the library where a script sources it."""

import re
import subprocess

import pytest

from tests.functional.scripts.script_helpers import (
    CONFIGURE_EXTERNAL_LB, CONFIGURE_LB, INSTALL, LIBRARY, needs)

SCRIPTS = [INSTALL, CONFIGURE_LB, CONFIGURE_EXTERNAL_LB]


def shellcheck(path):
    # -x: follow the "source" of the library (its "shellcheck source="
    # directive names the file next to the script).
    return subprocess.run(['shellcheck', '-x', '--severity=style',
                           str(path)],
                          capture_output=True, text=True, check=False)


@needs('shellcheck')
@pytest.mark.parametrize('script', SCRIPTS + [
    LIBRARY, INSTALL.parent / 'k8s_mgmt_upgrade.sh'], ids=lambda p: p.name)
def test_shellcheck_clean(script):
    result = shellcheck(script)
    assert result.returncode == 0, result.stdout


@needs('shellcheck')
@pytest.mark.parametrize('script', SCRIPTS, ids=lambda p: p.name)
def test_shellcheck_reads_the_library_next_to_the_script(script, tmp_path):
    # shellcheck reports problems of the files it is given only, so the
    # library is checked on its own above; here: a script is checked with
    # the library found next to it, wherever shellcheck runs from.
    copy = tmp_path / script.name
    copy.write_text(script.read_text())
    alone = shellcheck(copy)
    assert 'SC1091' in alone.stdout, alone.stdout
    (tmp_path / LIBRARY.name).write_text(LIBRARY.read_text())
    # The install script sources its upgrade modes from beside it too.
    upgrade = INSTALL.parent / 'k8s_mgmt_upgrade.sh'
    (tmp_path / upgrade.name).write_text(upgrade.read_text())
    together = shellcheck(copy)
    assert together.returncode == 0, together.stdout


@pytest.mark.parametrize('script', SCRIPTS, ids=lambda p: p.name)
def test_strict_mode_and_no_tracing(script):
    text = script.read_text()
    assert 'set -Eeuo pipefail' in text
    # Tracing would echo secrets into logs.
    assert 'set -x' not in text and 'xtrace' not in text


@pytest.mark.parametrize('script', SCRIPTS + [LIBRARY],
                         ids=lambda p: p.name)
def test_no_write_file_failure_is_masked(script):
    # write_file returns 0 for unchanged content; "|| true" after it would
    # only hide real failures.
    masked = re.findall(r'write_\w+[^\n]*\|\|\s*true', script.read_text())
    assert masked == []
