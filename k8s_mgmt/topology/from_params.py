"""Which Heat resources hold the cluster's nodes, from cluster parameters."""

from k8s_mgmt.topology.model import GroupSpec
from k8s_mgmt.topology.model import TopologySpec


def _group(role, params):
    if params is None or not params.ssh_cp_name:
        return None
    return GroupSpec(role=role, ssh_cp_name=params.ssh_cp_name,
                     nic_cp_name=params.nic_cp_name,
                     aspect_id=params.aspect_id)


def spec_from_params(params):
    """The TopologySpec that a validated ClusterParams describes."""
    registry = params.registry
    if registry is not None:
        return TopologySpec(
            groups=(GroupSpec(role='registry',
                              ssh_cp_name=registry.ssh_cp_name,
                              nic_cp_name=registry.nic_cp_name),),
            volume_resource_ids=tuple(
                v.volume_resource_id
                for v in registry.cinder_volume_setup_params))
    master = params.master_node
    groups = [_group('master', master), _group('worker', params.worker_node)]
    storage = params.storage_server
    if storage is not None and storage.ssh_cp_name:
        # The PVs point at the NFS server CP's address: the node's NIC.
        nfs_cps = {r.nfs_server_cp for r in params.pv_registration_params}
        groups.append(GroupSpec(
            role='storage', ssh_cp_name=storage.ssh_cp_name,
            nic_cp_name=nfs_cps.pop() if len(nfs_cps) == 1 else None))
    lb = params.external_lb_param
    if lb is not None and lb.ssh_cp_name:
        groups.append(GroupSpec(role='lb', ssh_cp_name=lb.ssh_cp_name))
    volumes = ()
    if storage is not None:
        volumes = tuple(v.volume_resource_id
                        for v in storage.cinder_volume_setup_params)
    return TopologySpec(
        groups=tuple(g for g in groups if g is not None),
        cluster_cp_name=master.cluster_cp_name if master else None,
        cluster_fip_name=master.cluster_fip_name if master else None,
        volume_resource_ids=volumes)
