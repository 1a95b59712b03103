"""Heal: one master or worker VNFC, or the whole VNF."""

from k8s_mgmt import exceptions


def heal_vnfcs_start(ctx):
    """heal_start with VNFC ids: take the nodes out of the cluster."""
    raise exceptions.NotImplementedOperation(
        operation='heal_start for VNFCs (removing the nodes to heal)')


def heal_vnfcs_end(ctx):
    """heal_end with VNFC ids: join the replacement VMs."""
    raise exceptions.NotImplementedOperation(
        operation='heal_end for VNFCs (joining the replacement nodes)')


def heal_vnf_start(ctx):
    """heal_start for the whole VNF: unregister the VIM, forget state."""
    raise exceptions.NotImplementedOperation(
        operation='heal_start for the whole VNF (unregistering the VIM)')


def heal_vnf_end(ctx):
    """heal_end for the whole VNF: a full instantiate on the new VMs."""
    raise exceptions.NotImplementedOperation(
        operation='heal_end for the whole VNF (rebuilding the cluster)')
