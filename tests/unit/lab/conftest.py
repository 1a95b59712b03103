"""Fixtures of the lab's unit tests."""

import pytest

from k8s_mgmt_lab.openstack import state
from tests.unit.lab.fake_tacker import FakeTacker


@pytest.fixture
def fake():
    """The fake Tacker (tests/unit/lab/fake_tacker.py), running."""
    with FakeTacker() as running:
        yield running


@pytest.fixture
def layout(tmp_path):
    """A control plane's layout in a fresh directory (nothing made)."""
    return state.Layout(str(tmp_path / 'plane'))
