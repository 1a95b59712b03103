"""The cluster topology as plain data: what Heat created, read once.

Everything here is a frozen dataclass without I/O. :mod:`.builder` makes a
:class:`Topology` from Heat's JSON; :mod:`.heat` fetches that JSON.
"""

import dataclasses
from dataclasses import dataclass

ROLES = ('master', 'worker', 'storage', 'lb', 'ansible', 'registry')


@dataclass(frozen=True)
class GroupSpec:
    """How to find one node group in the stack."""

    role: str               # one of ROLES
    ssh_cp_name: str        # port (CP) resource whose address we SSH to
    nic_cp_name: str = None  # port on the cluster network; None = ssh_cp_name
    aspect_id: str = None   # AutoScalingGroup in the top stack; None: a VDU

    @property
    def nic_port_name(self):
        return self.nic_cp_name or self.ssh_cp_name


@dataclass(frozen=True)
class TopologySpec:
    groups: tuple                    # of GroupSpec
    cluster_cp_name: str = None      # VIP port (HA) or the master's own port
    cluster_fip_name: str = None     # floating IP resource for the VIP
    volume_resource_ids: tuple = ()  # OS::Cinder::Volume resource names

    def groups_of(self, role):
        return tuple(g for g in self.groups if g.role == role)


@dataclass(frozen=True)
class Node:
    role: str
    name: str               # hostname: unique, stable, from the server id
    server_id: str
    vnfc_id: str            # None when unknown
    resource_name: str      # server resource name in its stack
    stack_id: str           # (nested) stack holding the server
    parent_resource: str    # member resource name in the group stack, or None
    ssh_ip: str             # floating IP of the SSH CP if any, else fixed IP
    nic_ip: str             # fixed IP on the cluster network
    compute_host: str       # OS-EXT-SRV-ATTR:host, None if not visible
    server_groups: tuple    # ids of the Nova server groups the server is in
    status: str             # Heat resource status of the server
    # Read from Heat; None when the source does not give them:
    group_stack_id: str = None    # the AutoScalingGroup's nested stack
    creation_time: str = None     # member (or server) creation time from Heat


@dataclass(frozen=True)
class Volume:
    resource_name: str
    volume_id: str
    device: str             # e.g. '/dev/vdb' where attached, else None
    server_id: str = None   # server it is attached to, else None


@dataclass(frozen=True)
class ServerGroup:
    resource_name: str
    group_id: str
    policies: tuple         # e.g. ('anti-affinity',)
    members: tuple          # server ids


@dataclass(frozen=True)
class Topology:
    stack_id: str
    masters: tuple
    workers: tuple
    storage: tuple = ()
    lbs: tuple = ()
    ansible: tuple = ()
    registries: tuple = ()      # the registry VNF's one VM
    vip: str = None
    vip_fip: str = None
    volumes: tuple = ()
    server_groups: tuple = ()   # of ServerGroup (added beyond the contract)

    def all_nodes(self):
        return (self.masters + self.workers + self.storage + self.lbs +
                self.ansible + self.registries)

    def by_server_id(self, sid):
        return _first(n for n in self.all_nodes() if n.server_id == sid)

    def by_vnfc_id(self, vid):
        return _first(n for n in self.all_nodes()
                      if vid is not None and n.vnfc_id == vid)

    def by_name(self, name):
        return _first(n for n in self.all_nodes() if n.name == name)

    def by_stack_id(self, stack_id):
        """The node living in a member stack (scale lists name these)."""
        return _first(n for n in self.all_nodes() if n.stack_id == stack_id)

    def nodes_of(self, role):
        return tuple(n for n in self.all_nodes() if n.role == role)

    def cluster_endpoint_ip(self):
        """VIP if known, else the first master's NIC address."""
        if self.vip:
            return self.vip
        return self.masters[0].nic_ip if self.masters else None

    def to_dict(self):
        return dataclasses.asdict(self)


def _first(items):
    return next(iter(items), None)
