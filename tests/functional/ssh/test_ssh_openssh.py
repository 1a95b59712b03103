"""SSHSession against real OpenSSH sshd on 127.0.0.1 (key auth as root).

Skipped when /usr/sbin/sshd is missing or the tests do not run as root. The
daemon gets its own config, host key and authorized_keys in a temp dir and is
killed in teardown.
"""

import stat
import subprocess

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.ssh import client
from k8s_mgmt.ssh.command import Command
from tests.helpers import openssh

HOSTILE = ['$(reboot)', "it's", 'say "hi"', 'a;b', '*', 'l1\nl2',
           'ünïcödé ✓', '$HOME', '\\', '']

pytestmark = pytest.mark.skipif(not openssh.available(),
                                reason=openssh.SKIP_REASON)


@pytest.fixture
def sshd(tmp_path, fast_conf):
    marker = str(tmp_path / 'timed-out-command')
    with openssh.running_sshd(tmp_path) as server:
        target = client.SSHTarget(
            'openssh-1', '127.0.0.1', 'root',
            private_key=secrets.Secret(server.client_private),
            port=server.port, server_id='srv-openssh')
        try:
            yield {'target': target, 'dir': tmp_path,
                   'process': server.process, 'marker': marker}
        finally:
            openssh.kill_groups_of(marker)


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
