"""HostKeyStore: pinning, refusal, strict policy, file safety, concurrency."""

import json
import os
import stat
import subprocess
import sys
import textwrap
import threading

import paramiko
import pytest
from oslo_config import fixture as config_fixture

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt.ssh import hostkeys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


@pytest.fixture(scope='module')
def keys():
    return [paramiko.ECDSAKey.generate() for _ in range(3)]


@pytest.fixture
def store(tmp_path):
    return hostkeys.HostKeyStore(str(tmp_path / 'state' / 'host_keys.json'))


def test_pin_on_first_contact_then_accept_same_key(store, keys):
    assert store.check('srv-1', keys[0], 'master-1') is True
    assert store.check('srv-1', keys[0], 'master-1') is False
    entry = store.get('srv-1')
    assert entry['fingerprint'] == hostkeys.fingerprint(keys[0])
    assert entry['key_type'] == keys[0].get_name()
    assert entry['node'] == 'master-1'


def test_changed_key_is_refused_with_both_fingerprints(store, keys):
    store.check('srv-1', keys[0], 'master-1')
    with pytest.raises(exceptions.HostKeyMismatch) as info:
        store.check('srv-1', keys[1], 'master-1')
    text = str(info.value)
    assert 'master-1' in text and 'srv-1' in text and store.path in text
    assert hostkeys.fingerprint(keys[0]) in text
    assert hostkeys.fingerprint(keys[1]) in text
    assert store.get('srv-1')['fingerprint'] == hostkeys.fingerprint(keys[0])


def test_strict_refuses_unpinned_and_never_writes(store, keys):
    with pytest.raises(exceptions.SSHError) as info:
        store.check('srv-9', keys[0], 'w', policy=hostkeys.POLICY_STRICT)
    assert 'strict' in str(info.value)
    assert not os.path.exists(store.path)
    store.check('srv-9', keys[0], 'w')
    assert store.check('srv-9', keys[0], 'w', policy='strict') is False
    with pytest.raises(exceptions.HostKeyMismatch):
        store.check('srv-9', keys[1], 'w', policy='strict')


def test_unknown_policy_is_an_error(store, keys):
    with pytest.raises(ValueError):
        store.check('x', keys[0], 'w', policy='accept-all')


def test_file_is_private_json_and_no_temp_files_remain(store, keys):
    store.check('srv-1', keys[0], 'a')
    store.check('srv-2', keys[1], 'b')
    assert stat.S_IMODE(os.stat(store.path).st_mode) == 0o600
    with open(store.path) as f:
        data = json.load(f)
    assert data['version'] == 1 and sorted(data['keys']) == ['srv-1', 'srv-2']
    leftovers = [n for n in os.listdir(os.path.dirname(store.path))
                 if n not in ('host_keys.json', 'host_keys.json.lock')]
    assert leftovers == []


def test_forget_and_forget_many(store, keys):
    for i, key in enumerate(keys):
        store.check('srv-%d' % i, key, 'n%d' % i)
    assert store.forget('srv-0') == 1
    assert store.forget('srv-0') == 0
    assert store.forget_many(['srv-1', 'srv-2', 'srv-unknown', None]) == 2
    assert store.all() == {}
    # A forgotten server may come back with any key (a healed VM).
    assert store.check('srv-1', keys[0], 'n1') is True


def test_corrupt_file_is_refused_not_treated_as_empty(store, keys):
    os.makedirs(os.path.dirname(store.path))
    with open(store.path, 'w') as f:
        f.write('{not json')
    with pytest.raises(exceptions.MgmtDriverError) as info:
        store.check('srv-1', keys[0], 'n')
    assert 'not valid JSON' in str(info.value)


def test_pin_id_prefers_server_id():
    assert hostkeys.pin_id('abc-123', '10.0.0.5', 22) == 'abc-123'
    assert hostkeys.pin_id(None, '10.0.0.5', 2222) == '10.0.0.5:2222'


def test_default_path_from_config(tmp_path):
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    try:
        fixture.config(group='k8s_mgmt', state_dir=str(tmp_path))
        assert hostkeys.HostKeyStore().path == str(tmp_path /
                                                   'host_keys.json')
        fixture.config(group='k8s_mgmt', host_key_file='/x/pins.json')
        assert hostkeys.HostKeyStore().path == '/x/pins.json'
    finally:
        fixture.cleanUp()


def test_concurrent_threads_lose_no_pin(store):
    count = 16
    thread_keys = [paramiko.ECDSAKey.generate() for _ in range(count)]
    start = threading.Barrier(count, timeout=20)
    errors = []

    def pin(i):
        try:
            start.wait()
            store.check('srv-%d' % i, thread_keys[i], 'n%d' % i)
        except Exception as err:  # collected and asserted below
            errors.append(err)

    threads = [threading.Thread(target=pin, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert len(store.all()) == count


PROCESS_SCRIPT = textwrap.dedent('''
    import sys
    import paramiko
    from k8s_mgmt.ssh import hostkeys
    store = hostkeys.HostKeyStore(sys.argv[1])
    for i in range(10):
        store.check('p%s-%d' % (sys.argv[2], i),
                    paramiko.ECDSAKey.generate(), 'n')
''')


def test_concurrent_processes_lose_no_pin(store):
    env = dict(os.environ, PYTHONPATH=REPO)
    procs = [subprocess.Popen([sys.executable, '-c', PROCESS_SCRIPT,
                               store.path, str(n)], env=env)
             for n in range(4)]
    assert [p.wait(60) for p in procs] == [0, 0, 0, 0]
    assert len(store.all()) == 40
