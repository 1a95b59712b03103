"""Faults of the Kubernetes stand-ins' steps, set on lab VMs.

A fault is a file under :data:`k8s_mgmt_lab.kube.faults.FAULT_DIR` in the
VM's own root: the stand-in step fails the way the real tool fails until
the file is removed or the VM deleted. A fault set for *new VMs* is kept
in ``<state dir>/new-vm-faults/<step>`` and set on every VM the stand-in
Nova boots from then on (a scale-out's or a heal's; written into its root
before it boots), until cleared: that is how a test makes the driver fail
on a VM Tacker has not created yet.
"""

import os

from k8s_mgmt_lab.kube import faults

NEW_VMS_DIR = 'new-vm-faults'


def vm_path(init_pid, path):
    """``path`` inside the VM, reached from the host through the root of
    the VM's PID 1 (its overlay, as the VM sees it)."""
    return '/proc/%d/root%s' % (init_pid, path)


def _toggle(directory, step, clear):
    path = os.path.join(directory, step)
    if clear:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        return True
    if os.path.exists(path):
        return False
    os.makedirs(directory, mode=0o755, exist_ok=True)
    with open(path, 'w') as handle:
        handle.write('%s\n' % faults.STEPS[step])
    return True


def set_in_vm(init_pid, step, clear=False):
    """Set (or clear) ``step``'s fault in a running VM; True if changed."""
    return _toggle(vm_path(init_pid, faults.FAULT_DIR), step, clear)


def set_for_new_vms(state_dir, step, clear=False):
    """Set (or clear) ``step``'s fault for every VM booted from now on."""
    return _toggle(os.path.join(state_dir, NEW_VMS_DIR), step, clear)


def for_new_vms(state_dir):
    directory = os.path.join(state_dir, NEW_VMS_DIR)
    try:
        return sorted(name for name in os.listdir(directory)
                      if name in faults.STEPS)
    except FileNotFoundError:
        return []


def apply_to_new(state_dir, upper_dir):
    """Set the new-VM faults in the root (its overlay's upper layer) of a
    VM about to boot; the steps set."""
    steps = for_new_vms(state_dir)
    for step in steps:
        _toggle(upper_dir + faults.FAULT_DIR, step, False)
    return steps
