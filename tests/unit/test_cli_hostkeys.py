"""``k8s-mgmt hostkeys``: list, add and remove pins of a real pin file."""

import json
import os
import subprocess

import paramiko
import pytest
from oslo_config import fixture as config_fixture

from k8s_mgmt.cli import main
from k8s_mgmt import conf
from k8s_mgmt.ssh import hostkeys


@pytest.fixture
def pins(tmp_path):
    return str(tmp_path / 'pins' / 'host_keys.json')


@pytest.fixture(scope='module')
def pubkey(tmp_path_factory):
    path = tmp_path_factory.mktemp('keys') / 'ssh_host_ed25519_key'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C',
                    'root@vm', '-f', str(path)], check=True)
    return str(path) + '.pub'


def _run(capsys, *argv):
    status = main.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _fingerprint(pub):
    line = subprocess.run(['ssh-keygen', '-l', '-f', pub], check=True,
                          capture_output=True, text=True).stdout
    return line.split()[1]


def test_add_list_remove(capsys, pins, pubkey):
    fp = _fingerprint(pubkey)
    status, out, _ = _run(capsys, 'hostkeys', 'add', 'srv-1', '--key-file',
                          pubkey, '--node', 'master-0', '--address',
                          '10.0.0.5:22', '--file', pins)
    assert status == 0
    assert out == 'pinned ssh-ed25519 %s for server srv-1 in %s\n' % (
        fp, pins)
    status, out, _ = _run(capsys, 'hostkeys', 'list', '--file', pins)
    header, row = out.splitlines()
    assert header.split() == ['SERVER', 'ID', 'NODE', 'ADDRESS', 'TYPE',
                              'FINGERPRINT', 'VERIFIED', 'PINNED', 'AT']
    assert row.split()[:6] == ['srv-1', 'master-0', '10.0.0.5:22',
                               'ssh-ed25519', fp, 'manual']
    status, out, _ = _run(capsys, 'hostkeys', 'list', '--json', '--file',
                          pins)
    [entry] = json.loads(out)
    assert entry['server_id'] == 'srv-1' and entry['fingerprint'] == fp
    with open(pubkey) as f:
        assert entry['key'] == f.read().split()[1]
    status, out, err = _run(capsys, 'hostkeys', 'remove', 'srv-1',
                            '--file', pins)
    assert (status, err) == (0, '')
    assert out == 'removed 1 pin(s) from %s\n' % pins
    assert _run(capsys, 'hostkeys', 'list', '--file', pins)[1] == \
        'no pins in %s\n' % pins


def test_replacing_a_pin_needs_replace(capsys, pins, pubkey):
    other = paramiko.ECDSAKey.generate()
    key_line = '%s %s comment' % (other.get_name(), other.get_base64())
    assert _run(capsys, 'hostkeys', 'add', 'srv-1', '--key-file', pubkey,
                '--file', pins)[0] == 0
    status, _, err = _run(capsys, 'hostkeys', 'add', 'srv-1', '--key',
                          key_line, '--file', pins)
    assert status == 1
    assert err.startswith('k8s-mgmt: error: %s already pins another key '
                          'for server srv-1 (ssh-ed25519 ' % pins)
    assert '--replace' in err and len(err.splitlines()) == 1
    assert _run(capsys, 'hostkeys', 'add', 'srv-1', '--key', key_line,
                '--replace', '--file', pins)[0] == 0
    store = hostkeys.HostKeyStore(pins)
    assert store.check('srv-1', other, 'n', policy='strict') is False


@pytest.mark.parametrize('key, problem', [
    ('ssh-ed25519', 'expected "TYPE BASE64 [COMMENT]"'),
    ('ssh-ed25519 not-base64!', 'the key is not base64'),
    ('ssh-foo AAAAB3NzaC1yc2E=', 'not a usable ssh-foo public key'),
    ('', 'expected one public key line'),
])
def test_bad_keys_are_one_line_errors(capsys, pins, key, problem):
    status, _, err = _run(capsys, 'hostkeys', 'add', 'srv-1', '--key', key,
                          '--file', pins)
    assert status == 1
    assert err.startswith('k8s-mgmt: error: --key: ' + problem), err
    assert len(err.splitlines()) == 1
    assert not os.path.exists(pins)


def test_key_data_of_another_type_is_refused(capsys, pins):
    rsa = paramiko.RSAKey.generate(1024)
    status, _, err = _run(capsys, 'hostkeys', 'add', 'srv-1', '--key',
                          'ssh-ed25519 ' + rsa.get_base64(), '--file', pins)
    assert status == 1
    assert err.startswith('k8s-mgmt: error: --key: not a usable '
                          'ssh-ed25519 public key: ')
    assert len(err.splitlines()) == 1


def test_remove_names_servers_that_were_not_pinned(capsys, pins, pubkey):
    _run(capsys, 'hostkeys', 'add', 'srv-1', '--key-file', pubkey, '--file',
         pins)
    status, out, err = _run(capsys, 'hostkeys', 'remove', 'srv-1', 'srv-x',
                            '--file', pins)
    assert status == 1
    assert out == 'removed 1 pin(s) from %s\n' % pins
    assert err == 'k8s-mgmt: error: not pinned in %s: srv-x\n' % pins


def test_damaged_file_is_a_one_line_error(capsys, pins):
    os.makedirs(os.path.dirname(pins))
    with open(pins, 'w') as f:
        f.write('{"keys": []}')
    status, _, err = _run(capsys, 'hostkeys', 'list', '--file', pins)
    assert status == 1
    assert err == ('k8s-mgmt: error: host key file %s has "keys" of type '
                   'list; it must be an object of server id -> pin; fix it '
                   'or move it away (every pin in it is then lost: first '
                   'contact is verified again)\n' % pins)


def test_instance_and_configured_default(capsys, tmp_path, pubkey):
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    try:
        fixture.config(group='k8s_mgmt', state_dir=str(tmp_path / 'state'))
        _run(capsys, 'hostkeys', 'add', 'srv-1', '--key-file', pubkey,
             '--instance', 'vnf-1')
        assert os.path.exists(tmp_path / 'state' / 'vnf-1' /
                              'host_keys.json')
        status, _, err = _run(capsys, 'hostkeys', 'list', '--instance',
                              '../etc')
        assert status == 1 and err.startswith('k8s-mgmt: error: '
                                              '--instance: unusable')
        _run(capsys, 'hostkeys', 'add', 'srv-2', '--key-file', pubkey)
        assert hostkeys.HostKeyStore(
            str(tmp_path / 'state' / 'host_keys.json')).get('srv-2')
    finally:
        fixture.cleanUp()


def test_config_file_selects_the_pin_file(capsys, tmp_path, pubkey):
    config = tmp_path / 'tacker.conf'
    pin_file = tmp_path / 'shared_pins.json'
    config.write_text('[DEFAULT]\ndebug = False\n[k8s_mgmt]\n'
                      'host_key_file = %s\n' % pin_file)
    try:
        status, out, _ = _run(capsys, 'hostkeys', 'add', 'srv-1',
                              '--key-file', pubkey, '--config-file',
                              str(config))
        assert status == 0 and str(pin_file) in out
        assert hostkeys.HostKeyStore(str(pin_file)).get('srv-1')
    finally:
        conf.CONF.reset()
        conf.CONF.clear()
