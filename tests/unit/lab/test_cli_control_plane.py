"""``k8s-mgmt lab control-plane up|status|down --tacker``: the flag makes
the ControlPlane with tacker=True, its absence without; no service runs
(the plane is a recorder)."""

import json

import pytest

from k8s_mgmt.cli import main
from k8s_mgmt_lab.openstack import control_plane


class RecordedPlane(object):
    """What the verbs made and asked of their ControlPlane."""

    made = []

    def __init__(self, state_dir, cache_dir, tacker=False):
        self.made.append({'dir': state_dir, 'cache': cache_dir,
                          'tacker': tacker, 'called': []})

    def _called(self, name):
        self.made[-1]['called'].append(name)

    def up(self):
        self._called('up')

    def status(self):
        self._called('status')
        names = ('keystone',) + (('tacker-server',)
                                 if self.made[-1]['tacker'] else ())
        return {name: {'alive': True} for name in names}

    def down(self):
        self._called('down')
        return {}


@pytest.fixture
def plane(monkeypatch):
    monkeypatch.setattr(control_plane, 'ControlPlane', RecordedPlane)
    RecordedPlane.made = []
    return RecordedPlane


def _run(capsys, tmp_path, *words):
    status = main.main(['lab', 'control-plane', '--dir', str(tmp_path),
                        '--cache-dir', str(tmp_path / 'cache')]
                       + list(words))
    return status, capsys.readouterr().out


@pytest.mark.parametrize('words, tacker', [
    (('up', '--tacker'), True), (('up',), False),
    (('status', '--tacker'), True), (('status',), False),
    (('down', '--tacker'), True), (('down',), False)])
def test_tacker_flag_reaches_the_control_plane(plane, capsys, tmp_path,
                                               words, tacker):
    status, _ = _run(capsys, tmp_path, *words)
    assert status == 0
    assert plane.made == [{'dir': str(tmp_path),
                           'cache': str(tmp_path / 'cache'),
                           'tacker': tacker, 'called': [words[0]]}]


def test_up_with_tacker_says_so(plane, capsys, tmp_path):
    assert _run(capsys, tmp_path, 'up', '--tacker')[1] == (
        'control plane up with Tacker; credentials: %s/openrc\n' % tmp_path)
    assert _run(capsys, tmp_path, 'up')[1] == (
        'control plane up; credentials: %s/openrc\n' % tmp_path)


def test_status_with_tacker_lists_tackers_services(plane, capsys, tmp_path):
    assert sorted(json.loads(_run(capsys, tmp_path, 'status',
                                  '--tacker')[1])) == [
        'keystone', 'tacker-server']


def test_other_actions_refuse_the_flag(plane, capsys, tmp_path):
    with pytest.raises(SystemExit) as caught:
        _run(capsys, tmp_path, 'openrc', '--tacker')
    assert caught.value.code == 2
    assert 'unrecognized arguments: --tacker' in capsys.readouterr().err
    assert plane.made == []
