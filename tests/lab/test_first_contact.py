"""First contact on the lab: host keys verified against Nova console output.

Real parts: each lab VM's own sshd and host key, the lab's Keystone and
Nova APIs (os-getConsoleOutput carries ssh-keygen's fingerprint lines of the
VM's real host key files), the driver's SSH sessions, the default
host_key_policy (console). The lying console is a file the test writes
beside the lab's cloud state, read by the lab's Nova in place of the VM's.
"""

import json
import logging
import os
import types

import paramiko
import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import polling
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import status as lab_status
from k8s_mgmt.ssh import hostkeys

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-firstcontact'
SETTINGS = manager.LabSettings(state_dir=STATE_DIR, subnet='10.254.211.0/24',
                               bridge='k8slabfc', tag='k8f', compute_hosts=2)


@pytest.fixture
def lab(make_lab):
    return make_lab(SETTINGS)


def _lying_console(server_id):
    other = paramiko.ECDSAKey.generate()
    folder = os.path.join(STATE_DIR, 'console')
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, server_id)
    with open(path, 'w') as handle:
        handle.write('ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----\n'
                     'ec2: 256 %s root@impostor (ECDSA)\n'
                     'ec2: -----END SSH HOST KEY FINGERPRINTS-----\n'
                     % hostkeys.fingerprint(other))
    return path, hostkeys.fingerprint(other)


def _pins():
    record = manager.read_record(SETTINGS)
    path = os.path.join(lcm.driver_state_dir(SETTINGS),
                        lcm.instance_id(SETTINGS, record), 'host_keys.json')
    with open(path) as handle:
        return json.load(handle)['keys']


def _sshd_log(lab, server_id, until=None, deadline=10.0):
    """The VM's sshd log; with ``until``, read again (with backoff) until it
    holds that text or ``deadline`` seconds pass: sshd logs a connection's
    end when its child notices it, which may be after the client moved on.
    The lab's own boot probe (a bare TCP connect) is in it too."""
    for _ in polling.Poll(deadline, first=0.05, maximum=1.0):
        log = lab.vms.exec(server_id, ['cat', '/run/sshd.log']).stdout
        if until is None or until in log:
            break
    return log


class _LateLog(object):
    """A lab whose sshd logs the refused connection only at the third
    read, as the sshd child that noticed the client's close late did."""

    def __init__(self):
        self.reads = 0
        self.vms = self

    def exec(self, server_id, argv):
        self.reads += 1
        line = 'Connection closed by 10.0.0.1 port 4 [preauth]\n'
        return types.SimpleNamespace(stdout=line if self.reads >= 3 else '')


def test_the_sshd_log_is_read_until_the_refusal_is_in_it():
    """The cause of this module's flake (a clean-clone CI run): the test
    read the sshd log once, before sshd had logged the refused connection.
    Reproduced deterministically by a log that has the line only at the
    third read; _sshd_log waits for it (a single read would miss it)."""
    lab = _LateLog()
    assert '[preauth]' in _sshd_log(lab, 'srv', until='[preauth]')
    assert lab.reads == 3


def test_console_verified_pins_and_a_lying_console_is_refused(lab, caplog):
    """Flaked once in a clean-clone CI run: the sshd log was read before
    sshd had logged the refused connection ([preauth] missing); it is now
    polled for the line (see test_the_sshd_log_is_read_until_the_refusal_
    is_in_it)."""
    caplog.set_level(logging.INFO)
    record = lab.up('simple', workers=1)
    topology = lab_status.read_topology(record)
    [master], [worker] = topology.masters, topology.workers
    lie, lying_fp = _lying_console(worker.server_id)

    with pytest.raises(exceptions.MgmtDriverError) as info:
        lcm.instantiate(SETTINGS)
    text = str(info.value)
    assert 'possible man-in-the-middle' in text
    assert worker.server_id in text and worker.name in text
    assert lying_fp in text
    [real_fp] = lab.vms.host_key_fingerprints(worker.server_id)
    assert real_fp in text
    # Refused in the handshake: the worker's sshd saw a connection end
    # before authentication, and never a password.
    log = _sshd_log(lab, worker.server_id, until='[preauth]')
    assert '[preauth]' in log and 'password' not in log.lower(), log
    pins = _pins()
    assert worker.server_id not in pins
    assert pins[master.server_id]['verified'] == 'console'

    os.unlink(lie)
    caplog.clear()
    lcm.instantiate(SETTINGS)
    pins = _pins()
    assert sorted(pins) == sorted([master.server_id, worker.server_id])
    for node in (master, worker):
        pin = pins[node.server_id]
        assert pin['verified'] == 'console'
        assert [pin['fingerprint']] == lab.vms.host_key_fingerprints(
            node.server_id)
    assert ('%s: pinned host key %s of server %s, verified against its '
            'console output' % (worker.name, real_fp, worker.server_id)
            in caplog.text)
    assert 'unverified' not in caplog.text
    assert 'Accepted password for ubuntu' in _sshd_log(
        lab, worker.server_id, until='Accepted password')

    # "lab status" reaches the VMs the same way, with its own pin file.
    report = lab_status.lab_status(SETTINGS)
    assert [vm['ssh_ok'] for vm in report['vms']] == [True, True]
    with open(os.path.join(STATE_DIR, 'host_keys.json')) as handle:
        status_pins = json.load(handle)['keys']
    assert {p['verified'] for p in status_pins.values()} == {'console'}
