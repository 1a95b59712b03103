"""Waiting for an operation occurrence against the fake Tacker: each way
it ends, the deadline, and retry, rollback and fail of a FAILED_TEMP one
(whose old FAILED_TEMP a wait must not take for the new outcome)."""

import json
import time
import zipfile

import pytest

from k8s_mgmt_lab.tacker_api import op_occs
from k8s_mgmt_lab.tacker_api.errors import TackerApiError
from tests.unit.lab.test_tacker_api import tacker_of
from tests.unit.lab.fake_tacker import DRIVER_ERROR


@pytest.fixture
def tacker(fake):
    return tacker_of(fake)


@pytest.fixture
def instance(tacker, tmp_path):
    path = tmp_path / 'package.zip'
    with zipfile.ZipFile(path, 'w') as archive:
        archive.writestr('TOSCA-Metadata/TOSCA.meta', '')
    package = tacker.packages.onboard(str(path), deadline=5)
    return tacker.instances.create(package['vnfdId'])['id']


def _failed_temp(fake, tacker, instance):
    fake.outcome = ['PROCESSING', 'FAILED_TEMP']
    fake.error = DRIVER_ERROR
    op_id = tacker.instances.instantiate(instance, {'flavourId': 'simple'})
    with pytest.raises(TackerApiError):
        tacker.op_occs.wait(op_id, deadline=5)
    return op_id


def test_wait_returns_the_completed_occurrence(fake, tacker, instance):
    op_id = tacker.instances.instantiate(instance, {'flavourId': 'simple'})
    done = tacker.op_occs.wait(op_id, deadline=5)
    assert done['operationState'] == 'COMPLETED' and done['id'] == op_id
    # STARTING, PROCESSING, COMPLETED: three reads, then no more.
    assert fake.calls('GET')[-3:] == [
        ('GET', '/vnflcm/v1/vnf_lcm_op_occs/%s' % op_id)] * 3
    assert fake.calls('GET')[-4][1].startswith('/vnfpkgm/')


@pytest.mark.parametrize('end', ['FAILED_TEMP', 'FAILED', 'ROLLED_BACK'])
def test_every_other_end_is_one_line_with_tackers_detail(
        fake, tacker, instance, end):
    fake.outcome = ['PROCESSING', 'ROLLING_BACK', end]
    fake.error = DRIVER_ERROR
    op_id = tacker.instances.scale(instance, 'SCALE_OUT', 'worker_instance')
    with pytest.raises(TackerApiError) as caught:
        tacker.op_occs.wait(op_id, deadline=5)
    detail = ('k8s_mgmt.exceptions.NodesFailed: worker-2: join: '
              'kubeadm join exited 1')
    if end == 'ROLLED_BACK':
        detail = 'no detail given'      # only failures carry an error
    assert str(caught.value) == (
        'scale VNF instance %s (op occurrence %s): %s: %s'
        % (instance, op_id, end, detail))
    assert (caught.value.op_id, caught.value.state) == (op_id, end)
    assert caught.value.occurrence['operationState'] == end


def test_a_wait_past_its_deadline_says_where_the_operation_is(
        fake, tacker, instance):
    fake.outcome = ['PROCESSING'] * 100000
    op_id = tacker.instances.heal(instance)
    started = time.monotonic()
    with pytest.raises(TackerApiError) as caught:
        tacker.op_occs.wait(op_id, deadline=0.2)
    assert time.monotonic() - started < 4
    assert str(caught.value) == (
        'heal VNF instance %s (op occurrence %s): PROCESSING: still '
        'PROCESSING after 0.2 s' % (instance, op_id))


def test_retry_waits_past_the_old_failed_temp(fake, tacker, instance):
    op_id = _failed_temp(fake, tacker, instance)
    fake.after_retry = ['FAILED_TEMP', 'FAILED_TEMP', 'PROCESSING',
                        'COMPLETED']
    assert tacker.op_occs.retry(op_id) == op_id
    assert fake.calls('POST')[-1] == (
        'POST', '/vnflcm/v1/vnf_lcm_op_occs/%s/retry' % op_id)
    assert tacker.op_occs.wait(op_id, deadline=5)['operationState'] == (
        'COMPLETED')


def test_a_retry_that_fails_again_is_reported(fake, tacker, instance):
    op_id = _failed_temp(fake, tacker, instance)
    fake.after_retry = ['FAILED_TEMP', 'PROCESSING', 'FAILED_TEMP']
    fake.error = {'status': 500, 'detail': 'worker-2: join: again'}
    tacker.op_occs.retry(op_id)
    with pytest.raises(TackerApiError, match=r'FAILED_TEMP: worker-2: '
                                             r'join: again$'):
        tacker.op_occs.wait(op_id, deadline=5)


def test_a_retry_tacker_never_picks_up_ends_after_the_grace(
        fake, tacker, instance, monkeypatch):
    monkeypatch.setattr(op_occs, 'RESTART_GRACE', 0.1)
    op_id = _failed_temp(fake, tacker, instance)
    fake.after_retry = []               # FAILED_TEMP, as it was, for ever
    started = time.monotonic()
    tacker.op_occs.retry(op_id)
    with pytest.raises(TackerApiError, match='FAILED_TEMP: k8s_mgmt'):
        tacker.op_occs.wait(op_id, deadline=5)
    # The grace runs from the retry; the deadline (5 s) is not reached.
    assert 0.1 <= time.monotonic() - started < 4


def test_rollback_ends_rolled_back(fake, tacker, instance):
    op_id = _failed_temp(fake, tacker, instance)
    assert tacker.op_occs.rollback(op_id) == op_id
    done = tacker.op_occs.wait(op_id, deadline=5,
                               expect=op_occs.ROLLED_BACK)
    assert done['operationState'] == 'ROLLED_BACK'


def test_a_rollback_that_fails_is_reported(fake, tacker, instance):
    op_id = _failed_temp(fake, tacker, instance)
    fake.after_rollback = ['FAILED_TEMP', 'ROLLING_BACK', 'FAILED_TEMP']
    tacker.op_occs.rollback(op_id)
    with pytest.raises(TackerApiError, match=r'\(op occurrence %s\): '
                                             r'FAILED_TEMP: ' % op_id):
        tacker.op_occs.wait(op_id, deadline=5, expect=op_occs.ROLLED_BACK)


def test_fail_gives_the_failed_occurrence(fake, tacker, instance):
    op_id = _failed_temp(fake, tacker, instance)
    failed = tacker.op_occs.fail(op_id)
    assert failed['operationState'] == 'FAILED' and failed['id'] == op_id


def test_cancel_marks_an_operation_no_conductor_runs_failed_temp(
        fake, tacker, instance):
    # Its conductor died: the occurrence stays PROCESSING.
    fake.outcome = ['PROCESSING']
    op_id = tacker.instances.instantiate(instance, {'flavourId': 'simple'})
    assert tacker.op_occs.show(op_id)['operationState'] == 'PROCESSING'
    cancelled = tacker.op_occs.cancel(op_id)
    assert cancelled['operationState'] == 'FAILED_TEMP'
    method, path, _query, _headers, body = fake.requests[-2]
    assert (method, path) == (
        'POST', '/vnflcm/v1/vnf_lcm_op_occs/%s/cancel' % op_id)
    assert json.loads(body) == {'cancelMode': 'FORCEFUL'}
    with pytest.raises(TackerApiError, match='HTTP 409'):
        tacker.op_occs.cancel(op_id)


def test_retry_of_a_completed_operation_is_tackers_409(
        fake, tacker, instance):
    op_id = tacker.instances.terminate(instance, 'GRACEFUL', 10)
    tacker.op_occs.wait(op_id, deadline=5)
    with pytest.raises(TackerApiError) as caught:
        tacker.op_occs.retry(op_id)
    assert str(caught.value) == (
        'retry (op occurrence %s): HTTP 409: Cannot proceed with '
        'operation_state COMPLETED' % op_id)


def test_an_unknown_occurrence_is_tackers_404(tacker):
    with pytest.raises(TackerApiError) as caught:
        tacker.op_occs.wait('gone', deadline=5)
    assert str(caught.value) == (
        'wait (op occurrence gone): HTTP 404: '
        'VnfLcmOpOcc gone could not be found.')


def test_a_patch_not_recorded_yet_is_waited_for(fake, tacker, instance):
    # Tacker 16's v1 PATCH answers 202 with the occurrence's address before
    # its conductor records it: a 404 is "not yet" for a while...
    # (and a 500 while the driver has not rewritten what Tacker recorded)
    fake.unrecorded_reads, fake.unreadable_once = 3, True
    op_id = tacker.instances.update(instance, {'metadata': {'a': 'b'}})
    done = tacker.op_occs.wait(op_id, deadline=5, unrecorded=5)
    assert (done['operation'], done['operationState']) == ('MODIFY_INFO',
                                                           'COMPLETED')
    # ... and at once an error for any other wait.
    fake.unrecorded_reads, fake.unreadable_once = 1, False
    op_id = tacker.instances.update(instance, {'metadata': {'a': 'c'}})
    with pytest.raises(TackerApiError) as caught:
        tacker.op_occs.wait(op_id, deadline=5)
    assert caught.value.status == 404
