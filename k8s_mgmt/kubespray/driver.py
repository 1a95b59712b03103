"""The Tacker management driver ``mgmt-drivers-kubespray``.

The same thin router as :class:`k8s_mgmt.driver.KubernetesMgmtDriver`:
each hook validates its input, builds a per-call context and runs the
operation's phases; here the phases write an Ansible inventory and run
kubespray's playbooks on the operator's Ansible server
(:mod:`k8s_mgmt.modes.kubespray`, picked by :mod:`k8s_mgmt.modes.catalog`).
The instance holds no per-operation state.
"""

from k8s_mgmt import driver
from k8s_mgmt import exceptions
from k8s_mgmt.ansible import server_trust
from k8s_mgmt.modes import catalog


class KubesprayMgmtDriver(driver.KubernetesMgmtDriver):
    """Builds and runs a Kubernetes cluster with kubespray, from an Ansible
    server, behind an external load balancer."""

    MODES = (catalog.MODE_KUBESPRAY,)
    TYPE = catalog.KUBESPRAY_DRIVER_TYPE

    def get_description(self):
        return ('Kubernetes cluster management driver: kubespray clusters '
                'built from an Ansible server, behind an external load '
                'balancer; scale, heal workers, terminate')

    def _check_mode(self, ctx):
        super()._check_mode(ctx)
        # The sample request of Tacker's kubespray specification has an
        # address 0.0.0.0 and empty paths: accepted by validation (with a
        # warning), refused by every operation that would use them.
        held = ctx.params.ansible.placeholders
        if held:
            raise exceptions.ValidationError([
                (path, 'a placeholder (empty or 0.0.0.0): set the Ansible '
                       'server\'s real value') for path in held])
        # Before anything runs (instantiate_start: before Heat makes a VM).
        server_trust.check_before_any_vm(
            ctx.params.ansible, server_trust.store_for(ctx.vnf_instance_id))
