"""SSHSession against real OpenSSH sshd on 127.0.0.1 (key auth as root).

Skipped when /usr/sbin/sshd is missing or the tests do not run as root. The
daemon gets its own config, host key and authorized_keys in a temp dir and is
killed in teardown.
"""

import os
import signal
import stat
import subprocess

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from k8s_mgmt import exceptions
from k8s_mgmt import polling
from k8s_mgmt import secrets
from k8s_mgmt.ssh import client
from k8s_mgmt.ssh.command import Command

import ssh_test_server

SSHD = '/usr/sbin/sshd'
HOSTILE = ['$(reboot)', "it's", 'say "hi"', 'a;b', '*', 'l1\nl2',
           'ünïcödé ✓', '$HOME', '\\', '']

pytestmark = pytest.mark.skipif(
    not os.path.exists(SSHD) or os.geteuid() != 0,
    reason='needs OpenSSH sshd (apt install openssh-server) and root')


def _ed25519():
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH,
        serialization.PublicFormat.OpenSSH).decode()
    return private, public


def _write(path, text, mode):
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode),
              'w') as f:
        f.write(text)


def _children(pid):
    try:
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            return f.read().split()
    except OSError:
        return []


def _wait_for_no_children(pid, deadline=10.0):
    # A per-connection sshd child outliving the listener would be reparented
    # to PID 1, which in this sandbox never reaps it: let the listener reap
    # its children (they exit once the client closed) before stopping it.
    _wait_until(lambda: not _children(pid), deadline)


def _processes_with(text):
    found = []
    for pid in os.listdir('/proc'):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                if text.encode() in f.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def _wait_until(predicate, deadline=10.0):
    poll = polling.Poll(deadline, first=0.01, maximum=0.5)
    return any(predicate() for _ in poll)


@pytest.fixture
def sshd(tmp_path, fast_conf):
    # sshd refuses to start without its privilege separation directory.
    os.makedirs('/run/sshd', mode=0o755, exist_ok=True)
    host_private, host_public = _ed25519()
    client_private, client_public = _ed25519()
    _write(tmp_path / 'host_key', host_private, 0o600)
    _write(tmp_path / 'host_key.pub', host_public + '\n', 0o644)
    _write(tmp_path / 'authorized_keys', client_public + '\n', 0o600)
    port = ssh_test_server.free_port()
    config = '\n'.join([
        'Port %d' % port, 'ListenAddress 127.0.0.1',
        'HostKey %s' % (tmp_path / 'host_key'),
        'PidFile %s' % (tmp_path / 'sshd.pid'),
        'AuthorizedKeysFile %s' % (tmp_path / 'authorized_keys'),
        'PermitRootLogin prohibit-password', 'PasswordAuthentication no',
        'KbdInteractiveAuthentication no', 'UsePAM no', 'StrictModes no',
        'Subsystem sftp internal-sftp', ''])
    _write(tmp_path / 'sshd_config', config, 0o600)
    process = subprocess.Popen(
        [SSHD, '-D', '-e', '-f', str(tmp_path / 'sshd_config')],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / 'sshd.log', 'wb'))
    target = client.SSHTarget('openssh-1', '127.0.0.1', 'root',
                              private_key=secrets.Secret(client_private),
                              port=port, server_id='srv-openssh')
    marker = str(tmp_path / 'timed-out-command')
    yield {'target': target, 'dir': tmp_path, 'process': process,
           'marker': marker}
    for pid in _processes_with(marker):
        try:
            group = os.getpgid(int(pid))
            if group != os.getpgid(0):
                os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _wait_for_no_children(process.pid)
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_openssh_end_to_end(sshd, pin_store):
    work = sshd['dir'] / 'work'
    work.mkdir()
    # The session's own connect retry waits for sshd to start listening.
    with client.SSHSession(sshd['target'], store=pin_store,
                           connect_deadline=20) as session:
        assert session.run(Command('id', '-u')).stdout == '0\n'
        echoed = session.run(Command('printf', '%s\\0', *HOSTILE)).stdout
        assert echoed.split('\0')[:-1] == HOSTILE
        assert session.run(Command('cat'), stdin=b'via stdin').stdout == \
            'via stdin'
        warn = session.run(Command('sh', '-c', 'echo w >&2'))
        assert (warn.status, warn.stderr) == (0, 'w\n')
        with pytest.raises(exceptions.RemoteCommandError) as info:
            session.run(Command('sh', '-c', 'echo bad >&2; exit 4'),
                        step='check')
        assert 'openssh-1: check: exit status 4' in str(info.value)
        assert 'bad' in str(info.value)
        with pytest.raises(exceptions.CommandTimeout):
            session.run(Command('sh', '-c', 'sleep 30; touch "$1"', 'sh',
                                sshd['marker']), timeout=0.5)
        # The channel is closed and the connection still works. (sshd
        # refuses the "signal" request for root logins, so the command
        # itself is ended by the fixture.)
        assert session.run(Command('true')).status == 0
        session.put(b'#!/bin/sh\necho from sftp\n', str(work / 'x.sh'),
                    mode=0o750)
        assert session.run(Command(str(work / 'x.sh'))).stdout == \
            'from sftp\n'
    assert stat.S_IMODE((work / 'x.sh').stat().st_mode) == 0o750
    assert [p.name for p in work.iterdir()] == ['x.sh']
    # Our pin uses the same fingerprint format as OpenSSH's own tools.
    keygen = subprocess.run(
        ['ssh-keygen', '-l', '-E', 'sha256', '-f',
         str(sshd['dir'] / 'host_key.pub')],
        capture_output=True, text=True, check=True)
    assert pin_store.get('srv-openssh')['fingerprint'] == \
        keygen.stdout.split()[1]
