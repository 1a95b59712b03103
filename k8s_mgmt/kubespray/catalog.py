"""Which phase list each hook call of the kubespray mode runs.

Picked by :func:`k8s_mgmt.operations.catalog.builder` when the request
names an Ansible server, so the driver and ``k8s-mgmt plan`` cannot
disagree on it.
"""

from k8s_mgmt.kubespray import heal
from k8s_mgmt.kubespray import instantiate
from k8s_mgmt.kubespray import scale
from k8s_mgmt.kubespray import terminate

DRIVER_TYPE = 'mgmt-drivers-kubespray'

# (operation, hook) -> the generator of its phases.
BUILDERS = {
    ('instantiate', 'instantiate_end'): instantiate.build,
    ('scale_out', 'scale_end'): scale.build_scale_out,
    ('scale_in', 'scale_start'): scale.build_scale_in,
    ('scale_out_rollback', 'scale_start'): scale.build_rollback,
    ('heal_vnfc', 'heal_start'): heal.build_vnfcs_start,
    ('heal_vnfc', 'heal_end'): heal.build_vnfcs_end,
    ('heal_vnf', 'heal_start'): heal.build_vnf_start,
    ('heal_vnf', 'heal_end'): heal.build_vnf_end,
    ('terminate', 'terminate_end'): terminate.build,
}
