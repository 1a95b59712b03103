"""The hooks a v2 VNFD may name, and what each does.

Tacker's v2 conductor calls ``<operation>_start`` and ``_end`` around its
infra driver, the rollback hooks when an operation is rolled back, and
skips a hook the VNFD does not name. Here:

* instantiate, scale, heal and terminate run the same operations as the
  v1 driver (:mod:`k8s_mgmt.v2.operations` says where each runs and why);
  ``terminate_end`` has nothing left to do (the work is at its start);
* a rolled-back instantiate forgets what the failed one left, a
  rolled-back scale-out takes its new workers out of the cluster; the
  ``_end`` of both has nothing to do (Heat has removed the VMs);
* modify_information runs the Kubernetes upgrade or the certificates'
  check or renewal its request's metadata asks for (``k8sMgmtUpgrade``,
  ``k8sMgmtCertificates``), and nothing else; change_current_package
  upgrades to the version the change names, and its rollback is refused
  once a node was upgraded (``_rollback_end`` has nothing to do);
* change_external_connectivity has nothing to do for a cluster (as in v1).
"""

NOTHING_TO_DO = ('terminate_end', 'instantiate_rollback_end',
                 'scale_rollback_end',
                 'change_current_package_rollback_end') + tuple(
    '%s_%s' % (operation, when)
    for operation in ('change_external_connectivity',
                      'change_external_connectivity_rollback')
    for when in ('start', 'end'))


def _nothing(script_dict):
    return None


# The hooks :mod:`k8s_mgmt.v2.operations` and :mod:`k8s_mgmt.v2.modify`
# run; imported by the first one called (the driver's imports are most of
# a hook's start).
OPERATION_HOOKS = (
    'instantiate_start', 'instantiate_end', 'instantiate_rollback_start',
    'scale_start', 'scale_end', 'scale_rollback_start', 'heal_start',
    'heal_end', 'terminate_start')
MODIFY_HOOKS = (
    'modify_information_start', 'modify_information_end',
    'change_current_package_start', 'change_current_package_end',
    'change_current_package_rollback_start')


def _operation(name):
    def run(script_dict):
        from k8s_mgmt.v2 import operations
        return operations.OPERATIONS[name](script_dict)
    return run


def _modify(name):
    def run(script_dict):
        from k8s_mgmt.v2 import modify
        return modify.OPERATIONS[name](script_dict)
    return run


def table():
    """hook name -> ``hook(script_dict)``, for :func:`k8s_mgmt.v2.script.
    main`."""
    hooks = {name: _operation(name) for name in OPERATION_HOOKS}
    hooks.update({name: _modify(name) for name in MODIFY_HOOKS})
    hooks.update({name: _nothing for name in NOTHING_TO_DO})
    return hooks
