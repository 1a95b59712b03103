"""The driver's state directory is 0700, whoever creates it first."""

import logging
import os
import stat

import paramiko
import pytest

from k8s_mgmt import state as state_mod
from k8s_mgmt.ssh import hostkeys


def _mode(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


@pytest.fixture
def umask_022():
    # The umask a service usually runs with: makedirs alone gives 0755.
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.fixture(autouse=True)
def _forget_warnings():
    state_mod._LEFT_OPEN.clear()


def test_a_new_state_dir_and_its_missing_parents_are_0700(tmp_path,
                                                          umask_022):
    base = tmp_path / 'var' / 'lib' / 'k8s-mgmt'
    state = state_mod.InstanceState('inst-1', base_dir=str(base))
    state.write(state_mod.CLUSTER, '{}')
    for directory in (tmp_path / 'var', tmp_path / 'var' / 'lib', base,
                      base / 'inst-1'):
        assert _mode(directory) == 0o700, directory
    assert _mode(state.file(state_mod.CLUSTER)) == 0o600


def test_the_pin_store_makes_the_state_dir_0700_too(tmp_path, umask_022):
    # An operation opens the pin file before it writes any state.
    base = tmp_path / 'state'
    state = state_mod.InstanceState('inst-1', base_dir=str(base))
    store = hostkeys.HostKeyStore(state.file(state_mod.HOST_KEYS))
    assert store.check('srv-1', paramiko.ECDSAKey.generate(), 'master-1')
    assert _mode(base) == 0o700 and _mode(state.path) == 0o700


def test_an_open_state_dir_of_ours_is_tightened_with_a_warning(
        tmp_path, caplog):
    base = tmp_path / 'state'
    (base / 'old-instance').mkdir(parents=True)
    (base / state_mod.HOST_KEYS).write_text('{}')
    os.chmod(str(base), 0o755)
    caplog.set_level(logging.WARNING, logger='k8s_mgmt.state')
    state_mod.InstanceState('inst-1', base_dir=str(base)).ensure_dir()
    assert _mode(base) == 0o700
    assert [r.getMessage() for r in caplog.records] == [
        'State directory %s was mode 0755; set to 0700: it holds pinned '
        'host keys and cluster credentials' % base]


def test_a_shared_directory_is_left_alone_with_one_warning(
        tmp_path, caplog):
    # state_dir pointed at a directory that also holds other things.
    base = tmp_path / 'shared'
    base.mkdir()
    (base / 'somebody-elses.conf').write_text('x')
    os.chmod(str(base), 0o1777)
    caplog.set_level(logging.WARNING, logger='k8s_mgmt.state')
    for instance in ('inst-1', 'inst-2'):
        state = state_mod.InstanceState(instance, base_dir=str(base))
        state.ensure_dir()
        assert _mode(state.path) == 0o700
    assert _mode(base) == 0o1777
    assert len(caplog.records) == 1
    assert 'left as it is' in caplog.records[0].getMessage()


@pytest.mark.parametrize('bad', ['inst-1\n', 'inst\u2028', 'x' * 129])
def test_instance_ids_that_cannot_be_a_plain_directory_name(bad, tmp_path):
    with pytest.raises(ValueError):
        state_mod.InstanceState(bad, base_dir=str(tmp_path))
