"""The Sphinx documentation builds without a warning (as tox -e docs)."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def test_docs_build_without_warnings(tmp_path):
    pytest.importorskip('sphinx')
    proc = subprocess.run(
        [sys.executable, '-m', 'sphinx', '-W', '-q', '-b', 'html',
         os.path.join(ROOT, 'doc', 'source'), str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / 'index.html').exists()
