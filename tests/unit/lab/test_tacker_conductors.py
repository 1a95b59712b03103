"""Several tacker-conductors in a plane, as on several hosts: their
conductor-K.conf texts, the shared tacker.conf and state key, the
services a plane runs for N, the operations read from a conductor's log,
progress from every conductor's log and ``lab up --conductors``; no
process runs."""

import io
import os
import stat

import pytest

from k8s_mgmt.cli import main
from k8s_mgmt_lab.openstack import bootstrap
from k8s_mgmt_lab.openstack import conductor_operations
from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack import services
from k8s_mgmt_lab.openstack import tacker_conductors
from k8s_mgmt_lab.tacker_lcm import progress
from tests.unit.lab import plane_texts

PORTS, SECRETS = plane_texts.PORTS, plane_texts.SECRETS


def test_each_conductor_has_its_own_host_and_driver_state_dir(layout):
    first, second = (plane_texts.parsed(
        tacker_conductors.conductor_conf(layout, number))
        for number in (1, 2))
    assert first['DEFAULT']['host'] == 'lab-conductor-1'
    assert second['DEFAULT']['host'] == 'lab-conductor-2'
    assert first['k8s_mgmt']['state_dir'] == os.path.join(
        layout.tacker_data, 'k8s-mgmt', 'conductor-1')
    assert second['k8s_mgmt']['state_dir'] == os.path.join(
        layout.tacker_data, 'k8s-mgmt', 'conductor-2')
    # Each unpacks the packages in a directory of its own: Tacker fans
    # every upload out to all conductors, which unpack at once.
    packages = {c['vnf_package']['vnf_package_csar_path']
                for c in (first, second)}
    caches = {c['v2_nfvo']['vnf_package_cache_dir'] for c in (first, second)}
    assert len(packages) == len(caches) == 2
    assert all(p.startswith(layout.tacker_data + '/conductor-')
               for p in packages | caches)
    # Only what differs between hosts: the rest is tacker.conf's.
    assert first.defaults() == {'host': 'lab-conductor-1'}
    assert first.sections() == ['k8s_mgmt', 'vnf_package', 'v2_nfvo']
    assert set(first['k8s_mgmt']) - set(first.defaults()) == {'state_dir'}


def test_conductor_confs_are_private_beside_tacker_conf(layout):
    os.makedirs(layout.tacker_etc)
    tacker_conductors.write_confs(layout, 3)
    for number in (1, 2, 3):
        path = tacker_conductors.conf_path(layout, number)
        assert os.path.dirname(path) == layout.tacker_etc
        assert path.endswith('/conductor-%d.conf' % number)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        for made in (tacker_conductors.driver_state_dir(layout, number),
                     tacker_conductors.package_dir(layout, number)):
            assert os.path.isdir(made)
    assert not os.path.exists(tacker_conductors.conf_path(layout, 4))


def test_tacker_conf_names_one_state_key_and_no_state_dir(layout):
    conf = plane_texts.parsed(config.tacker_conf(layout, PORTS, SECRETS))
    assert conf['k8s_mgmt']['state_key_file'] == os.path.join(
        layout.tacker_etc, 'k8s-mgmt-state.key')
    assert 'state_dir' not in conf['k8s_mgmt']


def test_the_state_key_is_made_once_and_kept(layout):
    os.makedirs(layout.tacker_etc)
    path = config.state_key_file(layout)
    bootstrap.tacker_state_key(layout)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as handle:
        key = handle.read()
    bootstrap.tacker_state_key(layout)         # a kept plane's restart
    with open(path) as handle:
        assert handle.read() == key


def test_a_plane_runs_the_conductors_it_was_asked_for(layout):
    status = control_plane.ControlPlane(layout.root, tacker=True,
                                        conductors=3).status()
    assert list(status)[-4:] == ['tacker-server', 'tacker-conductor',
                                 'tacker-conductor-2', 'tacker-conductor-3']
    for number, name in enumerate(list(status)[-3:], 1):
        assert status[name]['log'] == os.path.join(layout.logs,
                                                   name + '.log')
        assert status[name]['driver_state_dir'] == \
            tacker_conductors.driver_state_dir(layout, number)
        assert status[name]['operations'] == []
    assert 'operations' not in status['tacker-server']


def test_the_count_is_recorded_for_later_commands(layout):
    os.makedirs(layout.root)
    assert control_plane.ControlPlane(layout.root).conductors == 1
    tacker_conductors.record_count(layout, 2)
    later = control_plane.ControlPlane(layout.root, tacker=True)
    assert later.conductors == 2
    assert not later.conductors_differ()
    assert list(later.status())[-2:] == ['tacker-conductor',
                                         'tacker-conductor-2']
    # A kept plane asked for another count restarts.
    assert control_plane.ControlPlane(layout.root, tacker=True,
                                      conductors=1).conductors_differ()
    with pytest.raises(ValueError):
        control_plane.ControlPlane(layout.root, conductors=5)


def test_conductor_k_reads_its_own_file_and_waits_for_its_own_queues(
        layout):
    second = services.tacker_conductor(layout, PORTS, '/venv', 2)
    assert second.name == 'tacker-conductor-2'
    assert second.argv[-4:] == [
        '--config-file', os.path.join(layout.tacker_etc, 'tacker.conf'),
        '--config-file', os.path.join(layout.tacker_etc, 'conductor-2.conf')]
    assert second.stop_timeout == services.CONDUCTOR_STOP_TIMEOUT
    assert services.tacker_conductor(layout, PORTS, '/venv').name == \
        'tacker-conductor'
    assert tacker_conductors.queues(2) == (
        'TACKER_CONDUCTOR.lab-conductor-2',
        'TACKER_CONDUCTOR_V2.lab-conductor-2')
    assert control_plane._stop_timeout('tacker-conductor-4') == \
        services.CONDUCTOR_STOP_TIMEOUT


class _Conductors(object):
    """A supervisor whose conductors run, recording restarts."""

    def __init__(self):
        self.calls = []

    def alive(self, name):
        return name.startswith('tacker-conductor')

    def stop(self, name, timeout):
        self.calls.append(('stop', name))

    def start(self, service):
        self.calls.append(('start', service.name))


def test_a_new_wheel_restarts_every_conductor_that_loaded_another(
        layout, monkeypatch, tmp_path):
    os.makedirs(layout.run)
    plane = control_plane.ControlPlane(layout.root, str(tmp_path / 'cache'),
                                       ports=PORTS, tacker=True,
                                       conductors=3)
    plane.supervisor = _Conductors()
    monkeypatch.setattr(control_plane.venvs, 'ensure',
                        lambda cache, name: '/venvs/' + name)
    monkeypatch.setattr(plane, '_install_driver', lambda venv: 'newer')
    for name, loaded in (('tacker-conductor', 'older'),
                         ('tacker-conductor-2', 'newer'),
                         ('tacker-conductor-3', 'older')):
        with open(os.path.join(layout.run, name + '.driver'), 'w') as out:
            out.write(loaded + '\n')
    assert plane.install_driver() is True
    assert sorted(plane.supervisor.calls) == [
        ('start', 'tacker-conductor'), ('start', 'tacker-conductor-3'),
        ('stop', 'tacker-conductor'), ('stop', 'tacker-conductor-3')]
    with open(os.path.join(layout.run, 'tacker-conductor-3.driver')) as f:
        assert f.read() == 'newer\n'


# Two hook calls on one instance, one on another interleaved with the
# second, and lines that are no phase line.
_CONDUCTOR_LOG = '''\
2026-11-27 08:46:10.001 12599 INFO tacker.conductor.conductor_server [-] \
Starting instantiate
2026-11-27 08:46:11.765 12599 INFO k8s_mgmt.engine.phase_log [None \
req-af3e - - - -] [instantiate 44ed1fa8-8c18] ==> Read the topology from Heat
2026-11-27 08:46:12.158 12599 INFO k8s_mgmt.engine.phase_log [None \
req-af3e - - - -] [instantiate 44ed1fa8-8c18] <== Read the topology from \
Heat: done in 0.4 s
2026-11-27 08:46:12.160 12599 INFO k8s_mgmt.engine.phase_log [-] \
[instantiate 44ed1fa8-8c18] ==> Connect to every node
2026-11-27 08:46:30.000 12599 INFO k8s_mgmt.engine.phase_log [None \
req-af3e - - - -] [instantiate 44ed1fa8-8c18] finished in 18.2 s: Read \
the topology from Heat 0.4 s; Connect to every node 17.8 s
2026-11-27 08:50:00.000 12599 INFO k8s_mgmt.engine.phase_log [None \
req-b1 - - - -] [heal_start 44ed1fa8-8c18] ==> Read the topology from Heat
2026-11-27 08:50:00.100 12599 INFO k8s_mgmt.engine.phase_log [None \
req-c2 - - - -] [terminate 7afa9fb0-a7c2] ==> Unregister the VIM
2026-11-27 08:50:00.200 12599 INFO k8s_mgmt.engine.phase_log [None \
req-b1 - - - -] [heal_start 44ed1fa8-8c18] ==> Remove the node: skipped \
(no node)
2026-11-27 08:50:01.000 12599 INFO k8s_mgmt.engine.phase_log [None \
req-b1 - - - -] [heal_start 44ed1fa8-8c18] finished in 1.0 s: ...
2026-11-27 08:50:01.500 12599 INFO tacker.x [None req-d4 - - - -] \
[instantiate 44ed1fa8-8c18] ==> not the driver's
2026-11-27 08:50:02.000 12599 INFO k8s_mgmt.engine.phase_log [None \
req-e5 - - - -] [heal_start 44ed1fa8-8c18] ==> Read the topology from Heat
'''


def test_a_conductors_operations_are_its_hook_calls_in_log_order():
    assert conductor_operations.operations(_CONDUCTOR_LOG) == [
        {'hook': 'instantiate', 'vnf_instance_id': '44ed1fa8-8c18'},
        {'hook': 'heal_start', 'vnf_instance_id': '44ed1fa8-8c18'},
        {'hook': 'terminate', 'vnf_instance_id': '7afa9fb0-a7c2'},
        {'hook': 'heal_start', 'vnf_instance_id': '44ed1fa8-8c18'}]


def test_status_reads_each_conductors_operations_from_its_log(layout):
    os.makedirs(layout.logs)
    with open(os.path.join(layout.logs, 'tacker-conductor-2.log'),
              'w') as handle:
        handle.write(_CONDUCTOR_LOG)
    status = control_plane.ControlPlane(layout.root, tacker=True,
                                        conductors=2).status()
    assert status['tacker-conductor']['operations'] == []
    assert [op['hook'] for op in
            status['tacker-conductor-2']['operations']] == [
        'instantiate', 'heal_start', 'terminate', 'heal_start']


def test_progress_follows_every_conductors_log(tmp_path):
    logs = [tmp_path / 'tacker-conductor.log',
            tmp_path / 'tacker-conductor-2.log']
    for log in logs:
        log.write_text('2026-11-27 07:00:00.000 10 INFO k8s_mgmt.x [-] '
                       'old\n')
    shown = io.StringIO()
    with progress.ConductorProgress([str(log) for log in logs], out=shown):
        with open(logs[1], 'a') as handle:
            handle.write('2026-11-27 07:40:01.123 4242 INFO '
                         'k8s_mgmt.engine.phase_log [req-1 - - - - - -] '
                         '[instantiate 1] ==> Join workers\n')
    assert shown.getvalue().splitlines() == [
        '[tacker-conductor-2] 07:40:01 INFO [instantiate 1] ==> Join '
        'workers']


@pytest.mark.parametrize('words', [
    ['--conductors', '2'],
    ['--control-plane', '/somewhere', '--conductors', '2']])
def test_conductors_need_a_plane_of_the_labs_own(words, capsys, tmp_path,
                                                 monkeypatch):
    started = []
    monkeypatch.setattr('k8s_mgmt_lab.cli.lab._require_machine',
                        lambda: started.append('checked'))
    status = main.main(['lab', '--state-dir', str(tmp_path), 'up',
                        '--flavour', 'simple'] + words)
    assert status != 0
    err = capsys.readouterr().err
    assert '--conductors needs --own-control-plane' in err
    assert len(err.strip().splitlines()) == 1
    assert started == [] and os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize('count', ['0', '5', 'two'])
def test_conductors_are_one_to_four(count, capsys, tmp_path):
    with pytest.raises(SystemExit):
        main.main(['lab', '--state-dir', str(tmp_path), 'up', '--flavour',
                   'simple', '--own-control-plane', '--conductors', count])
    assert '--conductors' in capsys.readouterr().err


class _Services(object):
    """A supervisor of the services in ``running``: starting one adds it,
    stopping one removes it; every call recorded."""

    def __init__(self, running):
        self.running = set(running)
        self.calls = []

    def alive(self, name):
        return name in self.running

    def pid(self, name):
        return 1 if name in self.running else None

    def start(self, service):
        self.calls.append(('start', service.name))
        self.running.add(service.name)

    def stop(self, name, timeout):
        if name in self.running:
            self.calls.append(('stop', name))
            self.running.discard(name)

    def log_path(self, name):
        return '/logs/%s.log' % name


@pytest.fixture
def quiet_plane(layout, monkeypatch, tmp_path):
    """plane(running, **kwargs): a ControlPlane with Tacker whose
    supervisor runs ``running``, set up as if before (no step, file or
    wheel of the real start is made)."""
    monkeypatch.setattr(control_plane.venvs, 'ensure',
                        lambda cache, name, log=None: '/venvs/' + name)
    monkeypatch.setattr(control_plane.bootstrap, 'once',
                        lambda layout, name, step, *args: None)
    for name in ('heat_files', 'barbican_files', 'tacker_files',
                 'tacker_state_key'):
        monkeypatch.setattr(control_plane.bootstrap, name,
                            lambda *args: None)
    monkeypatch.setattr(control_plane.state, 'port_free', lambda port: True)

    def plane(running, **kwargs):
        made = control_plane.ControlPlane(
            layout.root, str(tmp_path / 'cache'), ports=PORTS, tacker=True,
            **kwargs)
        monkeypatch.setattr(made, '_install_driver', lambda venv: 'wheel')
        monkeypatch.setattr(control_plane.state, 'secrets',
                            lambda layout: SECRETS)
        made.supervisor = _Services(running)
        return made
    return plane


def test_a_plane_that_runs_is_left_as_it_is(quiet_plane):
    every = (control_plane.SERVICE_NAMES + ('barbican-api', 'tacker-server')
             + tacker_conductors.service_names(2))
    plane = quiet_plane(every, conductors=2)
    os.makedirs(plane.layout.root)
    tacker_conductors.record_count(plane.layout, 2)
    plane.up()
    assert plane.supervisor.calls == []


def test_a_plane_without_tacker_gets_tacker_alone(quiet_plane):
    plane = quiet_plane(control_plane.SERVICE_NAMES, conductors=1)
    plane.up()
    assert plane.supervisor.calls == [
        ('start', 'barbican-api'), ('start', 'tacker-server'),
        ('start', 'tacker-conductor')]


def test_another_count_of_conductors_restarts_the_conductors_alone(
        quiet_plane):
    running = control_plane.SERVICE_NAMES + ('barbican-api',
                                             'tacker-server',
                                             'tacker-conductor')
    plane = quiet_plane(running, conductors=2)
    os.makedirs(plane.layout.root)
    tacker_conductors.record_count(plane.layout, 1)
    plane.up()
    assert plane.supervisor.calls == [
        ('stop', 'tacker-conductor'), ('start', 'tacker-conductor'),
        ('start', 'tacker-conductor-2')]
    assert tacker_conductors.recorded_count(plane.layout) == 2


def test_a_service_whose_port_stays_held_is_not_started_and_named(
        quiet_plane, monkeypatch):
    plane = quiet_plane(control_plane.SERVICE_NAMES[:3])
    monkeypatch.setattr(control_plane, 'PORT_WAIT', 0.3)
    monkeypatch.setattr(control_plane.state, 'port_free',
                        lambda port: port != PORTS['keystone'])
    monkeypatch.setattr(plane, 'down', lambda: None)
    with pytest.raises(control_plane.processes.ServiceFailed) as failed:
        plane.up()
    assert str(failed.value).startswith(
        'keystone cannot start: port %d on 127.0.0.1 is still held'
        % PORTS['keystone'])
    assert plane.supervisor.calls == []


def test_a_port_is_free_once_nothing_listens_on_it():
    import socket
    from k8s_mgmt_lab.openstack import state
    with socket.socket() as listener:
        listener.bind(('127.0.0.1', 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert not state.port_free(port)
    assert state.port_free(port)
