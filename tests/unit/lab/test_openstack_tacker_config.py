"""Tacker in the control plane as text and decisions: tacker.conf, its
port and passwords, the driver wheel's digests and when the conductor
restarts for a new one; no process runs."""

import json
import os
import zipfile

import pytest

from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack import pins
from k8s_mgmt_lab.openstack import state
from k8s_mgmt_lab.openstack import tacker_driver
from tests.unit.lab import plane_texts

PORTS, SECRETS = plane_texts.PORTS, plane_texts.SECRETS


def _tacker_conf(layout):
    return plane_texts.parsed(config.tacker_conf(layout, PORTS, SECRETS))


def test_tacker_listens_on_loopback_and_uses_this_planes_services(layout):
    conf = _tacker_conf(layout)
    assert conf['DEFAULT']['bind_host'] == '127.0.0.1'
    assert conf['DEFAULT']['bind_port'] == '19890'
    assert conf['DEFAULT']['auth_strategy'] == 'keystone'
    assert conf['DEFAULT']['transport_url'] == (
        'rabbit://openstack:pw-rabbitmq@127.0.0.1:15672/')
    assert conf['database']['connection'] == (
        'mysql+pymysql://tacker:pw-tacker_db@127.0.0.1:13306/tacker')
    authtoken = conf['keystone_authtoken']
    assert authtoken['auth_url'] == 'http://127.0.0.1:15000/v3'
    assert authtoken['www_authenticate_uri'] == 'http://127.0.0.1:15000/v3'
    assert (authtoken['username'], authtoken['password'],
            authtoken['project_name']) == ('tacker', 'pw-tacker', 'service')


def test_tacker_keeps_vim_keys_in_files_and_barbican_and_loads_our_drivers(
        layout):
    conf = _tacker_conf(layout)
    # An OpenStack VIM's key in a file, a Kubernetes VIM's in Barbican
    # (Tacker 16 registers none otherwise), found in the catalog.
    assert conf['vim_keys']['use_barbican'] == 'false'
    assert conf['k8s_vim']['use_barbican'] == 'true'
    assert conf['key_manager']['api_class'] == (
        'tacker.keymgr.barbican_key_manager.BarbicanKeyManager')
    assert 'barbican_endpoint' not in conf['key_manager']
    assert conf['tacker']['vnflcm_mgmt_driver'].split(',') == [
        'vnflcm_noop', 'mgmt-drivers-kubernetes', 'mgmt-drivers-kubespray']
    # Our driver: the CNI manifest of the lab's VM image (no Internet).
    assert conf['k8s_mgmt']['cni_manifest'] == '/etc/k8s-mgmt-lab/cni.yaml'
    # The conductor's log names the drivers it loaded.
    levels = conf['DEFAULT']['default_log_levels'].split(',')
    assert 'tacker.common.driver_manager=DEBUG' in levels
    # Tacker reads a stack's status every 2 s, not 10, for as long as
    # its default (600 s).
    wait = int(conf['openstack_vim']['stack_retry_wait'])
    assert wait == 2
    assert wait * int(conf['openstack_vim']['stack_retries']) == 600


def test_every_path_tacker_writes_is_in_the_state_dir(layout):
    conf = _tacker_conf(layout)
    paths = [conf['DEFAULT']['state_path'], conf['DEFAULT']['crypt_key_dir'],
             conf['DEFAULT']['api_paste_config'],
             conf['vim_keys']['openstack'],
             conf['vnf_package']['vnf_package_csar_path'],
             conf['glance_store']['filesystem_store_datadir'],
             conf['v2_vnfm']['tf_file_dir'],
             conf['v2_nfvo']['vnf_package_cache_dir'],
             conf['k8s_mgmt']['state_key_file'],
             conf['oslo_concurrency']['lock_path']]
    assert all(p.startswith(layout.tacker_etc + '/') for p in paths), paths
    # bootstrap.tacker_files makes each directory tacker.conf names, and
    # the one of the conductors' driver state dirs.
    dirs = config.tacker_dirs(layout)
    assert sorted(path for name, path in dirs.items()
                  if name != 'driver_state') == sorted(
        p for p in paths if not p.endswith(('api-paste.ini', '/data',
                                            '.key')))


def test_tackers_url_and_version():
    assert config.tacker_url(PORTS) == 'http://127.0.0.1:19890/'
    assert pins.version('tacker') == '16.0.0'
    assert pins.version('python-tackerclient')
    assert 'python-tackerclient' in pins.REQUIREMENTS['client']
    assert control_plane.version('tacker-conductor') == '16.0.0'


def test_a_tacker_plane_records_a_port_for_tacker_server(layout):
    os.makedirs(layout.root)
    plain = control_plane.ControlPlane(layout.root).ports
    assert 'tacker' not in plain
    with_tacker = control_plane.ControlPlane(layout.root, tacker=True).ports
    added = {'tacker', 'barbican'}
    assert {k: v for k, v in with_tacker.items() if k not in added} == plain
    assert set(with_tacker) - set(plain) == added
    assert not {with_tacker[k] for k in added} & set(plain.values())
    assert with_tacker['tacker'] != with_tacker['barbican']
    assert state.recorded_ports(layout) == with_tacker


def test_passwords_a_secrets_file_lacks_are_added(layout):
    os.makedirs(layout.root)
    state.write_private(layout.secrets, json.dumps({'admin': 'kept'}))
    made = state.secrets(layout)
    assert made['admin'] == 'kept'
    assert sorted(made) == sorted(state.SECRET_NAMES)
    assert state.secrets(layout) == made


def test_status_lists_tacker_only_on_a_plane_that_runs_it(layout):
    assert 'tacker-server' not in control_plane.ControlPlane(
        layout.root).status()
    status = control_plane.ControlPlane(layout.root, tacker=True).status()
    assert list(status)[-2:] == ['tacker-server', 'tacker-conductor']
    assert status['tacker-conductor']['log'] == os.path.join(
        layout.logs, 'tacker-conductor.log')


def _tree(root, files):
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        with open(os.path.join(root, name), 'w') as handle:
            handle.write(text)


def test_the_source_digest_follows_the_package_and_its_metadata(tmp_path):
    source = str(tmp_path)
    _tree(source, {'setup.cfg': '[metadata]\n', 'README.md': 'r',
                   'k8s_mgmt/__init__.py': '', 'tests/test_x.py': 'a'})
    first = tacker_driver.source_digest(source)
    _tree(source, {'tests/test_x.py': 'b',
                   'k8s_mgmt/__pycache__/x.cpython-311.pyc': 'compiled'})
    assert tacker_driver.source_digest(source) == first
    _tree(source, {'k8s_mgmt/driver.py': 'changed'})
    assert tacker_driver.source_digest(source) != first


def _wheel(path, entries, date_time):
    with zipfile.ZipFile(path, 'w') as wheel:
        for name, data in entries:
            wheel.writestr(zipfile.ZipInfo(name, date_time), data)
    return path


def test_the_wheel_digest_is_its_content_not_its_timestamps(tmp_path):
    entries = [('k8s_mgmt/a.py', b'x'), ('k8s_mgmt/b.py', b'y')]
    one = _wheel(str(tmp_path / 'one.whl'), entries, (2020, 1, 1, 0, 0, 0))
    two = _wheel(str(tmp_path / 'two.whl'), entries[::-1],
                 (2026, 11, 27, 4, 0, 0))
    other = _wheel(str(tmp_path / 'other.whl'),
                   [('k8s_mgmt/a.py', b'x'), ('k8s_mgmt/b.py', b'z')],
                   (2020, 1, 1, 0, 0, 0))
    assert tacker_driver.wheel_digest(one) == tacker_driver.wheel_digest(two)
    assert tacker_driver.wheel_digest(one) != tacker_driver.wheel_digest(
        other)


class _Conductor(object):
    """A supervisor whose tacker-conductor runs, recording restarts."""

    def __init__(self):
        self.calls = []

    def alive(self, name):
        return name == 'tacker-conductor'

    def stop(self, name, timeout):
        self.calls.append(('stop', name))

    def start(self, service):
        self.calls.append(('start', service.name))


@pytest.fixture
def running_plane(layout, monkeypatch, tmp_path):
    os.makedirs(layout.run)
    plane = control_plane.ControlPlane(layout.root, str(tmp_path / 'cache'),
                                       ports=PORTS, tacker=True)
    plane.supervisor = _Conductor()
    monkeypatch.setattr(control_plane.venvs, 'ensure',
                        lambda cache, name: '/venvs/' + name)
    state.write_private(os.path.join(layout.run, 'tacker-conductor.driver'),
                        'loaded\n')
    return plane


def test_the_conductor_restarts_only_for_another_wheel(running_plane,
                                                       monkeypatch):
    monkeypatch.setattr(running_plane, '_install_driver',
                        lambda venv: 'loaded')
    assert running_plane.install_driver() is False
    assert running_plane.supervisor.calls == []
    monkeypatch.setattr(running_plane, '_install_driver',
                        lambda venv: 'newer')
    assert running_plane.install_driver() is True
    assert running_plane.supervisor.calls == [
        ('stop', 'tacker-conductor'), ('start', 'tacker-conductor')]
    with open(os.path.join(running_plane.layout.run,
                           'tacker-conductor.driver')) as handle:
        assert handle.read() == 'newer\n'
