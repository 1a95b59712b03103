"""terminate_end of the kubespray mode.

Heat has deleted the VMs; what is left is the VIM, the instance's
inventory directory on the Ansible server (inventory, known_hosts and the
cluster's key pair) and the driver's own state::

    Unregister the VIM
    Connect to the Ansible server
    Remove the inventory and key pair from the Ansible server
    Forget the servers' host keys
    Remove the instance's state

An unreachable Ansible server fails the terminate, naming it: the key
pair that opens the (deleted) nodes must not be left behind silently.
A second terminate finds nothing to remove and succeeds.
"""

from k8s_mgmt.modes.kubespray import server_phases
from k8s_mgmt.shared_phases import forget


def build(op):
    vim = yield forget.unregister_phase(op)
    server = yield server_phases.connect_phase(
        op, 'Connect to the Ansible server', ())
    removed = yield server_phases.remove_phase(op, server)
    rest = yield from forget.forget_phases(op)
    return dict(rest, vim=vim, inventory_removed=removed)
