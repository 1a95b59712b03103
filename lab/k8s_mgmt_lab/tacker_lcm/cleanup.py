"""What a lab leaves in a Tacker that outlives it (a kept control plane),
removed at ``lab down``: the VNF instances of the lab's project that are
not instantiated, its packages, and the default VIM ``lab up`` registered.

An instance Tacker still counts as INSTANTIATED cannot be deleted through
its API: it is named in a warning (terminate it first, as ``k8s-mgmt
demo`` does); its stack is abandoned with the lab's project.
"""

from oslo_log import log as logging

from k8s_mgmt_lab.tacker_api.errors import TackerApiError
from k8s_mgmt_lab.tacker_lcm import operations

LOG = logging.getLogger(__name__)


def release(record):
    """Best effort: each removal that fails is logged, the rest go on."""
    tacker = operations.client(record)
    kept = set()
    for instance in _listed(tacker.instances.list, 'instances'):
        if instance.get('instantiationState') == operations.INSTANTIATED:
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
    vim_id = (record.get('tacker') or {}).get('vim_id')
    if vim_id:
        _quietly('delete VIM', lambda: tacker.rest.call(
            'delete VIM %s' % vim_id, 'DELETE', 'v1.0/vims/%s' % vim_id,
            expect=(204,)))


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
