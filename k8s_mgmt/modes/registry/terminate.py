"""terminate_end of the registry VNF: forget the VM's host key and the
instance's state (Heat deleted the VM and its volume: that is terminate).
No VIM was registered."""

from k8s_mgmt.shared_phases import forget


def build(op):
    return (yield from forget.forget_phases(op))
