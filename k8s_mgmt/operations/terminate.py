"""Terminate: unregister the VIM and drop all state kept for the instance."""

from k8s_mgmt import exceptions


def forget_cluster(ctx):
    """terminate_end: the VMs are gone; remove the VIM and our state."""
    raise exceptions.NotImplementedOperation(
        operation='terminate_end (unregistering the VIM and removing state)')
