"""Build a :class:`~k8s_mgmt.topology.model.Topology` from Heat's JSON.

Pure functions, no I/O. The caller lists the top stack's resources once with
``nested_depth=2`` (the AutoScalingGroup, its member stacks, the servers and
ports inside them), asks :func:`needed_details` which resources must be shown
to read their attributes, fetches those, and calls :func:`build_topology`.

Layout understood:

* aspect groups: an AutoScalingGroup named ``aspect_id`` in the top stack, one
  nested stack per member (the member's ``physical_resource_id``) holding the
  server and its ports;
* single-resource VDUs: the port named ``ssh_cp_name`` (in the top stack, or
  unique in one nested stack) and the server it is attached to.
"""

from dataclasses import dataclass

from k8s_mgmt import exceptions
from k8s_mgmt.topology import index as hx
from k8s_mgmt.topology import model
from k8s_mgmt.topology import naming

_ROLE_FIELD = {'master': 'masters', 'worker': 'workers', 'storage': 'storage',
               'lb': 'lbs', 'ansible': 'ansible', 'registry': 'registries'}


def _fail(reason):
    return exceptions.TopologyError(reason=reason)


@dataclass(frozen=True)
class _Slot:
    """Where one node's resources are, known from the listing alone."""

    role: str
    label: str            # for error messages: 'member X of group Y'
    stack_id: str         # stack holding the server and its ports
    parent_resource: str
    group_stack_id: str
    ssh_port: dict
    nic_port: dict
    servers: tuple        # candidate server resources (usually one)
    floating_ips: tuple   # FloatingIP resources in the same stack
    creation_time: str


def _locate_group_members(spec_group, stack_id, idx):
    aspect = idx.get(stack_id, spec_group.aspect_id)
    if aspect is None or aspect.get('resource_type') not in hx.GROUP_TYPES:
        groups = sorted(r['resource_name'] for r in
                        idx.of_type(stack_id, *hx.GROUP_TYPES))
        what = ('not found' if aspect is None else 'is a %s, not a group'
                % aspect.get('resource_type'))
        raise _fail("aspect '%s' %s in stack %s; AutoScalingGroups present: %s"
                    % (spec_group.aspect_id, what, stack_id, groups))
    group_sid = hx.nested_stack_id(aspect)
    if not group_sid:
        raise _fail("group '%s' in stack %s has no nested stack (status %s)"
                    % (spec_group.aspect_id, stack_id,
                       aspect.get('resource_status')))
    slots = []
    for member in sorted(idx.stack(group_sid).values(),
                         key=hx.creation_sort_key):
        label = "member %s of group '%s'" % (member['resource_name'],
                                             spec_group.aspect_id)
        member_sid = hx.nested_stack_id(member)
        if not member_sid:
            raise _fail('%s has no nested stack (status %s)'
                        % (label, member.get('resource_status')))
        if not idx.stack(member_sid):
            raise _fail('%s: its stack %s is not in the resource listing '
                        '(listing not nested deep enough?)'
                        % (label, member_sid))
        slots.append(_slot(spec_group, idx, member_sid, label,
                           idx.get(member_sid, spec_group.ssh_cp_name),
                           parent=member['resource_name'],
                           group_sid=group_sid,
                           created=member.get('creation_time')))
    return slots


def _locate_named(idx, stack_id, name, rtype, what):
    """A resource by name: in the top stack, else unique in a nested stack."""
    res = idx.get(stack_id, name)
    if res is not None:
        if res.get('resource_type') != rtype:
            raise _fail("%s '%s' in stack %s is a %s, not a %s"
                        % (what, name, stack_id, res.get('resource_type'),
                           rtype))
        return stack_id, res
    found = idx.everywhere(name, rtype)
    if len(found) == 1:
        return found[0]
    if not found:
        raise _fail("%s '%s' not found in stack %s or its nested stacks"
                    % (what, name, stack_id))
    raise _fail("%s '%s' is not in stack %s and names %d resources in "
                "nested stacks %s; name a resource of the top stack"
                % (what, name, stack_id, len(found), [s for s, _ in found]))


def _locate_single(spec_group, stack_id, idx):
    port_sid, port = _locate_named(idx, stack_id, spec_group.ssh_cp_name,
                                   hx.PORT, 'port')
    label = "%s VDU with port '%s'" % (spec_group.role,
                                       spec_group.ssh_cp_name)
    return [_slot(spec_group, idx, port_sid, label, port, parent=None,
                  group_sid=None, created=None)]


def _slot(spec_group, idx, sid, label, ssh_port, parent, group_sid, created):
    if ssh_port is None or ssh_port.get('resource_type') != hx.PORT:
        ports = sorted(r['resource_name'] for r in idx.of_type(sid, hx.PORT))
        raise _fail("port '%s' not found in %s (stack %s); ports there: %s"
                    % (spec_group.ssh_cp_name, label, sid, ports))
    nic_port = idx.get(sid, spec_group.nic_port_name)
    if nic_port is None or nic_port.get('resource_type') != hx.PORT:
        raise _fail("nic port '%s' not found in %s (stack %s)"
                    % (spec_group.nic_port_name, label, sid))
    servers = idx.of_type(sid, hx.SERVER)
    # The listing's required_by tells which server uses the port, so only
    # that server needs to be shown when a stack holds several.
    users = set(ssh_port.get('required_by') or ())
    if len(servers) > 1 and users & {s['resource_name'] for s in servers}:
        servers = [s for s in servers if s['resource_name'] in users]
    if not servers:
        raise _fail('no OS::Nova::Server in %s (stack %s)' % (label, sid))
    servers.sort(key=hx.creation_sort_key)
    return _Slot(role=spec_group.role, label=label, stack_id=sid,
                 parent_resource=parent, group_stack_id=group_sid,
                 ssh_port=ssh_port, nic_port=nic_port, servers=tuple(servers),
                 floating_ips=tuple(idx.of_type(sid, hx.FLOATING_IP)),
                 creation_time=created or servers[0].get('creation_time'))


def _locate(spec, stack_id, idx):
    if not idx.stack(stack_id):
        raise _fail('stack %s has no resources in the listing (stacks seen: '
                    '%d)' % (stack_id, len(idx.by_stack)))
    slots = []
    for group in spec.groups:
        if group.role not in _ROLE_FIELD:
            raise _fail("unknown role '%s' (known: %s)"
                        % (group.role, sorted(_ROLE_FIELD)))
        if group.aspect_id:
            slots.extend(_locate_group_members(group, stack_id, idx))
        else:
            slots.extend(_locate_single(group, stack_id, idx))
    return slots


def needed_details(spec, stack_id, resources):
    """(stack_id, resource_name) of every resource whose attributes we read.

    Servers, the CPs named in the spec, floating IPs next to them, the VIP
    port and floating IP, volumes and server groups; nothing else.
    """
    idx = hx.ResourceIndex(resources)
    wanted = []
    for slot in _locate(spec, stack_id, idx):
        wanted += [(slot.stack_id, r['resource_name'])
                   for r in (slot.ssh_port, slot.nic_port) + slot.servers +
                   slot.floating_ips]
    for name, rtype in ((spec.cluster_cp_name, hx.PORT),
                        (spec.cluster_fip_name, None)):
        if name:
            sid, res = _locate_vip_resource(idx, stack_id, name, rtype)
            wanted.append((sid, res['resource_name']))
    for name in spec.volume_resource_ids:
        sid, res = _locate_named(idx, stack_id, name, hx.VOLUME, 'volume')
        wanted.append((sid, name))
    wanted += [(sid, r['resource_name'])
               for sid, r in idx.all_of_type(hx.SERVER_GROUP)]
    return list(dict.fromkeys(wanted))


def stack_refs(resources):
    """stack id -> 'stack_name/stack_id', the form Heat serves without a
    redirect (a bare id costs an extra lookup call per request)."""
    return dict(hx.ResourceIndex(resources).stack_refs)


def _locate_vip_resource(idx, stack_id, name, rtype):
    res = idx.get(stack_id, name)
    if res is not None and rtype is None:
        return stack_id, res
    if rtype is None:
        for candidate in (hx.FLOATING_IP, hx.PORT):
            if idx.everywhere(name, candidate):
                rtype = candidate
                break
        else:
            raise _fail("floating IP '%s' not found in stack %s or its "
                        "nested stacks" % (name, stack_id))
    return _locate_named(idx, stack_id, name, rtype, 'cluster resource')


class _Details(object):
    def __init__(self, details):
        self._details = details or {}

    def __call__(self, sid, res, label):
        detail = self._details.get((sid, res['resource_name']))
        if detail is None:
            raise _fail("no attributes fetched for resource '%s' of %s "
                        "(stack %s)" % (res['resource_name'], label, sid))
        return detail


def _first_ip(port_detail, port_name, label):
    ips = hx.fixed_ips(port_detail)
    if not ips:
        raise _fail("port '%s' of %s has no fixed IP" % (port_name, label))
    return ips[0]


def _port_id(port_res, port_detail):
    return hx.attribute(port_detail, 'id') or port_res.get(
        'physical_resource_id')


def _pick_server(slot, ssh_detail):
    device_id = hx.attribute(ssh_detail, 'device_id')
    if device_id:
        for server in slot.servers:
            if server.get('physical_resource_id') == device_id:
                return server
        raise _fail("port '%s' of %s is attached to device %s, which is not "
                    "a server of stack %s"
                    % (slot.ssh_port['resource_name'], slot.label, device_id,
                       slot.stack_id))
    if len(slot.servers) == 1:
        return slot.servers[0]
    raise _fail("port '%s' of %s is attached to no server; cannot tell "
                "which of %s it belongs to"
                % (slot.ssh_port['resource_name'], slot.label,
                   [s['resource_name'] for s in slot.servers]))


def _ssh_address(slot, ssh_detail, fixed_ip, details):
    port_id = _port_id(slot.ssh_port, ssh_detail)
    for fip in slot.floating_ips:
        fip_detail = details(slot.stack_id, fip, slot.label)
        if port_id and hx.attribute(fip_detail, 'port_id') == port_id:
            address = hx.attribute(fip_detail, 'floating_ip_address')
            if address:
                return address
    return fixed_ip


def _server_groups_of(server_id, server_detail, groups):
    ids = hx.attribute(server_detail, 'server_groups')
    if ids is None:
        # Nova before microversion 2.71 does not list them on the server.
        ids = [g.group_id for g in groups if server_id in g.members]
    return tuple(ids)


def _node_fields(slot, details, groups):
    ssh_detail = details(slot.stack_id, slot.ssh_port, slot.label)
    nic_detail = details(slot.stack_id, slot.nic_port, slot.label)
    fixed = _first_ip(ssh_detail, slot.ssh_port['resource_name'], slot.label)
    nic_ip = _first_ip(nic_detail, slot.nic_port['resource_name'], slot.label)
    server = _pick_server(slot, ssh_detail)
    server_id = server.get('physical_resource_id')
    if not server_id:
        raise _fail("server '%s' of %s has no server id (status %s)"
                    % (server['resource_name'], slot.label,
                       server.get('resource_status')))
    server_detail = details(slot.stack_id, server, slot.label)
    return dict(
        role=slot.role, server_id=server_id,
        resource_name=server['resource_name'], stack_id=slot.stack_id,
        parent_resource=slot.parent_resource,
        ssh_ip=_ssh_address(slot, ssh_detail, fixed, details), nic_ip=nic_ip,
        compute_host=hx.attribute(server_detail, 'OS-EXT-SRV-ATTR:host'),
        server_groups=_server_groups_of(server_id, server_detail, groups),
        status=server.get('resource_status'),
        group_stack_id=slot.group_stack_id, creation_time=slot.creation_time)


def _server_group_records(idx, details):
    records = []
    for sid, res in idx.all_of_type(hx.SERVER_GROUP):
        detail = details(sid, res, 'server groups')
        policies = hx.attribute(detail, 'policies') or ()
        policy = hx.attribute(detail, 'policy')
        if not policies and policy:
            policies = (policy,)
        records.append(model.ServerGroup(
            resource_name=res['resource_name'],
            group_id=res.get('physical_resource_id') or hx.attribute(
                detail, 'id'),
            policies=tuple(policies),
            members=tuple(hx.attribute(detail, 'members') or ())))
    return tuple(records)


def _volume_records(spec, stack_id, idx, details):
    records = []
    for name in spec.volume_resource_ids:
        sid, res = _locate_named(idx, stack_id, name, hx.VOLUME, 'volume')
        detail = details(sid, res, 'volumes')
        attachments = (hx.attribute(detail, 'attachments_list') or
                       hx.attribute(detail, 'attachments') or [])
        if isinstance(attachments, str):
            attachments = hx.parse_listish(attachments)
        first = attachments[0] if attachments else {}
        records.append(model.Volume(
            resource_name=name, volume_id=res.get('physical_resource_id'),
            device=first.get('device'), server_id=first.get('server_id')))
    return tuple(records)


def _vip_addresses(spec, stack_id, idx, details):
    vip = vip_fip = None
    if spec.cluster_cp_name:
        sid, res = _locate_vip_resource(idx, stack_id, spec.cluster_cp_name,
                                        hx.PORT)
        vip = _first_ip(details(sid, res, 'the cluster VIP'),
                        spec.cluster_cp_name, 'the cluster VIP')
    if spec.cluster_fip_name:
        sid, res = _locate_vip_resource(idx, stack_id, spec.cluster_fip_name,
                                        None)
        detail = details(sid, res, 'the cluster floating IP')
        if res.get('resource_type') == hx.PORT:
            vip_fip = _first_ip(detail, spec.cluster_fip_name,
                                'the cluster floating IP')
        else:
            vip_fip = hx.attribute(detail, 'floating_ip_address')
            if not vip_fip:
                raise _fail("floating IP '%s' has no floating_ip_address"
                            % spec.cluster_fip_name)
    return vip, vip_fip


def build_topology(spec, stack_id, resources, details, vnfc_ids=None):
    """The cluster's nodes, VIP and volumes from a nested resource listing
    and the shown resources named by :func:`needed_details`."""
    idx = hx.ResourceIndex(resources)
    fetched = _Details(details)
    groups = _server_group_records(idx, fetched)
    per_role = {role: [] for role in _ROLE_FIELD}
    for slot in _locate(spec, stack_id, idx):
        per_role[slot.role].append(_node_fields(slot, fetched, groups))
    vnfc_ids = vnfc_ids or {}
    fields = {}
    seen = {}
    for role, items in per_role.items():
        items.sort(key=lambda f: (f['creation_time'] or '',
                                  f['parent_resource'] or '',
                                  f['resource_name'], f['server_id']))
        naming.assign_names(items)
        for item in items:
            if item['server_id'] in seen:
                raise _fail('server %s is both a %s and a %s node'
                            % (item['server_id'], seen[item['server_id']],
                               role))
            seen[item['server_id']] = role
        fields[_ROLE_FIELD[role]] = tuple(
            model.Node(vnfc_id=vnfc_ids.get(f['server_id']), **f)
            for f in items)
    if spec.groups_of('master') and not fields['masters']:
        raise _fail('no master found in stack %s (master groups: %s)'
                    % (stack_id, [g.aspect_id or g.ssh_cp_name
                                  for g in spec.groups_of('master')]))
    vip, vip_fip = _vip_addresses(spec, stack_id, idx, fetched)
    return model.Topology(
        stack_id=stack_id, vip=vip, vip_fip=vip_fip,
        volumes=_volume_records(spec, stack_id, idx, fetched),
        server_groups=groups, **fields)
