"""Reading cloud-init's host key blocks out of a VM's console output."""

import base64
import hashlib
import subprocess

import paramiko
import pytest

from k8s_mgmt.ssh import console_keys
from k8s_mgmt.ssh import hostkeys


@pytest.fixture(scope='module')
def keys():
    return {'ecdsa': paramiko.ECDSAKey.generate(),
            'rsa': paramiko.RSAKey.generate(1024)}


@pytest.fixture(scope='module')
def ed25519(tmp_path_factory):
    """A real ed25519 key and ssh-keygen's own fingerprint line of it."""
    path = tmp_path_factory.mktemp('k') / 'ssh_host_ed25519_key'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C',
                    'root@master-0', '-f', str(path)], check=True)
    line = subprocess.run(['ssh-keygen', '-l', '-f', str(path) + '.pub'],
                          check=True, capture_output=True,
                          text=True).stdout.strip()
    with open(str(path) + '.pub') as f:
        key_type, blob = f.read().split()[:2]
    key = paramiko.Ed25519Key(data=base64.b64decode(blob))
    return key, line, '%s %s root@master-0' % (key_type, blob)


def _tagged(lines, tag='<14>Nov 23 11:02:03 ec2: '):
    return '\n'.join(tag + line for line in lines) + '\n'


def _block(title, lines):
    return (['-----BEGIN %s-----' % title] + list(lines) +
            ['-----END %s-----' % title])


def test_ssh_keygen_lines_behind_a_syslog_prefix(ed25519, keys):
    key, line, _ = ed25519
    assert line.endswith('(ED25519)')  # what ssh-keygen -l really prints
    text = ('[    1.0] booting\r\n' + _tagged(
        ['', '#' * 61] + _block('SSH HOST KEY FINGERPRINTS', [line]) +
        ['#' * 61]) + 'Cloud-init v. 24.1 finished\n')
    found = console_keys.parse_console(text)
    assert found.sha256 == {hostkeys.fingerprint(key)}
    assert found.matches(key)
    assert not found.matches(keys['ecdsa'])


def test_keys_block_alone_is_enough(ed25519, keys):
    key, _, pub = ed25519
    found = console_keys.parse_console(_tagged(
        _block('SSH HOST KEY KEYS', [pub])))
    assert found.found and found.matches(key)
    assert not found.matches(keys['rsa'])
    assert found.listed() == hostkeys.fingerprint(key)


def test_kernel_lines_inside_the_block_are_skipped(keys):
    fp = hostkeys.fingerprint(keys['ecdsa'])
    text = '\n'.join(_block('SSH HOST KEY FINGERPRINTS', [
        '[   12.5] random: crng init done',
        'ec2: 256 %s root@w (ECDSA)' % fp,
        '[   12.6] EXT4-fs (vda1): resized filesystem']))
    found = console_keys.parse_console(text)
    assert found.sha256 == {fp}


def test_block_still_being_printed_counts_as_nothing(keys):
    fp = hostkeys.fingerprint(keys['ecdsa'])
    text = '\n'.join(['-----BEGIN SSH HOST KEY FINGERPRINTS-----',
                      '256 %s root@w (ECDSA)' % fp])
    assert not console_keys.parse_console(text).found
    assert not console_keys.parse_console('').found
    assert not console_keys.parse_console(None).found


def test_last_complete_block_wins(keys):
    old = hostkeys.fingerprint(keys['rsa'])
    new = hostkeys.fingerprint(keys['ecdsa'])
    text = '\n'.join(
        _block('SSH HOST KEY FINGERPRINTS', ['3072 %s r@h (RSA)' % old]) +
        ['reboot'] +
        _block('SSH HOST KEY FINGERPRINTS', ['256 %s r@h (ECDSA)' % new]))
    found = console_keys.parse_console(text)
    assert found.sha256 == {new}
    assert not found.matches(keys['rsa'])


def test_md5_fingerprints_of_old_images(keys):
    digest = hashlib.md5(keys['rsa'].asbytes()).hexdigest()
    md5 = ':'.join(digest[i:i + 2] for i in range(0, 32, 2))
    text = '\n'.join(_block('SSH HOST KEY FINGERPRINTS',
                            ['1024 %s root@old (RSA)' % md5]))
    found = console_keys.parse_console(text)
    assert found.md5 == {md5}
    assert found.matches(keys['rsa']) and not found.matches(keys['ecdsa'])


def test_a_fingerprint_outside_any_block_is_ignored(keys):
    fp = hostkeys.fingerprint(keys['ecdsa'])
    text = 'someone typed 256 %s root@w (ECDSA)\n' % fp
    assert not console_keys.parse_console(text).found
