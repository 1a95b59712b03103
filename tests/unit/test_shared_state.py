"""Per-instance state every conductor reads the same (shared_state), sealed
with the state key (state_key), in the metadata of Tacker's own
VnfInstance object: a subclass whose save() keeps what Tacker's would
write (the fields it sees changed) in a dict standing for the database."""

import json
import os
import stat
import types

import paramiko
import pytest

from k8s_mgmt import shared_state
from k8s_mgmt import state as state_mod
from k8s_mgmt import state_key
from k8s_mgmt.ssh import hostkeys
from tests.helpers import driver_paths

INSTANCE = '7c1e5d0e-5b1c-4b53-8e8e-1d2f3a4b5c6d'
KEY = shared_state.METADATA_KEY


@pytest.fixture(scope='module')
def tacker_instance_class():
    # Tacker's class alone: objects.register_all() would import all of
    # Tacker (see tests/functional/tacker/test_tacker_compat.py).
    from tacker.objects import vnf_instance

    class SavedInstance(vnf_instance.VnfInstance):
        """Tacker's VnfInstance; save() writes the metadata to ``db``
        when Tacker's would: only if the field is seen changed."""

        def save(self):
            if 'vnf_metadata' in self.obj_what_changed():
                self.db[self.id] = json.loads(json.dumps(self.vnf_metadata))
            self.saves += 1
            self.obj_reset_changes()
    return SavedInstance


@pytest.fixture
def db():
    return {}


@pytest.fixture
def make_instance(tacker_instance_class, db):
    """A fresh copy of the instance as a conductor loads it from ``db``."""
    def make():
        inst = tacker_instance_class(id=INSTANCE,
                                     vnf_metadata=dict(db.get(INSTANCE, {})))
        inst.db, inst.saves = db, 0
        inst.obj_reset_changes()
        return inst
    return make


@pytest.fixture
def driver_conf(tmp_path):
    """Conductor A's options: its state dir and the shared key file."""
    with driver_paths.driver_paths(tmp_path / 'a',
                                   tmp_path / 'keys' / 'state.key') as fixture:
        yield fixture


def _ctx(instance):
    return types.SimpleNamespace(vnf_instance=instance,
                                 vnf_instance_id=INSTANCE)


def _pin(store, server_id):
    return store.check(server_id, paramiko.ECDSAKey.generate(), server_id)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


# -- the key -------------------------------------------------------------

def test_a_new_key_is_private_and_never_overwritten(tmp_path):
    path = str(tmp_path / 'etc' / 'state.key')
    made = state_key.create(path)
    assert _mode(path) == 0o600 and _mode(os.path.dirname(path)) == 0o700
    assert state_key.load(path).key_id == made
    with pytest.raises(state_key.StateKeyError, match='exists already'):
        state_key.create(path)
    assert state_key.load(path).key_id == made


def test_a_key_open_to_others_or_missing_or_garbled_is_refused(tmp_path):
    path = str(tmp_path / 'state.key')
    with pytest.raises(state_key.StateKeyError,
                       match='does not exist.*k8s-mgmt statekey create'):
        state_key.load(path)
    state_key.create(path)
    os.chmod(path, 0o644)
    with pytest.raises(state_key.StateKeyError, match='chmod 600'):
        state_key.load(path)
    os.chmod(path, 0o600)
    with open(path, 'w') as handle:
        handle.write('not a key\n')
    with pytest.raises(state_key.StateKeyError, match='not a Fernet key'):
        state_key.load(path)


# -- sealing -------------------------------------------------------------

def _sync(tmp_path, home, key_path, conductor='a'):
    local = state_mod.InstanceState(INSTANCE,
                                    base_dir=str(tmp_path / conductor))
    if not os.path.exists(key_path):
        state_key.create(key_path)
    return shared_state.SharedState(local, home, state_key.load(key_path))


class _Home(object):
    def __init__(self):
        self.value, self.puts = None, 0

    def get(self):
        return self.value

    def put(self, value):
        self.value, self.puts = value, self.puts + 1


def test_what_one_conductor_pushes_another_pulls_and_no_one_reads(
        tmp_path):
    home, key_path = _Home(), str(tmp_path / 'state.key')
    a = _sync(tmp_path, home, key_path, 'a')
    a.pull()
    password = a.local.vrrp_password()
    a.local.update_cluster_record(init_master_server_id='srv-1')
    a.push()
    assert home.value.startswith('v1.%s.' % a.key.key_id)
    assert password.reveal() not in home.value and 'srv-1' not in home.value
    # Conductor B, with nothing local: the same password and record.
    b = _sync(tmp_path, home, key_path, 'b')
    b.pull()
    assert b.local.vrrp_password().reveal() == password.reveal()
    assert b.local.cluster_record() == {'init_master_server_id': 'srv-1'}
    # Nothing changed: nothing saved again.
    puts = home.puts
    b.push()
    assert home.puts == puts


def test_a_changed_swapped_or_foreign_value_is_refused_naming_why(
        tmp_path):
    home, key_path = _Home(), str(tmp_path / 'state.key')
    a = _sync(tmp_path, home, key_path)
    a.local.vrrp_password()
    a.pull()
    sealed = home.value
    head, token = sealed.rsplit('.', 1)[0], sealed.rsplit('.', 1)[1]
    home.value = '%s.%s' % (head, token[:-8] + ('A' * 8))
    with pytest.raises(shared_state.SharedStateError,
                       match='changed after it was sealed'):
        a.pull()
    # Sealed with another conductor's key: both key ids named.
    other_key = str(tmp_path / 'other.key')
    other = _sync(tmp_path, _Home(), other_key, 'c')
    home.value = other.seal({state_mod.VRRP_PASSWORD: 'x\n'})
    with pytest.raises(shared_state.SharedStateError) as err:
        a.pull()
    assert other.key.key_id in str(err.value) and a.key.key_id in str(
        err.value) and 'copy the key file' in str(err.value)
    # Copied from another instance's metadata.
    foreign = shared_state.SharedState(
        state_mod.InstanceState('another', base_dir=str(tmp_path / 'd')),
        home, a.key)
    home.value = foreign.seal({state_mod.VRRP_PASSWORD: 'x\n'})
    with pytest.raises(shared_state.SharedStateError,
                       match='sealed for VNF instance another'):
        a.pull()
    home.value = 'my own words'
    with pytest.raises(shared_state.SharedStateError,
                       match='not a value this driver wrote'):
        a.pull()


def test_old_local_state_is_saved_once_and_stale_cache_is_replaced(
        tmp_path):
    home, key_path = _Home(), str(tmp_path / 'state.key')
    a = _sync(tmp_path, home, key_path)
    a.local.update_cluster_record(init_master_server_id='srv-old')
    a.pull()        # nothing in the database: the local state goes there
    assert home.puts == 1
    a.pull()
    assert home.puts == 1
    # B had a stale cache: the database wins, files it lacks go.
    b = _sync(tmp_path, home, key_path, 'b')
    b.local.update_cluster_record(init_master_server_id='srv-stale')
    b.local.write(state_mod.VRRP_PASSWORD, 'stale\n')
    b.pull()
    assert b.local.cluster_record() == {'init_master_server_id': 'srv-old'}
    assert b.local.read(state_mod.VRRP_PASSWORD) is None
    # Terminated (the directory removed): the key goes from the database.
    import shutil
    shutil.rmtree(b.local.path)
    b.push()
    assert home.value is None


# -- in a hook, with Tacker's VnfInstance ----------------------------------

def test_each_change_is_in_the_database_before_the_hook_ends(
        driver_conf, make_instance, db, tmp_path):
    inst = make_instance()
    with shared_state.shared(_ctx(inst)) as sync:
        store = hostkeys.HostKeyStore(sync.local.host_key_file())
        assert _pin(store, 'srv-1')
        # Saved at once: a conductor killed now loses nothing.
        sealed = db[INSTANCE][KEY]
        sync.local.vrrp_password()
        assert db[INSTANCE][KEY] != sealed
    # Tacker's own keys stay beside ours.
    assert list(db[INSTANCE]) == [KEY]
    assert inst.saves >= 2


def test_another_conductor_or_a_wiped_cache_finds_the_same_state(
        driver_conf, make_instance, db, tmp_path):
    with shared_state.shared(_ctx(make_instance())) as sync:
        store = hostkeys.HostKeyStore(sync.local.host_key_file())
        _pin(store, 'srv-1')
        password = sync.local.vrrp_password().reveal()
    pins = store.all()
    for base in ('b', 'a'):
        # Conductor B's empty state dir, then A's, wiped.
        driver_conf.config(group='k8s_mgmt', state_dir=str(tmp_path / base))
        if base == 'a':
            import shutil
            shutil.rmtree(str(tmp_path / 'a'))
        with shared_state.shared(_ctx(make_instance())) as sync:
            assert sync.local.vrrp_password().reveal() == password
            assert hostkeys.HostKeyStore(
                sync.local.host_key_file()).all() == pins


def test_a_failing_hook_still_saves_what_it_learnt(driver_conf,
                                                   make_instance, db):
    class Boom(Exception):
        pass
    with pytest.raises(Boom):
        with shared_state.shared(_ctx(make_instance())) as sync:
            sync.local.update_cluster_record(init_master_server_id='srv-9')
            raise Boom()
    with shared_state.shared(_ctx(make_instance())) as sync:
        assert sync.local.cluster_record()['init_master_server_id'] == \
            'srv-9'


def test_outside_tacker_the_state_dir_is_the_only_home(driver_conf,
                                                       tmp_path):
    plain = {'id': INSTANCE, 'vnf_metadata': {}}
    with shared_state.shared(_ctx(plain)) as sync:
        assert sync is None
    assert not os.path.exists(str(tmp_path / 'keys' / 'state.key'))
    assert plain['vnf_metadata'] == {}


def test_the_first_operation_makes_the_key_with_a_warning(
        driver_conf, make_instance, tmp_path, caplog):
    caplog.set_level('WARNING', logger='k8s_mgmt.state_key')
    with shared_state.shared(_ctx(make_instance())):
        pass
    path = str(tmp_path / 'keys' / 'state.key')
    assert _mode(path) == 0o600
    assert ['copy it to every tacker-conductor host' in r.getMessage()
            for r in caplog.records] == [True]
