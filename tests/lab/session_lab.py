"""The suite's shared lab (the VMs of the ``lab_network``, ``vm_manager``
and ``make_vms`` fixtures): one per pytest-xdist worker, so that workers
never share its subnet, bridge, tag or state directory. Every other
module's lab has settings of its own, unique across the suite
(tests/unit/source/test_lab_settings_unique.py)."""

import os

MAX_WORKERS = 4


def worker_index(worker=None):
    """0 outside xdist and for gw0; n for gwn."""
    worker = worker or os.environ.get('PYTEST_XDIST_WORKER', 'gw0')
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    if index >= MAX_WORKERS:
        raise RuntimeError('the lab suite runs on at most %d xdist workers '
                           '(a shared lab each): %s' % (MAX_WORKERS, worker))
    return index


def settings(index):
    """(state dir, subnet, bridge, tag) of worker ``index``'s shared lab."""
    if not index:
        return ('/var/lib/k8s-mgmt-lab-test', '10.254.200.0/24', 'k8slabt0',
                'k8t')
    return ('/var/lib/k8s-mgmt-lab-test-w%d' % index,
            '10.254.%d.0/24' % (200 - index), 'k8slabw%d' % index,
            'kw%d' % index)


STATE_DIR, SUBNET, BRIDGE, TAG = settings(worker_index())
