"""The driver's options for the kubespray unit tests: the state directory
(where the Ansible server's pins are looked up) under the test's tmp_path."""

import pytest
from oslo_config import fixture as config_fixture

from k8s_mgmt import conf


@pytest.fixture
def config(tmp_path):
    """The oslo.config fixture, state_dir set to ``tmp_path/state``."""
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    fixture.config(group='k8s_mgmt', state_dir=str(tmp_path / 'state'))
    yield fixture
    fixture.cleanUp()
