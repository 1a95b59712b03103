"""setup_storage.sh is shellcheck clean with the library next to it, runs
in strict mode and never traces, like the other node scripts."""

import re

from tests.functional.scripts.script_helpers import LIBRARY, REPO, needs
from tests.functional.scripts.test_shellcheck import shellcheck

SCRIPT = REPO / 'k8s_mgmt' / 'scripts' / 'setup_storage.sh'


@needs('shellcheck')
def test_shellcheck_clean():
    result = shellcheck(SCRIPT)
    assert result.returncode == 0, result.stdout


@needs('shellcheck')
def test_shellcheck_reads_the_library_next_to_the_script(tmp_path):
    copy = tmp_path / SCRIPT.name
    copy.write_text(SCRIPT.read_text())
    assert 'SC1091' in shellcheck(copy).stdout
    (tmp_path / LIBRARY.name).write_text(LIBRARY.read_text())
    together = shellcheck(copy)
    assert together.returncode == 0, together.stdout


def test_strict_mode_no_tracing_no_masked_write():
    text = SCRIPT.read_text()
    assert 'set -Eeuo pipefail' in text
    assert 'set -x' not in text and 'xtrace' not in text
    assert re.findall(r'write_\w+[^\n]*\|\|\s*true', text) == []
