"""A damaged pin file is one clear error, never "no pins"; changed keys say
how to fix them; operators can pre-load pins."""

import json

import paramiko
import pytest

from k8s_mgmt import exceptions
from k8s_mgmt.ssh import hostkeys


@pytest.fixture(scope='module')
def keys():
    return [paramiko.ECDSAKey.generate(), paramiko.RSAKey.generate(1024)]


@pytest.fixture
def store(tmp_path):
    return hostkeys.HostKeyStore(str(tmp_path / 'host_keys.json'))


def _write(store, text):
    with open(store.path, 'w') as f:
        f.write(text if isinstance(text, str) else json.dumps(text))


GOOD = {'node': 'm', 'key_type': 'ssh-ed25519', 'key': 'AAAAC3Nz'}


@pytest.mark.parametrize('content, problem', [
    ('', 'is not valid JSON'),
    ('{"version": 1, "keys": {', 'is not valid JSON'),
    ('[]', 'holds a JSON list, not an object'),
    ('"keys"', 'holds a JSON str'),
    ({'keys': []}, 'has "keys" of type list'),
    ({'version': 1, 'keys': []}, 'has "keys" of type list'),
    ({'version': 1}, 'has "keys" of type NoneType'),
    ({'version': 1, 'keys': 'srv-1'}, 'has "keys" of type str'),
    ({'version': 2, 'keys': {}}, 'has version 2; this k8s-mgmt reads '
                                 'version 1'),
    ({'keys': {}}, 'has version None'),
    ({'version': 1, 'keys': {'srv-1': 'ssh-rsa AAAA'}},
     "has pin 'srv-1' of type str, not an object"),
    ({'version': 1, 'keys': {'srv-1': {'node': 'm'}}},
     "has pin 'srv-1' without \"key_type\" and \"key\""),
    ({'version': 1, 'keys': {'srv-1': dict(GOOD, key='not base64!')}},
     "has pin 'srv-1' whose \"key\" is not base64"),
])
def test_damaged_file_is_one_clear_error(store, keys, content, problem):
    _write(store, content)
    for call in (store.all, lambda: store.get('srv-1'),
                 lambda: store.check('srv-1', keys[0], 'm'),
                 lambda: store.forget('srv-1')):
        with pytest.raises(hostkeys.HostKeyFileError) as info:
            call()
        text = str(info.value)
        expected = 'host key file %s %s' % (store.path, problem)
        assert text.startswith(expected), text
        assert '\n' not in text
    with open(store.path) as f:  # nothing was overwritten
        assert f.read() == (content if isinstance(content, str)
                            else json.dumps(content))


def test_valid_empty_file_means_no_pins(store, keys):
    _write(store, {'version': 1, 'keys': {}})
    assert store.all() == {}
    assert store.check('srv-1', keys[0], 'm') is True


def test_changed_key_type_is_refused_saying_how_to_fix_it(store, keys):
    store.check('srv-1', keys[1], 'master-0')       # RSA pinned
    with pytest.raises(exceptions.HostKeyMismatch) as info:
        store.check('srv-1', keys[0], 'master-0')   # now offers ECDSA
    text = str(info.value)
    assert ('the VM now offers a ecdsa-sha2-nistp256 key where a ssh-rsa '
            'key is pinned') in text
    assert 'k8s-mgmt hostkeys add srv-1 --key' in text
    assert '--replace --file %s' % store.path in text
    assert 'k8s-mgmt hostkeys remove srv-1 --file %s' % store.path in text


def test_strict_refusal_says_how_to_pre_load(store, keys):
    with pytest.raises(hostkeys.HostKeyNotPinned) as info:
        store.check('srv-9', keys[0], 'w-1', policy='strict')
    text = str(info.value)
    assert text.startswith('w-1: connect: host key %s of server srv-9 is '
                           'not pinned' % hostkeys.fingerprint(keys[0]))
    assert 'k8s-mgmt hostkeys add srv-9' in text


def test_pre_loaded_pin_admits_strict_and_needs_replace(store, keys):
    entry = store.add('srv-1', keys[0].get_name(), keys[0].get_base64(),
                      node='m-1')
    assert entry['verified'] == 'manual'
    assert entry['fingerprint'] == hostkeys.fingerprint(keys[0])
    assert store.check('srv-1', keys[0], 'm-1', policy='strict') is False
    with pytest.raises(hostkeys.PinExists) as info:
        store.add('srv-1', keys[1].get_name(), keys[1].get_base64())
    assert '--replace' in str(info.value)
    # The same key again is no change, not an error.
    store.add('srv-1', keys[0].get_name(), keys[0].get_base64())
    store.add('srv-1', keys[1].get_name(), keys[1].get_base64(),
              replace=True)
    assert store.get('srv-1')['node'] == 'm-1'   # kept from the old pin
    assert store.check('srv-1', keys[1], 'm-1', policy='strict') is False
