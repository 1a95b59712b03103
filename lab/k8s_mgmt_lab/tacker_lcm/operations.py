"""LCM operations on the lab's VNF through Tacker's REST API, v1 or v2
(the lab's ``api``: ``lab up --api``).

Each call is what an operator's session does: the package onboarded once
(``openstack vnf package create`` and ``upload``), the instance created
once (``openstack vnflcm create``), then the operation, whose occurrence
is polled until it ends. COMPLETED gives an :class:`Outcome`; FAILED_TEMP
raises :class:`OperationFailed` with Tacker's ``error.detail`` on one line
and the occurrence's id, which ``retry``, ``rollback`` and ``fail`` take
(the record remembers the last one). After each, the lab record follows
Tacker's instance (:mod:`.record`).
"""

import copy
import dataclasses
import time

from oslo_log import log as logging

from k8s_mgmt.cli import package as package_cli
from k8s_mgmt.polling import Poll
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.openstack import tenancy
from k8s_mgmt_lab.tacker_api import op_occs as op_occs_mod
from k8s_mgmt_lab.tacker_api import packages as packages_mod
from k8s_mgmt_lab.tacker_api.client import Tacker
from k8s_mgmt_lab.tacker_api.errors import TackerApiError
from k8s_mgmt_lab.tacker_lcm import logs
from k8s_mgmt_lab.tacker_lcm import record as record_mod

LOG = logging.getLogger(__name__)

# Seconds an operation may take, API call to its end; Tacker's own stack
# timeout is 10 minutes (stack_retries x stack_retry_wait).
OPERATION_DEADLINE = 1500.0
ONBOARD_DEADLINE = 180.0
ONBOARD_ATTEMPTS = 3
# Tacker's [vnf_lcm] operation_timeout (60 s by default), and a margin.
CANCEL_DEADLINE = 120.0
DEFAULT_ASPECT = 'worker_instance'
MODIFY_INFO = 'MODIFY_INFO'
# Tacker 16's v1 PATCH answers 202 before its conductor records the
# occurrence, and shows it only once the driver's first hook rewrote what
# Tacker recorded: for this long a wait takes a 404 or that 500 for "not
# yet" (op_occs.OpOccs.wait).
UNRECORDED_GRACE = 60.0
INSTANTIATED = 'INSTANTIATED'


class OperationFailed(LabError):
    """An operation ended FAILED_TEMP (or otherwise not as asked)."""

    def __init__(self, error):
        self.op_id = error.op_id
        self.state = error.state
        self.detail = error.detail
        hint = ''
        operation = (error.occurrence or {}).get('operation')
        if error.state == op_occs_mod.FAILED_TEMP and \
                operation == MODIFY_INFO:
            # Tacker 16 retries and rolls back no MODIFY_INFO (doc/source/
            # tacker.rst): given up, then the same change sent again.
            hint = ('; then "k8s-mgmt lab fail" and send the change again '
                    '(op occurrence %s)' % error.op_id)
        elif error.state == op_occs_mod.FAILED_TEMP:
            hint = ('; then "k8s-mgmt lab retry", "lab rollback" '
                    '(instantiate, scale out) or "lab fail" (op occurrence '
                    '%s)' % error.op_id)
        super().__init__(str(error) + hint)


@dataclasses.dataclass
class Outcome:
    operation: str
    op_id: str
    state: str
    instance: dict
    seconds: float


def tacker_record(settings):
    """The record of a lab that is up with a Tacker, else LabError."""
    record = lcm.read_lab(settings)
    if not record.get('tacker'):
        raise LabError(
            'the lab in %s has no Tacker: it shares a control plane (Tacker '
            'drives only the stand-ins of its own plane\'s RegionOne); '
            '"k8s-mgmt lab down", then "lab up --own-control-plane"'
            % settings.state_dir)
    return record


def api_of(record):
    """The VNF LCM API the lab's verbs use ('v1' for a lab recorded
    before it was a choice)."""
    return record.get('api') or 'v1'


def client(record):
    """Tacker as the lab's admin, in the lab's project, through the lab's
    VNF LCM API."""
    return Tacker(tenancy.session(record['heat']), api=api_of(record))


def request_for_vim(body, vim_id, api='v1'):
    """The InstantiateVnfRequest with its VIM connections on the lab's
    registered VIM (a sample names a placeholder VIM id, which an
    operator replaces with their own VIM's), in the shape of ``api``: a
    v1 body for v2 is reshaped as ``k8s-mgmt package request --api v2``
    does."""
    body = copy.deepcopy(body)
    connections = body.get('vimConnectionInfo') or []
    if api == 'v2' and isinstance(connections, list):
        body = package_cli.v2_request(body)
        connections = body['vimConnectionInfo']
    if isinstance(connections, dict):
        connections = connections.values()
    for conn in connections:
        conn['vimId'] = vim_id
    return body


def _save(settings, **values):
    record = manager.read_record(settings)
    record.update(values)
    manager.write_record(settings.lab_file, record)
    return record


def ensure_package(settings, record, tacker):
    """The VNFD id of the lab's package, onboarded on first use. When
    Tacker loses the package to its races between conductors (see
    :mod:`k8s_mgmt_lab.tacker_api.packages`: the content gone from an
    ONBOARDED package, the package CREATED again with the race in a
    conductor's log, or left PROCESSING after every conductor read it),
    the package is built again under a new VNFD id and onboarded again,
    as an operator would, up to ONBOARD_ATTEMPTS times. A refusal
    without the race in the logs is raised as it is."""
    if record.get('vnfd_id'):
        return record['vnfd_id']
    paths = logs.conductor_logs(settings.state_dir)
    for attempt in range(1, ONBOARD_ATTEMPTS + 1):
        mark = logs.Mark(paths)
        watch = ((lambda package_id: logs.StallWatch(mark, package_id))
                 if len(paths) > 1 else None)
        try:
            package = tacker.packages.onboard(settings.package_zip,
                                              ONBOARD_DEADLINE, watch=watch)
            break
        except packages_mod.PackageRefused as err:
            if (attempt == ONBOARD_ATTEMPTS or len(paths) < 2 or
                    logs.ONBOARD_RACE not in mark.since()):
                raise
            LOG.warning('%s: two conductors onboarded it at once (%s in '
                        'a conductor\'s log); building it again under a '
                        'new VNFD id', err, logs.ONBOARD_RACE)
        except (packages_mod.PackageLost, packages_mod.PackageStalled) as err:
            if attempt == ONBOARD_ATTEMPTS:
                raise
            LOG.warning('%s; building it again under a new VNFD id', err)
        manager.build_package(settings, tacker=True, api=api_of(record))
    _save(settings, vnf_package_id=package['id'],
          vnfd_id=package['vnfdId'])
    return package['vnfdId']


def ensure_instance(settings, record, tacker, name=None):
    """The lab's VNF instance, created on first use."""
    if record.get('vnf_instance_id'):
        try:
            return tacker.instances.show(record['vnf_instance_id'])
        except TackerApiError as err:
            if err.status != 404:
                raise
            # Deleted behind the lab's back (openstack vnflcm delete).
    vnfd_id = ensure_package(settings, record, tacker)
    instance = tacker.instances.create(
        vnfd_id, name=name or 'k8s-lab-%s' % record['flavour'],
        description='the k8s-mgmt lab\'s VNF')
    _save(settings, vnf_instance_id=instance['id'])
    return instance


def _run(settings, tacker, operation, instance_id, start,
         deadline=OPERATION_DEADLINE, expect=op_occs_mod.COMPLETED,
         unrecorded=0.0):
    """Start the operation (``start()`` gives its occurrence id), wait
    for it, follow the instance; an Outcome or OperationFailed."""
    began = time.monotonic()
    op_id = start()
    _save(settings, last_op={'id': op_id, 'operation': operation})
    try:
        occurrence = tacker.op_occs.wait(op_id, deadline, expect=expect,
                                         unrecorded=unrecorded)
    except TackerApiError as err:
        if err.op_id:
            record_mod.follow(settings,
                              tacker.instances.show(instance_id))
            raise OperationFailed(err)
        raise
    instance = tacker.instances.show(instance_id)
    record_mod.follow(settings, instance)
    return Outcome(operation, op_id, occurrence['operationState'],
                   instance, time.monotonic() - began)


def instantiate(settings, request_body=None, name=None,
                deadline=OPERATION_DEADLINE):
    record = tacker_record(settings)
    tacker = client(record)
    instance = ensure_instance(settings, record, tacker, name)
    if instance.get('instantiationState') == INSTANTIATED:
        raise LabError('VNF instance %s is already instantiated; "k8s-mgmt '
                       'lab terminate" first' % instance['id'])
    body = request_for_vim(request_body or manager.lab_request(record),
                           record['tacker']['vim_id'], api_of(record))
    return _run(settings, tacker, 'instantiate', instance['id'],
                lambda: tacker.instances.instantiate(instance['id'], body),
                deadline)


def _instantiated(settings):
    record = tacker_record(settings)
    instance_id = record.get('vnf_instance_id')
    if not instance_id or record.get('stack_id') is None:
        raise LabError('the lab\'s VNF is not instantiated; run "k8s-mgmt '
                       'lab instantiate"')
    return client(record), instance_id


def scale(settings, scale_type, aspect_id=DEFAULT_ASPECT, steps=1,
          additional_params=None, deadline=OPERATION_DEADLINE):
    tacker, instance_id = _instantiated(settings)
    return _run(settings, tacker, 'scale', instance_id,
                lambda: tacker.instances.scale(
                    instance_id, scale_type, aspect_id, steps,
                    additional_params), deadline)


def heal_params(keep_volumes=False, recreate_volumes=False):
    """additionalParams of a heal: Tacker's own switch for the VNFC's
    volumes, and ours for accepting a new, empty storage volume."""
    params = {}
    if keep_volumes:
        params['tacker_extension_heal_include_block_storage'] = False
    if recreate_volumes:
        params['storage_volume_recreate'] = True
    return params or None


def heal(settings, vnfc_ids=(), additional_params=None,
         deadline=OPERATION_DEADLINE):
    """Heal the VNFCs ``vnfc_ids`` (Tacker's ids), or the whole VNF."""
    tacker, instance_id = _instantiated(settings)
    return _run(settings, tacker, 'heal', instance_id,
                lambda: tacker.instances.heal(
                    instance_id, list(vnfc_ids) or None,
                    cause='k8s-mgmt lab heal',
                    additional_params=additional_params), deadline)


def terminate(settings, graceful_timeout=None, additional_params=None,
              deadline=OPERATION_DEADLINE):
    """FORCEFUL, or GRACEFUL within ``graceful_timeout`` seconds."""
    tacker, instance_id = _instantiated(settings)
    kind = 'FORCEFUL' if graceful_timeout is None else 'GRACEFUL'
    outcome = _run(settings, tacker, 'terminate', instance_id,
                   lambda: tacker.instances.terminate(
                       instance_id, kind, graceful_timeout,
                       additional_params), deadline)
    _save(settings, terminated=True)
    return outcome


def modify(settings, metadata, deadline=OPERATION_DEADLINE):
    """PATCH the instance's metadata (what the driver's
    modify_information hooks read: k8sMgmtUpgrade, k8sMgmtCertificates)."""
    tacker, instance_id = _instantiated(settings)
    return _run(settings, tacker, 'modify', instance_id,
                lambda: tacker.instances.update(instance_id,
                                                {'metadata': metadata}),
                deadline, unrecorded=UNRECORDED_GRACE)


def _last_op(settings, op_id):
    record = tacker_record(settings)
    op_id = op_id or (record.get('last_op') or {}).get('id')
    if not op_id:
        raise LabError('no operation of the lab\'s Tacker to act on')
    return client(record), record.get('vnf_instance_id'), op_id


def retry(settings, op_id=None, deadline=OPERATION_DEADLINE):
    """Run a FAILED_TEMP operation again (the last one by default)."""
    tacker, instance_id, op_id = _last_op(settings, op_id)
    return _run(settings, tacker, 'retry', instance_id,
                lambda: tacker.op_occs.retry(op_id), deadline)


def rollback(settings, op_id=None, deadline=OPERATION_DEADLINE):
    """Roll a FAILED_TEMP instantiate or scale-out back."""
    tacker, instance_id, op_id = _last_op(settings, op_id)
    return _run(settings, tacker, 'rollback', instance_id,
                lambda: tacker.op_occs.rollback(op_id), deadline,
                expect=op_occs_mod.ROLLED_BACK)


def _answered(settings, verb, op_id, call):
    """``call(tacker, op_id)``, a verb Tacker answers at once with the
    occurrence (no operation to wait for); the instance followed."""
    tacker, instance_id, op_id = _last_op(settings, op_id)
    began = time.monotonic()
    occurrence = call(tacker, op_id)
    instance = tacker.instances.show(instance_id)
    record_mod.follow(settings, instance)
    return Outcome(verb, op_id, occurrence.get('operationState'),
                   instance, time.monotonic() - began)


def _cancel_when_allowed(tacker, op_id):
    # Tacker refuses until the operation is operation_timeout old
    # ("not allowed until ..."): asked again, with backoff, meanwhile.
    for _ in Poll(CANCEL_DEADLINE, first=2.0, maximum=10.0):
        try:
            return tacker.op_occs.cancel(op_id)
        except TackerApiError as err:
            if 'not allowed until' not in str(err):
                raise
    raise LabError('Tacker did not let operation %s be cancelled within '
                   '%g s' % (op_id, CANCEL_DEADLINE))


def cancel(settings, op_id=None):
    """Mark a PROCESSING operation whose conductor died FAILED_TEMP
    (Tacker's cancel; it refuses until ``[vnf_lcm] operation_timeout``
    passed): then retry, rollback or fail."""
    return _answered(settings, 'cancel', op_id, _cancel_when_allowed)


def fail(settings, op_id=None):
    """Give a FAILED_TEMP operation up: FAILED."""
    return _answered(settings, 'fail', op_id,
                     lambda tacker, op: tacker.op_occs.fail(op))


def instances(settings):
    """Every VNF instance of the lab's Tacker, however it was made, with
    the last operation of each: [{id, name, state, flavour,
    operation, operation_state, op_id}]."""
    record = tacker_record(settings)
    tacker = client(record)
    latest = {}
    for occ in tacker.op_occs.list():
        key = occ.get('vnfInstanceId')
        if key not in latest or (occ.get('startTime') or '') >= (
                latest[key].get('startTime') or ''):
            latest[key] = occ
    out = []
    for inst in tacker.instances.list():
        occ = latest.get(inst['id']) or {}
        out.append({
            'id': inst['id'], 'name': inst.get('vnfInstanceName'),
            'state': inst.get('instantiationState'),
            'flavour': (inst.get('instantiatedVnfInfo') or {}).get(
                'flavourId'),
            'operation': occ.get('operation'),
            'operation_state': occ.get('operationState'),
            'op_id': occ.get('id')})
    return out


def status_section(settings, record):
    """``lab status``'s ``tacker``: the lab's VIM and every VNF instance
    its Tacker has, however it was made (the lab's verbs, the API,
    ``openstack vnflcm``)."""
    report = dict(record['tacker'],
                  vnf_instance_id=record.get('vnf_instance_id'),
                  last_op=record.get('last_op'))
    try:
        report['instances'] = instances(settings)
    except LabError as err:     # status must report, not crash
        report['error'] = str(err)
    return report
