"""The parameter tests of the functional lane: the fuzz tests' full sweep
and the validate CLI in subprocesses. Their helper modules live with the
unit lane's parameter tests (tests/unit/params, on sys.path here as there:
importlib mode); the built sample package as in that lane."""

import os
import sys

import pytest

from tests.helpers.package_fixtures import built_package  # noqa: F401
from tests.helpers.package_fixtures import package_copy  # noqa: F401

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'unit', 'params'))


@pytest.fixture
def odd_values_per_path():
    """Every odd value at every path (the unit lane tries a sample)."""
    return None
