"""Fixtures for tests against real SSH servers on loopback."""

import importlib.util
import os
import sys

import pytest
from oslo_config import fixture as config_fixture

from k8s_mgmt import conf
from k8s_mgmt import secrets
from k8s_mgmt.ssh import client
from k8s_mgmt.ssh import hostkeys


def _load_server_module():
    # The suite runs with --import-mode=importlib (no sys.path changes), so
    # the reusable server module is registered under a fixed name here; test
    # modules then simply ``import ssh_test_server``.
    if 'ssh_test_server' not in sys.modules:
        path = os.path.join(os.path.dirname(__file__), 'ssh_test_server.py')
        spec = importlib.util.spec_from_file_location('ssh_test_server', path)
        module = importlib.util.module_from_spec(spec)
        sys.modules['ssh_test_server'] = module
        spec.loader.exec_module(module)
    return sys.modules['ssh_test_server']


ssh_test_server = _load_server_module()

USER = 'tester'
PASSWORD = 'pw-Kq9-secret-Zr4'


@pytest.fixture
def fast_conf():
    """Short timeouts so a failing test fails in seconds, not minutes."""
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    fixture.config(group='k8s_mgmt', connect_deadline=5.0,
                   connect_timeout=2.0, command_timeout=20.0)
    yield fixture
    fixture.cleanUp()


@pytest.fixture
def ssh_server(fast_conf):
    server = ssh_test_server.SSHTestServer(users={USER: PASSWORD})
    server.start()
    yield server
    server.stop()


@pytest.fixture
def pin_store(tmp_path):
    return hostkeys.HostKeyStore(str(tmp_path / 'pins' / 'host_keys.json'))


def _make_target(server, server_id='srv-1', name='node-1', **overrides):
    fields = dict(name=name, host='127.0.0.1', port=server.port,
                  username=USER, password=secrets.Secret(PASSWORD),
                  server_id=server_id)
    fields.update(overrides)
    return client.SSHTarget(**fields)


@pytest.fixture
def make_target():
    """make_target(server, server_id='srv-1', name='node-1', **fields)."""
    return _make_target


@pytest.fixture
def session(ssh_server, pin_store):
    with client.SSHSession(_make_target(ssh_server), store=pin_store) as s:
        yield s
