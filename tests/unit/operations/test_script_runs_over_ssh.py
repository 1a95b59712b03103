"""Script runs over a real SSH server (paramiko's server side on loopback):
secrets reach the script on stdin, never its argv nor the logs; a wrong
password on one node fails at once, naming that node."""

import dataclasses
import logging
import os
import stat
import time

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt import ssh
from k8s_mgmt.engine import sessions as sessions_mod
from k8s_mgmt.engine import script_output
from k8s_mgmt.engine import scripts

import op_helpers

TOKEN = secrets.Secret('zyxwvu.9876543210fedcba')
RECORDER = '''#!/bin/bash
# Stands in for install_k8s_cluster.sh: records what it was given.
printf '%s\\n' "$@" > "$(dirname "$0")/argv"
cat > "$(dirname "$0")/stdin"
echo '{"token": "abcdef.0123456789abcdef", "ca_cert_hash": "sha256:00"}'
'''


@pytest.fixture
def servers():
    module = op_helpers.ssh_server_module()
    started = []

    def start(password):
        server = module.SSHTestServer(users={'ubuntu': password})
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def test_join_secrets_go_on_stdin_not_argv_nor_logs(servers, tmp_path,
                                                    caplog):
    caplog.set_level(logging.DEBUG)
    server = servers('ubuntu')
    script = tmp_path / scripts.INSTALL
    script.write_text(RECORDER)
    script.chmod(0o700)
    topo = op_helpers.topology(1, 1)
    params = op_helpers.sample_params('simple')
    worker = topo.workers[0]
    ends = scripts.endpoints(topo, params, topo.masters[0])
    join = script_output.JoinData(TOKEN, 'sha256:' + 'a' * 64)
    call = scripts.join_call(worker, params, ends, join)
    target = ssh.SSHTarget(name=worker.name, host='127.0.0.1',
                           port=server.port, username='ubuntu',
                           password='ubuntu', server_id=worker.server_id)
    store = ssh.HostKeyStore(str(tmp_path / 'pins.json'))
    with ssh.SSHSession(target, store=store) as session:
        result = scripts.run_call(session, call, remote_dir=str(tmp_path))
    assert result.ok
    argv = (tmp_path / 'argv').read_text().splitlines()
    assert argv[0] == 'join-worker' and argv[-2:] == ['-s', '-']
    assert TOKEN.reveal() not in ' '.join(argv)
    assert (tmp_path / 'stdin').read_text() == 'token=%s\n' % TOKEN.reveal()
    assert TOKEN.reveal() not in caplog.text
    assert 'join-worker' in caplog.text      # the command was logged, masked


def test_script_without_json_output_is_named_not_shown():
    result = ssh.Result(0, 'token: abcdef.0123456789abcdef\n', '', 0.1)
    with pytest.raises(exceptions.SSHError) as err:
        script_output.json_object('master-1', 'print-join', result.stdout)
    assert 'master-1: print-join' in str(err.value)
    assert 'abcdef.0123456789abcdef' not in str(err.value)


def test_wrong_password_on_one_worker_fails_fast_naming_it(servers, tmp_path,
                                                           monkeypatch):
    good = [servers('ubuntu'), servers('ubuntu')]
    bad = servers('another-password')
    topo = op_helpers.topology(1, 2)
    params = op_helpers.sample_params('simple')
    ports = {'master-1': good[0].port, 'worker-1': good[1].port,
             'worker-2': bad.port}
    sessions = sessions_mod.Sessions(
        'instantiate test', ssh.HostKeyStore(str(tmp_path / 'pins.json')),
        connect_deadline=60)
    original = sessions_mod.target_for

    def local_target(node, params):
        return dataclasses.replace(original(node, params), host='127.0.0.1',
                                   port=ports[node.name])
    # The topology's addresses are lab addresses; these servers are local.
    monkeypatch.setattr(sessions_mod, 'target_for', local_target)
    started = time.monotonic()
    try:
        with pytest.raises(exceptions.NodesFailed) as err:
            sessions.connect_all(topo.masters + topo.workers, params)
    finally:
        sessions.close_all()
    assert time.monotonic() - started < 10
    assert [name for name, _e in err.value.failures] == ['worker-2']
    assert 'authentication failed' in str(err.value)
    assert 'another-password' not in str(err.value)
    assert len(bad.auth_attempts) == 1        # not retried
    pins = stat.S_IMODE(os.stat(tmp_path / 'pins.json').st_mode)
    assert pins == 0o600


def test_what_a_script_skipped_reaches_the_operations_log(tmp_path, caplog):
    """A setting the node cannot take (a container's kernel) is no
    failure, but the operator sees it in the operation's log."""
    caplog.set_level(logging.INFO)
    topo = op_helpers.topology(1, 0)
    params = op_helpers.sample_params('simple')
    master = topo.masters[0]
    ends = scripts.endpoints(topo, params, master)
    call = scripts.prepare_call(master, params, ends)
    stderr = ('install_k8s_cluster.sh: ==> kernel modules and sysctls\n'
              'install_k8s_cluster.sh: skipped: sysctl net.ipv4.ip_forward'
              ' = 1: read-only here (it is 0)\n'
              'install_k8s_cluster.sh: warning: debian:13 is not a tested '
              'OS\nsome tool: skipped: not ours\n')

    class Session:
        def run(self, command, step, stdin=None, on_line=None):
            return ssh.Result(0, '', stderr, 0.1)

    scripts.run_call(Session(), call)
    warned = [r.getMessage() for r in caplog.records
              if r.levelno == logging.WARNING]
    assert warned == [
        '%s prepare: install_k8s_cluster.sh: skipped: sysctl '
        'net.ipv4.ip_forward = 1: read-only here (it is 0)' % master.name,
        '%s prepare: install_k8s_cluster.sh: warning: debian:13 is not a '
        'tested OS' % master.name]
