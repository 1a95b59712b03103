"""A tacker-conductor lost in the middle of an operation, and the other one
finishing the work with the state Tacker's database keeps.

Two conductors, each with a driver state directory of its own, as on two
hosts. A master's heal runs; once its ``heal_end`` has begun, the
conductor running it is killed (its whole process group: the host is
gone). What Tacker 16's v1 API then does, and what this test holds it
to: the operation stays ``PROCESSING`` (nothing notices the lost
conductor); ``lab cancel`` (Tacker's cancel, allowed once ``[vnf_lcm]
operation_timeout`` passed since the operation began) makes it
``FAILED_TEMP``; Tacker refuses its retry (the error point of a cancelled
operation is 0 and the VNF is in ERROR), so the operator gives it up
(``lab fail``) and heals the same VNFC again. That heal lands on the
other conductor, which never saw the instance: it reads the pins, the
first master and the VRRP password from the instance's sealed metadata.
Afterwards the cluster is Ready, one master holds the VIP, every master
has the same VRRP password, every pin was verified against a console,
and there is one Kubernetes VIM.

One test per step (module_steps), on one lab.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab.openstack import conductor_operations

import module_steps
import tacker_checks
from lab_cli import LabCLI

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-lost'
k8s_mgmt = LabCLI(STATE_DIR, bridge='k8slabcl', tag='kcl', timeout=1800)
SUBNET = '10.254.254.0/24'


def _status():
    return json.loads(k8s_mgmt('status', '--json').stdout)


def _op(op_id):
    found = json.loads(k8s_mgmt('openstack', 'vnflcm', 'op', 'show', op_id,
                                '-f', 'json').stdout)
    return {k.replace(' ', '').lower(): v for k, v in found.items()}


def _running_heal_end(instance_id):
    """(conductor, pid) as soon as one of them began ``heal_end``: its
    log read directly, several times a second (``lab status`` takes
    seconds, and heal_end could end meanwhile)."""
    logs = {name: (conductor['pid'], conductor['log'])
            for name, conductor in tacker_checks.conductors(
                k8s_mgmt).items()}
    for _ in Poll(900, first=0.2, maximum=0.2):
        for name, (pid, log) in logs.items():
            if any(o['hook'] == 'heal_end' and
                   o['vnf_instance_id'] == instance_id
                   for o in conductor_operations.read_operations(log)):
                return name, pid
    raise AssertionError('no conductor began heal_end')


class Lost(module_steps.Ordered):
    """What the steps learn: the log marks before instantiate, the
    instance, the master healed, the conductor killed and the heal's
    operation."""
    marks = instance_id = master = victim = op_id = None


@contextlib.contextmanager
def _lab(assert_lab_clean):
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', 'complex', '--subnet', SUBNET,
                 '--own-control-plane', '--conductors', '2')
        yield Lost()


life, step = module_steps.fixtures(_lab)


def test_instantiate_on_two_conductors(step):
    step.marks = tacker_checks.log_marks(k8s_mgmt)
    step.instance_id = json.loads(k8s_mgmt('instantiate', '--json').stdout)[
        'vnf_instance_id']
    step.master = next(vm for vm in _status()['vms']
                       if vm['role'] == 'master')


def test_a_master_heal_whose_conductor_dies_is_cancelled_and_given_up(
        step):
    heal = subprocess.Popen(
        [sys.executable, '-m', 'k8s_mgmt', 'lab'] + k8s_mgmt.global_args
        + ['heal', '--vnfc', step.master['vnfc_id'], '--quiet'],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        step.victim, pid = _running_heal_end(step.instance_id)
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    finally:
        # The operator's client would wait for ever: stop it.
        heal.terminate()
        heal.wait(timeout=60)
    step.op_id = _status()['tacker']['last_op']['id']
    assert _op(step.op_id)['operationstate'] == 'PROCESSING'
    cancelled = json.loads(k8s_mgmt('cancel', '--json').stdout)
    assert cancelled['operation_state'] == 'FAILED_TEMP'
    refused = k8s_mgmt('retry', check=False)
    assert refused.returncode == 1
    assert 'Error point 0' in refused.stderr, refused.stderr
    k8s_mgmt('fail')
    assert _op(step.op_id)['operationstate'] == 'FAILED'


def test_the_same_master_healed_again_by_the_other_conductor(step):
    report = json.loads(k8s_mgmt('heal', '--vnfc', step.master['vnfc_id'],
                                 '--json').stdout)
    assert report['operation_state'] == 'COMPLETED'
    assert all(n['ready'] for n in report['cluster']['nodes'])
    status = _status()
    ran = tacker_checks.ran_by(k8s_mgmt, step.marks)
    survivor = [name for name in ran if name != step.victim]
    assert survivor and 'heal_end' in ran[survivor[0]]
    masters = [vm['server_id'] for vm in status['vms']
               if vm['role'] == 'master']
    assert len(masters) == 3
    tacker_checks.one_vip_and_verified_pins(k8s_mgmt, SUBNET, masters,
                                            step.instance_id)
    vims = json.loads(k8s_mgmt('openstack', 'vim', 'list', '-f',
                               'json').stdout)
    assert sorted(v['Type'] for v in vims) == ['kubernetes',
                                               'openstack'], vims


def test_terminate_after_the_lost_conductor(step):
    done = json.loads(k8s_mgmt('terminate', '--json').stdout)
    assert done['instantiation_state'] == 'NOT_INSTANTIATED'
