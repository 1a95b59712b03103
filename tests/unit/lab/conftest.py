"""Fixtures of the lab's unit tests."""

import pytest

from tests.unit.lab.fake_tacker import FakeTacker


@pytest.fixture
def fake():
    """The fake Tacker (tests/unit/lab/fake_tacker.py), running."""
    with FakeTacker() as running:
        yield running
