"""Per-resource-type behaviour of the lab cloud (:mod:`k8s_mgmt_lab.cloud`).

``create`` gives a new resource its physical id and simulated state;
``attributes`` renders what Heat's resource show returns for it (the Nova,
Neutron or Cinder "show" dict, as real Heat does when no ``with_attr`` is
asked for, plus a ``show`` key holding the same dict). All functions run with
the cloud's lock held.
"""

import collections
import datetime
import random
import string
import uuid

from k8s_mgmt_lab import cloud_volumes as volumes
from k8s_mgmt_lab.errors import LabCloudError
from k8s_mgmt_lab import hot


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def short_id(length=12):
    # Heat names group members and nested stacks with random lowercase ids.
    alphabet = string.ascii_lowercase + string.digits
    return ''.join(random.choice(alphabet) for _ in range(length))


def create(cloud, stack, res, template, new_servers):
    kind, props = res['type'], res['properties']
    res['physical_id'] = str(uuid.uuid4())
    if kind == hot.PORT:
        network_id, network_name = cloud.network(props.get('network'))
        fixed = [f.get('ip_address') for f in props.get('fixed_ips') or []
                 if isinstance(f, dict) and f.get('ip_address')]
        ip = fixed[0] if fixed else cloud.allocate_ip(res['physical_id'])
        cloud.state['addresses'][ip] = res['physical_id']
        res['data'] = {'ip': ip, 'mac': _mac(res['physical_id']),
                       'network': network_name, 'network_id': network_id,
                       'device_id': '',
                       'allowed_address_pairs': [
                           {'ip_address': p.get('ip_address'),
                            'mac_address': p.get('mac_address') or
                            _mac(res['physical_id'])}
                           for p in props.get('allowed_address_pairs') or []]}
    elif kind == hot.FLOATING_IP:
        res['data'] = {'ip': cloud.allocate_ip(res['physical_id']),
                       'port_id': props.get('port_id')}
    elif kind == hot.SERVER_GROUP:
        policies = props.get('policies') or [props.get('policy')]
        res['data'] = {'name': props.get('name', res['name']),
                       'policies': [p for p in policies if p], 'members': []}
    elif kind == hot.VOLUME:
        res['data'] = volumes.volume_data(res)
    elif kind == hot.VOLUME_ATTACHMENT:
        volumes.attach(cloud, stack['root'], props['volume_id'],
                       props['instance_uuid'])
    elif kind == hot.SERVER:
        _create_server(cloud, stack, res, new_servers)
    elif kind == hot.SCALING_GROUP:
        _create_group(cloud, stack, res, template, new_servers)
    elif kind == hot.SCALING_POLICY:
        res['data'] = {}
    else:
        nested = cloud.build_stack(
            hot.nested_template(template, template.find_nested(kind)), props,
            '%s-%s-%s' % (stack['name'], res['name'], short_id()),
            stack['id'], res['name'], stack['root'], new_servers)
        res['physical_id'] = res['nested'] = nested['id']


def _mac(physical_id):
    tail = physical_id.replace('-', '')[-6:]
    return 'fa:16:3e:%s:%s:%s' % (tail[0:2], tail[2:4], tail[4:6])


def _create_server(cloud, stack, res, new_servers):
    props, server_id = res['properties'], res['physical_id']
    ports = [net['port'] for net in props.get('networks') or []
             if isinstance(net, dict) and net.get('port')]
    for port_id in ports:
        _, port = cloud._find_physical(stack['root'], port_id, hot.PORT)
        port['data']['device_id'] = server_id
    group_id = (props.get('scheduler_hints') or {}).get('group')
    res['data'] = {'ports': ports,
                   'server_groups': [group_id] if group_id else [],
                   'display_name': props.get('name', res['name']),
                   'flavor': props.get('flavor'), 'image': props.get('image'),
                   'compute_host': place_server(cloud, stack['root'],
                                                group_id, server_id)}
    if group_id:
        _group(cloud, stack['root'], group_id)['data']['members'].append(
            server_id)
    for mapping in props.get('block_device_mapping_v2') or []:
        if mapping.get('volume_id'):
            volumes.attach(cloud, stack['root'], mapping['volume_id'],
                           server_id)
    new_servers.append(server_id)


def place_server(cloud, root_id, group_id, server_id):
    """Pick a compute host: spread load, honour the server group policy."""
    load = collections.Counter()
    for stack in cloud.state['stacks'].values():
        for res in stack['resources'].values():
            if (res['type'] == hot.SERVER
                    and res['physical_id'] != server_id):
                load[res['data'].get('compute_host')] += 1
    hosts = list(cloud.state['compute_hosts'])
    if group_id:
        _, group = cloud._find_physical(root_id, group_id, hot.SERVER_GROUP)
        used = {_server_host(cloud, root_id, member)
                for member in group['data']['members']
                if member != server_id}
        policies = group['data']['policies']
        if 'anti-affinity' in policies:
            hosts = [h for h in hosts if h not in used]
        elif 'affinity' in policies and used:
            hosts = [h for h in hosts if h in used]
        if not hosts:
            raise LabCloudError(
                reason='server group %s (%s): no compute host left for '
                       'another member; %d hosts, %d members already '
                       'placed'
                       % (group['name'], ', '.join(policies),
                          len(cloud.state['compute_hosts']), len(used)))
    return min(hosts, key=lambda h: (load[h], h))


def _server_host(cloud, root_id, server_id):
    return cloud._find_physical(root_id, server_id, hot.SERVER)[1][
        'data']['compute_host']


def _group(cloud, root, group_id):
    return cloud._find_physical(root, group_id, hot.SERVER_GROUP)[1]


def _create_group(cloud, stack, res, template, new_servers):
    props = res['properties']
    member = props['resource']
    group_stack = {
        'id': res['physical_id'],
        'name': '%s-%s-%s' % (stack['name'], res['name'], short_id()),
        'template': None, 'parameters': {}, 'parent': stack['id'],
        'parent_resource': res['name'], 'root': stack['root'],
        'status': 'CREATE_COMPLETE', 'creation_time': res['creation_time'],
        'updated_time': None, 'description': '', 'resources': {},
        'generated_template': {'heat_template_version': '2015-04-30',
                               'resources': {}}}
    cloud.state['stacks'][group_stack['id']] = group_stack
    minimum = int(props.get('min_size', 0))
    maximum = max(int(props.get('max_size', minimum)),
                  cloud.state.get('group_max_sizes', {}).get(
                      _group_vdu(template, res['name']), 0))
    desired = int(props.get('desired_capacity', minimum))
    if not minimum <= desired <= maximum:  # Heat refuses such a group too
        raise LabCloudError(reason='%s: desired_capacity %d is outside '
                            'min_size %d .. max_size %d' % (
                                res['name'], desired, minimum, maximum))
    res['nested'] = group_stack['id']
    res['data'] = {'min': minimum, 'max': maximum, 'desired': desired,
                   'member_type': member['type'],
                   'member_template': template.find_nested(member['type']),
                   'member_parameters': member.get('properties') or {}}
    for _ in range(res['data']['desired']):
        add_member(cloud, stack, res, new_servers)


def _group_vdu(template, name):
    """The VDU whose desired_capacity parameter sizes group ``name``."""
    wanted = (template.resources[name].get('properties') or {}).get(
        'desired_capacity')
    path = wanted.get('get_param') if isinstance(wanted, dict) else None
    return path[2] if isinstance(path, list) and len(path) == 4 else None


def add_member(cloud, top, group, new_servers):
    """One new member nested stack in an AutoScalingGroup; its resource."""
    group_stack = cloud.state['stacks'][group['nested']]
    data = group['data']
    name = short_id()
    for other in group_stack['resources'].values():
        other['status'], other['updated_time'] = 'UPDATE_COMPLETE', \
            top['updated_time'] or other['updated_time']
    member_stack = cloud.build_stack(
        cloud.nested_template(top['root'], data['member_template']),
        data['member_parameters'],
        '%s-%s-%s' % (group_stack['name'], name, short_id()),
        group_stack['id'], name, top['root'], new_servers)
    member = {'name': name, 'type': data['member_type'],
              'physical_id': member_stack['id'], 'nested': member_stack['id'],
              'status': 'CREATE_COMPLETE', 'reason': 'state changed',
              'creation_time': member_stack['creation_time'],
              'updated_time': member_stack['creation_time'],
              'required_by': [], 'data': {}, 'properties':
              data['member_parameters']}
    group_stack['resources'][name] = member
    group_stack['generated_template']['resources'][name] = {
        'type': data['member_type'], 'properties': data['member_parameters']}
    return member


def _is_unhealthy(cloud, member):
    if member['status'] == 'CHECK_FAILED':
        return True
    nested = cloud.state['stacks'][member['nested']]
    return any(r['status'] == 'CHECK_FAILED'
               for r in nested['resources'].values())


def remove_member(cloud, top, group, gone_servers):
    """Remove one member as Heat's AutoScalingGroup does: a failed
    (unhealthy) one first, else the oldest. Heat sorts the members by
    (not failed, creation time, name) and keeps the last ones."""
    group_stack = cloud.state['stacks'][group['nested']]
    # The group stack's resources are in creation order, oldest first.
    members = list(group_stack['resources'].values())
    unhealthy = [m for m in members if _is_unhealthy(cloud, m)]
    victim = (unhealthy or members)[0]
    gone_servers.extend(delete_tree(cloud, cloud.state['stacks'][
        victim['nested']]))
    del group_stack['resources'][victim['name']]
    del group_stack['generated_template']['resources'][victim['name']]
    return victim


def delete_tree(cloud, stack, keep_top=False):
    """Delete a stack and everything below it; the server ids deleted.
    ``keep_top``: the stack's own record stays, with no resources (what
    Heat answers for a deleted stack by id)."""
    servers = []
    for res in reversed(list(stack['resources'].values())):
        if res.get('nested') and res['nested'] in cloud.state['stacks']:
            servers.extend(delete_tree(cloud,
                                       cloud.state['stacks'][res['nested']]))
        if res['type'] in (hot.PORT, hot.FLOATING_IP):
            cloud.release_ip(res['data']['ip'])
        elif res['type'] == hot.SERVER:
            servers.append(res['physical_id'])
            _leave_groups(cloud, stack['root'], res)
    if keep_top:
        stack['resources'] = {}
    else:
        del cloud.state['stacks'][stack['id']]
        cloud.forget_events(stack['id'])
    return servers


def _leave_groups(cloud, root, server):
    for group_id in server['data']['server_groups']:
        try:
            members = _group(cloud, root, group_id)['data']['members']
        except Exception:   # the group went first (whole stack deleted)
            continue
        if server['physical_id'] in members:
            members.remove(server['physical_id'])


def replace_server(cloud, root, res):
    """Give a server a new id and maybe a new host; its port (IP) stays."""
    old_id = res['physical_id']
    _leave_groups(cloud, root, res)
    new_id = str(uuid.uuid4())
    res['physical_id'] = new_id
    groups = res['data']['server_groups']
    res['data']['compute_host'] = place_server(
        cloud, root, groups[0] if groups else None, new_id)
    for group_id in groups:
        _group(cloud, root, group_id)['data']['members'].append(new_id)
    for port_id in res['data']['ports']:
        cloud._find_physical(root, port_id, hot.PORT)[1]['data'][
            'device_id'] = new_id
    volumes.move_attachments(cloud, old_id, new_id)
    res.update(status='CREATE_COMPLETE', reason='state changed',
               creation_time=now(), updated_time=now())
    return new_id


def _by_physical(cloud, physical_id):
    for stack in cloud.state['stacks'].values():
        for res in stack['resources'].values():
            if res['physical_id'] == physical_id:
                return res
    return None


def _floating_ips_of(cloud, port_id):
    return [res for stack in cloud.state['stacks'].values()
            for res in stack['resources'].values()
            if res['type'] == hot.FLOATING_IP and
            res['data'].get('port_id') == port_id]


def attributes(cloud, res):
    """What Heat's resource show puts under ``attributes`` for ``res``."""
    render = _RENDERERS.get(res['type'])
    shown = render(cloud, res) if render else {}
    if res['type'] in _RENDERERS and res['type'] not in (
            hot.SCALING_GROUP, hot.SCALING_POLICY):
        shown = dict(shown, show=dict(shown))
    return shown


def _server(cloud, res):
    data, addresses = res['data'], {}
    for port_id in data['ports']:
        port = _by_physical(cloud, port_id)
        if port is None:
            continue
        entries = addresses.setdefault(port['data']['network'], [])
        entries.append({'version': 4, 'addr': port['data']['ip'],
                        'OS-EXT-IPS:type': 'fixed',
                        'OS-EXT-IPS-MAC:mac_addr': port['data']['mac']})
        for fip in _floating_ips_of(cloud, port_id):
            entries.append({'version': 4, 'addr': fip['data']['ip'],
                            'OS-EXT-IPS:type': 'floating',
                            'OS-EXT-IPS-MAC:mac_addr': port['data']['mac']})
    return {'id': res['physical_id'], 'name': data['display_name'],
            'status': 'ERROR' if res['status'] == 'CHECK_FAILED' else 'ACTIVE',
            'tenant_id': cloud.project_id, 'addresses': addresses,
            'flavor': {'original_name': data['flavor']},
            'image': {'id': data['image']}, 'metadata': {},
            'created': res['creation_time'], 'updated': res['updated_time'],
            'OS-EXT-SRV-ATTR:host': data['compute_host'],
            'OS-EXT-SRV-ATTR:hypervisor_hostname': data['compute_host'],
            'OS-EXT-SRV-ATTR:hostname': data['display_name'].lower(),
            'OS-EXT-AZ:availability_zone': 'nova',
            'OS-EXT-STS:vm_state': 'active',
            'os-extended-volumes:volumes_attached':
                volumes.volumes_attached(cloud, res['physical_id']),
            'server_groups': list(data['server_groups'])}


def _port(cloud, res):
    data = res['data']
    return {'id': res['physical_id'], 'name': res['name'],
            'network_id': data['network_id'],
            'mac_address': data['mac'],
            'fixed_ips': [{'subnet_id': cloud.state['subnet_id'],
                           'ip_address': data['ip']}],
            'device_id': data['device_id'],
            'device_owner': 'compute:nova' if data['device_id'] else '',
            'allowed_address_pairs': data['allowed_address_pairs'],
            'status': 'ACTIVE' if data['device_id'] else 'DOWN',
            'admin_state_up': True, 'tenant_id': cloud.project_id}


def _floating_ip(cloud, res):
    port = _by_physical(cloud, res['data']['port_id'] or '')
    return {'id': res['physical_id'],
            'floating_ip_address': res['data']['ip'],
            'floating_network_id': cloud.state['network_id'],
            'port_id': res['data']['port_id'],
            'fixed_ip_address': port['data']['ip'] if port else None,
            'status': 'ACTIVE' if port else 'DOWN',
            'tenant_id': cloud.project_id}


def _server_group(cloud, res):
    data = res['data']
    return {'id': res['physical_id'], 'name': data['name'],
            'policy': data['policies'][0] if data['policies'] else None,
            'policies': list(data['policies']), 'rules': {},
            'members': list(data['members']), 'project_id': cloud.project_id}


def _volume(cloud, res):
    return volumes.show(res, lambda sid: _host_of(cloud, sid))


def _host_of(cloud, server_id):
    server = _by_physical(cloud, server_id)
    return server['data']['compute_host'] if server else None


def _scaling_group(cloud, res):
    members = cloud.state['stacks'][res['nested']]['resources']
    return {'current_size': len(members),
            'refs': [m['physical_id'] for m in members.values()],
            'refs_map': {name: m['physical_id']
                         for name, m in members.items()},
            'outputs': {}, 'outputs_list': {}}


def _scaling_policy(cloud, res):
    return {'alarm_url': '', 'signal_url': ''}


_RENDERERS = {hot.SERVER: _server, hot.PORT: _port,
              hot.FLOATING_IP: _floating_ip, hot.SERVER_GROUP: _server_group,
              hot.VOLUME: _volume, hot.SCALING_GROUP: _scaling_group,
              hot.SCALING_POLICY: _scaling_policy}
