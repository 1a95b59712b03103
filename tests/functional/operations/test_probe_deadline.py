"""``[k8s_mgmt] probe_deadline``: how long a heal's probe gives a node to
answer SSH before it counts as dead. The node here is a real listener on
loopback port 22 that accepts the TCP connection and never sends the SSH
banner (a VM whose kernel answers and whose sshd is gone)."""

import dataclasses
import logging
import socket
import threading

from oslo_config import fixture as config_fixture
import pytest

from k8s_mgmt import conf
from k8s_mgmt.engine import run as run_mod

import op_helpers

ADDRESS = '127.0.0.77'


@pytest.fixture
def silent_sshd():
    listener = socket.create_server((ADDRESS, 22))
    accepted = []

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)  # held open, never answered
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield
    listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
    listener.close()
    for conn in accepted:
        conn.close()
    thread.join(5)


@pytest.fixture
def opts():
    fix = config_fixture.Config(conf.CONF)
    fix.setUp()
    fix.config(group='k8s_mgmt', host_key_policy='tofu', probe_deadline=2.0,
               connect_timeout=10.0)
    yield
    fix.cleanUp()


def test_a_node_that_never_answers_counts_dead_at_the_probe_deadline(
        silent_sshd, opts, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(run_mod.state_mod, 'InstanceState',
                        lambda _id: op_helpers.PinsOnlyState(tmp_path))
    params = op_helpers.sample_params('complex')
    ctx = op_helpers.context(params, operation='heal_vnfc',
                             hook='heal_start')
    node = dataclasses.replace(op_helpers.node('worker', 1), ssh_ip=ADDRESS)
    caplog.set_level(logging.WARNING, logger='k8s_mgmt')
    with run_mod.OperationRun(ctx, 'heal_start test') as op:
        assert op.probe([node]) == set()
    # The probe gave up at probe_deadline (2 s), not at connect_timeout
    # (10 s) nor at the connect deadline (300 s).
    [warning] = [r.getMessage() for r in caplog.records
                 if 'does not answer SSH' in r.getMessage()]
    assert 'no SSH connection to %s:22 within 2 s' % ADDRESS in warning
