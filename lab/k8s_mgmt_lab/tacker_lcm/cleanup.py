"""What a lab leaves in a Tacker that outlives it (a kept control plane,
which the next lab uses), removed at ``lab down`` while the lab's VMs and
stand-ins still run: its VNF instances (one still instantiated is
terminated first, FORCEFUL, as an operator would: an operation left
FAILED_TEMP is given up with ``fail`` so that it can be), its packages,
the default VIM ``lab up`` registered and every VIM of the lab's project
(the Kubernetes VIM the driver registered for an instance that was never
terminated). What cannot be removed is named in a warning; the
instance's stack is abandoned with the lab's project.
"""

from oslo_log import log as logging

from k8s_mgmt_lab.tacker_api import op_occs as op_occs_mod
from k8s_mgmt_lab.tacker_api.errors import TackerApiError
from k8s_mgmt_lab.tacker_lcm import operations

LOG = logging.getLogger(__name__)
# Seconds a terminate of the lab's leftover instance may take.
TERMINATE_DEADLINE = 300.0


def release(record):
    """Best effort: each removal that fails is logged, the rest go on."""
    tacker = operations.client(record)
    kept = set()
    for instance in _listed(tacker.instances.list, 'instances'):
        if instance.get('instantiationState') == operations.INSTANTIATED \
                and not _terminated(tacker, instance['id']):
            LOG.warning('VNF instance %s is still instantiated in Tacker; '
                        'it stays', instance['id'])
            kept.add(instance.get('vnfdId'))
            continue
        _quietly('delete VNF instance', tacker.instances.delete,
                 instance['id'])
    for package in _listed(tacker.packages.list, 'packages'):
        if package.get('vnfdId') in kept:
            continue
        if package.get('operationalState') == 'ENABLED':
            _quietly('disable VNF package', tacker.packages.disable,
                     package['id'])
        _quietly('delete VNF package', tacker.packages.delete, package['id'])
    vim_ids = {(record.get('tacker') or {}).get('vim_id')}
    project = tacker.rest.adapter.session.get_project_id()
    vim_ids.update(vim['id'] for vim in _vims(tacker)
                   if vim.get('tenant_id') == project)
    for vim_id in sorted(vim_ids - {None}):
        _quietly('delete VIM', lambda: tacker.rest.call(
            'delete VIM %s' % vim_id, 'DELETE', 'v1.0/vims/%s' % vim_id,
            expect=(204,)))


def _vims(tacker):
    try:
        return tacker.rest.json('list VIMs', 'GET', 'v1.0/vims')['vims']
    except TackerApiError as err:
        LOG.warning('cannot list Tacker\'s VIMs: %s', err)
        return []


def _terminated(tacker, instance_id):
    """Whether the instance could be terminated (FORCEFUL), after its
    operation left FAILED_TEMP, if any, was given up."""
    try:
        for occurrence in tacker.op_occs.list(
                '(eq,vnfInstanceId,%s)' % instance_id):
            if occurrence.get('operationState') == 'FAILED_TEMP' and \
                    occurrence.get('vnfInstanceId') == instance_id:
                tacker.op_occs.fail(occurrence['id'])
        op_id = tacker.instances.terminate(instance_id, 'FORCEFUL')
        tacker.op_occs.wait(op_id, TERMINATE_DEADLINE,
                            expect=op_occs_mod.COMPLETED)
    except TackerApiError as err:
        LOG.warning('terminate VNF instance %s: %s', instance_id, err)
        return False
    return True


def _listed(call, what):
    try:
        return call()
    except TackerApiError as err:
        LOG.warning('cannot list Tacker\'s %s: %s', what, err)
        return []


def _quietly(what, call, *args):
    try:
        call(*args)
    except TackerApiError as err:
        LOG.warning('%s: %s', what, err)
