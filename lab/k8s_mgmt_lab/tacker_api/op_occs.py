"""Operation occurrences (``/vnflcm/v1/vnf_lcm_op_occs``): what an LCM
call started, waited for until it ends, and the operator's three ways out
of FAILED_TEMP: retry, rollback (instantiate and scale out only) and fail.

An occurrence moves STARTING, PROCESSING, then ends COMPLETED or
FAILED_TEMP; from FAILED_TEMP a retry goes back to PROCESSING, a rollback
to ROLLING_BACK then ROLLED_BACK (or FAILED_TEMP again), a fail to FAILED.
"""

import time

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab.tacker_api.errors import occurrence_detail
from k8s_mgmt_lab.tacker_api.errors import TackerApiError
from k8s_mgmt_lab.tacker_api.rest import op_id_from

PATH = 'vnflcm/%s/vnf_lcm_op_occs'
COMPLETED = 'COMPLETED'
FAILED_TEMP = 'FAILED_TEMP'
FAILED = 'FAILED'
ROLLED_BACK = 'ROLLED_BACK'
TERMINAL = (COMPLETED, FAILED_TEMP, FAILED, ROLLED_BACK)
# Tacker answers a retry or rollback before its conductor leaves
# FAILED_TEMP, and keeps times in whole seconds: for this long a wait
# takes the FAILED_TEMP it started from for the old one.
RESTART_GRACE = 10.0


class OpOccs(object):

    def __init__(self, rest, first=0.5, maximum=5.0, clock=time.monotonic,
                 api='v1'):
        self.rest = rest
        self.path = PATH % api
        # The backoff of a wait, in seconds.
        self.first = first
        self.maximum = maximum
        self._clock = clock
        # op id -> (stateEnteredTime of the FAILED_TEMP a retry or
        # rollback left, when it was asked).
        self._restarted = {}

    def show(self, op_id, operation='show'):
        return self.rest.json(operation, 'GET', self._of(op_id),
                              op_id=op_id)

    def _of(self, op_id, verb=None):
        return '/'.join([self.path, op_id] + ([verb] if verb else []))

    def list(self, filter=None):
        """Every occurrence (``all_records``), filtered by a Tacker filter
        expression such as ``(eq,vnfInstanceId,ID)`` when one is given."""
        return self.rest.all_records('list op occurrences', self.path,
                                     filter)

    def wait(self, op_id, deadline, expect=COMPLETED, unrecorded=0.0):
        """The occurrence once it ends in ``expect`` (ROLLED_BACK after a
        rollback), within ``deadline`` seconds; TackerApiError with the
        state and Tacker's ``error.detail`` when it ends otherwise.
        ``unrecorded``: for how many seconds a 404 means the occurrence is
        not recorded yet (Tacker 16's v1 PATCH answers 202 with the
        occurrence's address before its conductor records it), and a 500
        of Tacker's JSONDecodeError that the driver has not made it
        readable yet (k8s_mgmt.tacker_modify_info: its first hook rewrites
        what Tacker recorded, a moment after)."""
        poll = Poll(deadline, first=self.first, maximum=self.maximum)
        occurrence = {}
        began = self._clock()
        for _ in poll:
            try:
                occurrence = self.show(op_id, 'wait')
            except TackerApiError as err:
                if _not_yet(err) and self._clock() - began < unrecorded:
                    continue
                raise
            state = occurrence.get('operationState')
            stale = self._stale(op_id, occurrence)
            if state in TERMINAL and not stale:
                if state == expect:
                    return occurrence
                raise TackerApiError(
                    _operation(occurrence), occurrence_detail(occurrence),
                    op_id=op_id, state=state, occurrence=occurrence)
        state = occurrence.get('operationState')
        raise TackerApiError(_operation(occurrence),
                             'still %s after %g s' % (state, deadline),
                             op_id=op_id, state=state,
                             occurrence=occurrence)

    def retry(self, op_id):
        """Run a FAILED_TEMP operation again from where it failed."""
        self._restart('retry', op_id, (202,))
        return op_id

    def rollback(self, op_id):
        """Undo a FAILED_TEMP instantiate or scale out; wait for it with
        ``expect=ROLLED_BACK``."""
        response = self._restart('rollback', op_id, (202,))
        if not response.headers.get('Location'):
            return op_id    # v2 answers without one: the same occurrence
        return op_id_from(response, 'rollback')

    def cancel(self, op_id):
        """A PROCESSING operation whose conductor died marked FAILED_TEMP
        (Tacker 16 allows it once ``[vnf_lcm] operation_timeout`` passed
        since the operation entered PROCESSING); the occurrence."""
        self.rest.call('cancel', 'POST', self._of(op_id, 'cancel'),
                       (202,), op_id=op_id,
                       json={'cancelMode': 'FORCEFUL'})
        return self.show(op_id, 'cancel')

    def fail(self, op_id):
        """Give a FAILED_TEMP operation up: FAILED, the occurrence."""
        return self.rest.json('fail', 'POST', self._of(op_id, 'fail'),
                              expect=(200,), op_id=op_id)

    def _restart(self, verb, op_id, expect):
        entered = self.show(op_id, verb).get('stateEnteredTime')
        asked = self._clock()
        response = self.rest.call(verb, 'POST', self._of(op_id, verb),
                                  expect, op_id=op_id)
        self._restarted[op_id] = (entered, asked)
        return response

    def _stale(self, op_id, occurrence):
        """Whether ``occurrence`` still shows the FAILED_TEMP a retry or
        rollback started from."""
        if op_id not in self._restarted:
            return False
        entered, asked = self._restarted[op_id]
        if (occurrence.get('operationState') == FAILED_TEMP
                and occurrence.get('stateEnteredTime') == entered
                and self._clock() - asked < RESTART_GRACE):
            return True
        del self._restarted[op_id]
        return False


def _not_yet(err):
    """Whether ``err`` is Tacker 16 showing a PATCH's occurrence before it
    is recorded (404), or before the driver made it readable (500)."""
    return err.status == 404 or (
        err.status == 500 and 'JSONDecodeError' in (err.detail or ''))


def _operation(occurrence):
    """"instantiate VNF instance ID" from an occurrence."""
    verb = (occurrence.get('operation') or 'operation').lower()
    instance = occurrence.get('vnfInstanceId')
    if instance:
        return '%s VNF instance %s' % (verb, instance)
    return verb
