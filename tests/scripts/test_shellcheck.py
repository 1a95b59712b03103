"""Both scripts are shellcheck clean (CI installs shellcheck)."""

import subprocess

import pytest

from tests.scripts.script_helpers import CONFIGURE_LB, INSTALL, needs


@needs('shellcheck')
@pytest.mark.parametrize('script', [INSTALL, CONFIGURE_LB],
                         ids=lambda p: p.name)
def test_shellcheck_clean(script):
    result = subprocess.run(['shellcheck', '--severity=style', str(script)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize('script', [INSTALL, CONFIGURE_LB],
                         ids=lambda p: p.name)
def test_strict_mode_and_no_tracing(script):
    text = script.read_text()
    assert 'set -Eeuo pipefail' in text
    # Tracing would echo secrets into logs.
    assert 'set -x' not in text and 'xtrace' not in text
