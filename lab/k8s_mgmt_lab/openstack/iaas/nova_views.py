"""Nova's JSON for the state's records: servers, flavors, server groups
and interface and volume attachments, in the shape the microversion
asks for (the flavor embedded in a server from 2.47, a group's single
``policy`` from 2.64, a flavor's ``swap`` a number from 2.75)."""

import hashlib

from k8s_mgmt_lab.openstack.iaas import model


def links(base, kind, record_id):
    return [{'rel': 'self', 'href': '%s/v2.1/%s/%s' % (base, kind,
                                                       record_id)},
            {'rel': 'bookmark', 'href': '%s/%s/%s' % (base, kind,
                                                      record_id)}]


def flavor(record, base, version):
    shown = {'id': record['id'], 'name': record['name'],
             'ram': record['ram'], 'vcpus': record['vcpus'],
             'disk': record['disk'], 'OS-FLV-EXT-DATA:ephemeral': 0,
             'OS-FLV-DISABLED:disabled': False,
             'os-flavor-access:is_public': True, 'rxtx_factor': 1.0,
             'swap': 0 if version >= (2, 75) else '',
             'links': links(base, 'flavors', record['id'])}
    if version >= (2, 55):
        shown['description'] = None
    if version >= (2, 61):
        shown['extra_specs'] = {}
    return shown


def server(state, record, base, version, admin):
    """The server as GET /servers/{id} shows it; under the state's lock."""
    flavor_record = state.records('flavors').get(record['flavor_id'], {})
    if version >= (2, 47):
        shown_flavor = {
            'original_name': flavor_record.get('name'),
            'vcpus': flavor_record.get('vcpus'),
            'ram': flavor_record.get('ram'),
            'disk': flavor_record.get('disk'), 'ephemeral': 0, 'swap': 0,
            'extra_specs': {}}
    else:
        shown_flavor = {'id': record['flavor_id'],
                        'links': links(base, 'flavors', record['flavor_id'])}
    image = ({'id': record['image_id'],
              'links': links(base, 'images', record['image_id'])}
             if record['image_id'] else '')
    volumes = [{'id': v['id'],
                'delete_on_termination': a['delete_on_termination']}
               for v, a in state.attachments_of(record['id'])]
    host_id = hashlib.sha224(('%s%s' % (record['tenant_id'],
                                        record['host'] or '')).encode()
                             ).hexdigest() if record['host'] else ''
    shown = {
        'id': record['id'], 'name': record['name'],
        'status': record['status'], 'tenant_id': record['tenant_id'],
        'user_id': record['user_id'], 'metadata': record['metadata'],
        'hostId': host_id, 'image': image, 'flavor': shown_flavor,
        'created': record['created'], 'updated': record['updated'],
        'addresses': state.addresses(record['id']),
        'accessIPv4': '', 'accessIPv6': '', 'progress': 0,
        'links': links(base, 'servers', record['id']),
        'OS-DCF:diskConfig': 'MANUAL', 'config_drive': '',
        'key_name': record['key_name'],
        'OS-EXT-AZ:availability_zone': record['zone'],
        'OS-EXT-STS:task_state': record['task_state'],
        'OS-EXT-STS:vm_state': record['vm_state'],
        'OS-EXT-STS:power_state': record['power_state'],
        'OS-SRV-USG:launched_at': record['launched_at'],
        'OS-SRV-USG:terminated_at': None,
        'os-extended-volumes:volumes_attached': volumes,
        'security_groups': [{'name': 'default'}],
        'locked': False, 'tags': [], 'description': None}
    if record['fault'] and record['status'] == 'ERROR':
        shown['fault'] = dict(record['fault'])
    if admin:
        shown.update({
            'OS-EXT-SRV-ATTR:host': record['host'],
            'OS-EXT-SRV-ATTR:hypervisor_hostname': record['host'],
            'OS-EXT-SRV-ATTR:instance_name': 'instance-%s'
                                             % record['id'][:8]})
    return shown


def server_brief(record, base):
    return {'id': record['id'], 'name': record['name'],
            'links': links(base, 'servers', record['id'])}


def interface(state, port):
    return {'port_id': port['id'], 'net_id': port['network_id'],
            'mac_addr': port['mac_address'],
            'port_state': state.port_status(port),
            'fixed_ips': [dict(f) for f in port['fixed_ips']],
            'tag': None}


def volume_attachment(attachment):
    return {'id': attachment['volume_id'],
            'volumeId': attachment['volume_id'],
            'serverId': attachment['server_id'],
            'device': attachment['device'], 'tag': None,
            'delete_on_termination': attachment['delete_on_termination'],
            'attachment_id': attachment['attachment_id']}


def server_group(state, group, version):
    shown = {'id': group['id'], 'name': group['name'],
             'members': [s['id'] for s in state.group_members(group['id'])],
             'metadata': group['metadata'],
             'project_id': group['project_id'], 'user_id': group['user_id']}
    if version >= (2, 64):
        shown.update(policy=group['policy'], rules=group['rules'])
    else:
        shown['policies'] = [group['policy']]
    return shown


def hypervisor(state, index, host):
    running = [s for s in state.records('servers').values()
               if s['host'] == host]
    return {'id': index + 1, 'hypervisor_hostname': host, 'state': 'up',
            'status': 'enabled', 'running_vms': len(running),
            'host_ip': '127.0.0.1', 'hypervisor_type': 'lab',
            'servers': [{'uuid': s['id'], 'name': s['name']}
                        for s in running]}


def zone():
    return {'zoneName': model.ZONE, 'zoneState': {'available': True},
            'hosts': None}
