"""The servers of a stack, read from Heat's nested resource listing and
Neutron's ports: plain data for the lab to decide from.

A server of the sample package is either in the top stack (the storage
server, kubespray's external load balancer) or in a member stack of an
AutoScalingGroup (masters, workers). Heat's listing with ``nested_depth``
says which: a resource in a nested stack names, in ``parent_resource``,
the resource of the stack above that owns its stack; so a server's
``parent_resource`` is its group member and the member's is its group.
The VDU is the server's resource name, as Tacker reads it.
"""

import dataclasses

from k8s_mgmt.topology import index as heat_index

SERVER = heat_index.SERVER
PORT = heat_index.PORT


@dataclasses.dataclass(frozen=True)
class StackServer:
    vdu: str                # the server's resource name (masterNode ...)
    server_id: str          # its physical id: the Nova server
    stack: str              # the stack it is in, as 'name/id'
    group: str = None       # the AutoScalingGroup of the top stack, if any
    member: str = None      # the group's member resource holding it
    ports: tuple = ()       # (port resource name, port id, IP), by name

    @property
    def ip(self):
        """The address of its first port (``<vdu>_CP1`` before ``_CP2``)."""
        return self.ports[0][2] if self.ports else None


def servers_of(resources, neutron_ports):
    """Every ``OS::Nova::Server`` of a nested listing, as StackServers
    sorted by VDU, group member and id; ``neutron_ports`` are Neutron's
    port records (the stack's ports among them). A server that Heat has
    not made yet (no physical id) is left out."""
    found = heat_index.ResourceIndex(resources)
    owners = {r.get('physical_resource_id'): r for r in resources
              if r.get('physical_resource_id')}
    by_id = {p['id']: p for p in neutron_ports}
    servers = []
    for stack_id, resource in found.all_of_type(SERVER):
        server_id = resource.get('physical_resource_id')
        if not server_id:
            continue
        member = owners.get(stack_id)
        servers.append(StackServer(
            vdu=resource['resource_name'], server_id=server_id,
            stack=found.stack_refs[stack_id],
            group=member.get('parent_resource') if member else None,
            member=member['resource_name'] if member else None,
            ports=_ports_of(server_id, found.of_type(stack_id, PORT),
                            by_id)))
    return sorted(servers, key=lambda s: (s.vdu, s.member or '',
                                          s.server_id))


def _ports_of(server_id, port_resources, neutron_ports):
    """(name, id, IP) of the stack's ports bound to the server."""
    bound = []
    for resource in port_resources:
        port = neutron_ports.get(resource.get('physical_resource_id'))
        if port is None or port.get('device_id') != server_id:
            continue
        ips = [f['ip_address'] for f in port.get('fixed_ips') or ()]
        bound.append((resource['resource_name'], port['id'],
                      ips[0] if ips else None))
    return tuple(sorted(bound))


def nested_ref(resource):
    """'name/id' of the stack a group or member resource owns, from its
    ``nested`` link: the path Heat serves without a redirect."""
    for link in resource.get('links') or ():
        if link.get('rel') == 'nested':
            return '/'.join(link['href'].rstrip('/').split('/')[-2:])
    return None


def by_vdu(servers):
    """{VDU: [StackServer]}, each list in the order servers_of gives."""
    grouped = {}
    for server in servers:
        grouped.setdefault(server.vdu, []).append(server)
    return grouped
