"""What the unit tests of a Tacker plane's configuration share (it holds no
tests): the plane's ports and passwords as the tests fix them, and an INI
text parsed as the services parse it."""

import configparser

from k8s_mgmt_lab.openstack import state

PORTS = {'mariadb': 13306, 'epmd': 14369, 'rabbitmq': 15672,
         'rabbitmq_dist': 25672, 'keystone': 15000, 'heat_api': 18004,
         'tacker': 19890, 'barbican': 19311}
SECRETS = {name: 'pw-' + name for name in state.SECRET_NAMES}


def parsed(text):
    """An INI text as oslo.config reads it (no interpolation)."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return parser
