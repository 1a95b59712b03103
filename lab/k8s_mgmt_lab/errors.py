"""The lab's errors.

:class:`LabError` is a :class:`k8s_mgmt.cli.errors.UserError`, so the
``k8s-mgmt`` command prints it as one line and exits 1 like any error a
user can act on. What the stand-in Nova, Neutron, Cinder and Glance refuse
with is theirs (``k8s_mgmt_lab.openstack.iaas.model.IaasError``).
"""

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt import secrets


class LabError(UserError):
    """A lab operation failed; the message is one line a user can act on."""

    def __init__(self, message):
        super().__init__(secrets.redact(message))
