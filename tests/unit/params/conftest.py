"""Lets the parameter tests import their helper modules (importlib mode);
the built sample package for the tests that read a VNF package; how many
odd values the fuzz tests try at each path in this lane."""

import os
import sys

import pytest

from tests.helpers.package_fixtures import built_package  # noqa: F401
from tests.helpers.package_fixtures import package_copy  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def odd_values_per_path():
    """How many odd values the fuzz tests (test_params_robustness.py) try
    at each path in the unit lane: a fixed sample, every value still tried
    somewhere; tests/functional/params tries every one at every path."""
    return 3
