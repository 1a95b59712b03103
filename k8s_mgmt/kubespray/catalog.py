"""Which phase list each hook call of the kubespray mode runs.

Picked by :func:`k8s_mgmt.operations.catalog.builder` when the request
names an Ansible server, so the driver and ``k8s-mgmt plan`` cannot
disagree on it.
"""

DRIVER_TYPE = 'mgmt-drivers-kubespray'

# (operation, hook) -> the generator of its phases.
BUILDERS = {}
