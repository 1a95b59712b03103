"""The unit lane writes nothing outside its temporary directories: the
driver's state directory (``[k8s_mgmt] state_dir``, /var/lib/k8s-mgmt by
default) is a temporary one in every test that does not set its own."""

import pytest

from k8s_mgmt import conf


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path_factory):
    conf.CONF.set_override('state_dir',
                           str(tmp_path_factory.mktemp('state')), 'k8s_mgmt')
    yield
    conf.CONF.clear_override('state_dir', 'k8s_mgmt')
