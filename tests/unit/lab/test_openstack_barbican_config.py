"""Barbican in a Tacker plane as text and decisions: barbican.conf, its
gunicorn.conf.py, its environment, its KEK, its catalog entry and where
it stands in the start order; no process runs."""

import base64
import os
import stat

from k8s_mgmt_lab.openstack import bootstrap
from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack import pins
from k8s_mgmt_lab.openstack import services
from k8s_mgmt_lab.openstack import state
from tests.unit.lab import plane_texts

PORTS, SECRETS = plane_texts.PORTS, plane_texts.SECRETS


def _barbican_conf(layout):
    return plane_texts.parsed(config.barbican_conf(layout, PORTS, SECRETS))


def test_barbican_uses_this_planes_database_keystone_and_kek(layout):
    conf = _barbican_conf(layout)
    assert conf['DEFAULT']['host_href'] == 'http://127.0.0.1:19311'
    # barbican-manage makes the schema, never the API's start.
    assert conf['DEFAULT']['db_auto_create'] == 'false'
    assert conf['database']['connection'] == (
        'mysql+pymysql://barbican:pw-barbican_db@127.0.0.1:13306/barbican')
    assert conf['secretstore']['enabled_secretstore_plugins'] == (
        'store_crypto')
    assert conf['crypto']['enabled_crypto_plugins'] == 'simple_crypto'
    assert conf['simple_crypto_plugin']['kek'] == 'pw-barbican_kek'
    # No worker: nothing of Barbican's goes over the message bus.
    assert conf['queue']['enable'] == 'false'
    authtoken = conf['keystone_authtoken']
    assert authtoken['auth_url'] == 'http://127.0.0.1:15000/v3'
    assert (authtoken['username'], authtoken['password'],
            authtoken['project_name']) == ('barbican', 'pw-barbican',
                                           'service')


def test_barbican_api_serves_its_paste_pipeline_on_loopback(layout):
    text = config.barbican_gunicorn(layout, PORTS)
    namespace = {}
    exec(compile(text, 'gunicorn.conf.py', 'exec'), namespace)
    paste = os.path.join(layout.barbican_etc, 'barbican-api-paste.ini')
    assert namespace['paste'] == namespace['wsgi_app'] == paste
    assert namespace['bind'] == '127.0.0.1:19311'
    assert namespace['workers'] == 1
    assert namespace['control_socket_disable'] is True


def test_barbican_finds_its_conf_in_its_home(layout):
    # Barbican's plugins parse oslo.config's default files only: the
    # first is ~/.barbican/barbican.conf, then ~/barbican.conf.
    env = services.barbican_env(layout)
    assert env['HOME'] == layout.barbican_etc
    assert layout.barbican_etc.startswith(layout.root + '/')
    api = services.barbican_api(layout, PORTS, '/venvs/barbican')
    assert api.cwd == layout.barbican_etc and api.env == env
    assert api.argv == ['/venvs/barbican/bin/python', '-m', 'gunicorn']
    # The KEK goes to files only, never to a command line.
    assert not any('kek' in word for word in api.argv)


def test_the_kek_is_a_fernet_key_kept_private(layout):
    os.makedirs(layout.root)
    made = state.secrets(layout)
    assert len(base64.urlsafe_b64decode(made['barbican_kek'])) == 32
    assert made['barbican_kek'] != made['barbican']
    assert stat.S_IMODE(os.stat(layout.secrets).st_mode) == 0o600
    assert state.secrets(layout)['barbican_kek'] == made['barbican_kek']


class _Identity(object):
    def __init__(self):
        self.made, self.endpoints = [], []

    def ensure(self, kind, body, **query):
        self.made.append((kind, body, query))
        return kind + '-id'

    def ensure_endpoint(self, service_id, interface, url,
                        region=bootstrap.REGION):
        self.endpoints.append((service_id, interface, url, region))


def test_barbican_is_the_catalogs_key_manager(monkeypatch):
    identity = _Identity()
    users = []

    def _service_user(ports, secrets, name):
        users.append(name)
        return identity, 'admin-id'
    monkeypatch.setattr(bootstrap, '_service_user', _service_user)
    bootstrap.register_barbican(None, PORTS, SECRETS)
    assert users == ['barbican']
    # Tacker's key manager asks for type key-manager, name barbican.
    assert identity.made == [('service', {
        'name': 'barbican', 'type': 'key-manager',
        'description': 'Key manager'}, {'type': 'key-manager'})]
    assert identity.endpoints == [
        ('service-id', interface, 'http://127.0.0.1:19311/', 'RegionOne')
        for interface in ('public', 'internal')]


def test_barbican_starts_before_tacker_and_stops_after_it(layout):
    names = control_plane.TACKER_SERVICE_NAMES
    assert names.index('barbican-api') < names.index('tacker-server')
    status = control_plane.ControlPlane(layout.root, tacker=True).status()
    assert status['barbican-api']['version'] == pins.version('barbican')
    assert pins.version('barbican').startswith('23.')
    assert status['barbican-api']['log'] == os.path.join(
        layout.logs, 'barbican-api.log')
    assert 'barbican-api' not in control_plane.ControlPlane(
        layout.root).status()
    assert 'barbican' in control_plane.VENV_NAMES
    assert pins.REQUIREMENTS['barbican'] == ['barbican', 'gunicorn',
                                             'pymysql']
