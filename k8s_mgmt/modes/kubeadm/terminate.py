"""Terminate: unregister the VIM and drop all state kept for the instance.

terminate_end runs after Heat deleted the VMs and after Tacker emptied the
instance's ``vim_connection_info``, so nothing here talks to the cluster::

    Unregister the VIM            (Tacker: the id it recorded; lab: its files)
    Forget the servers' host keys (a shared pin file keeps other instances')
    Remove the instance's state   (<state_dir>/<vnf instance id>/)

Each step reads what is there and removes it; a second terminate finds
nothing and succeeds. The phases are
:mod:`k8s_mgmt.shared_phases.forget`'s: a whole-VNF heal needs them too.
"""

from k8s_mgmt.shared_phases import forget


def build(op):
    vim = yield forget.unregister_phase(op)
    rest = yield from forget.forget_phases(op)
    return dict(rest, vim=vim)
