"""The lab's errors.

:class:`LabError` is a :class:`k8s_mgmt.cli.errors.UserError`, so the
``k8s-mgmt`` command prints it as one line and exits 1 like any error a
user can act on. :class:`LabCloudError` is what the lab's cloud (its Heat,
Nova and Neutron) refuses with; the lab's HTTP API turns it into the status
code the real service would answer.
"""

from k8s_mgmt.cli.errors import UserError
from k8s_mgmt import exceptions
from k8s_mgmt import secrets


class LabError(UserError):
    """A lab operation failed; the message is one line a user can act on."""

    def __init__(self, message):
        super().__init__(secrets.redact(message))


class LabCloudError(exceptions.MgmtDriverError):
    message = 'Lab cloud: %(reason)s'


class InstanceNotReady(LabCloudError):
    """Nova's InstanceNotReady: the server cannot give a console yet."""


class StackConflict(LabCloudError):
    """Heat's 409: a stack name in use, or an action on a stack while
    another one is in progress."""
