"""The driver's own paths for a test: its state directory and state key
under the test's directory, never the host's /var/lib and /etc."""

import contextlib

from oslo_config import fixture as config_fixture

from k8s_mgmt import conf


@contextlib.contextmanager
def driver_paths(state_dir, state_key_file):
    """``[k8s_mgmt] state_dir`` and ``state_key_file`` set for the block;
    the oslo.config fixture (``.config(...)`` changes more)."""
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    try:
        fixture.config(group='k8s_mgmt', state_dir=str(state_dir),
                       state_key_file=str(state_key_file))
        yield fixture
    finally:
        fixture.cleanUp()
