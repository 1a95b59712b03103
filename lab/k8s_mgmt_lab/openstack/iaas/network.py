"""Ports: created on the one network, given an address from its subnet
and a MAC, bound to a server and unbound from it. Binding and unbinding
are the only way a port's ``device_id`` changes, and they change the
server's list of ports in the same step, under the state's lock."""

import ipaddress

from k8s_mgmt_lab.openstack.iaas import model

UPDATABLE = ('name', 'admin_state_up', 'device_id', 'device_owner',
             'security_groups', 'binding:vnic_type', 'description',
             'binding:host_id', 'allowed_address_pairs')
DEFAULT_SECURITY_GROUP = 'default'


class Ports(object):

    def __init__(self, state):
        self.state = state

    def create(self, body, project_id=''):
        """A port from Neutron's request body (``{'port': ...}``' inside)."""
        state = self.state
        with state.lock:
            network = state.get('networks', body.get('network_id'),
                                'Network')
            # Looked up first: a port for no server is not kept.
            server = (state.get('servers', body['device_id'])
                      if body.get('device_id') else None)
            subnet = state.subnet()
            requested = body.get('fixed_ips') or [{}]
            if not isinstance(requested, list) or len(requested) != 1 or \
                    not isinstance(requested[0], dict):
                raise model.BadRequest(
                    'The lab network has one subnet: fixed_ips is a list '
                    'of at most one object.', kind='InvalidInput')
            wanted = requested[0]
            if wanted.get('subnet_id') not in (None, subnet['id']):
                raise model.BadRequest('Invalid subnet %s for network %s.' % (
                    wanted['subnet_id'], network['id']), kind='InvalidInput')
            mac = body.get('mac_address') or state.new_mac()
            if any(p['mac_address'] == mac
                   for p in state.records('ports').values()):
                raise model.Conflict(
                    'Unable to complete operation for network %s. The mac '
                    'address %s is in use.' % (network['id'], mac),
                    kind='MacAddressInUse')
            port = {
                'id': model.new_id(), 'name': body.get('name') or '',
                'network_id': network['id'], 'mac_address': mac,
                'fixed_ips': [{'subnet_id': subnet['id'],
                               'ip_address': state.allocate_ip(
                                   wanted.get('ip_address'))}],
                'admin_state_up': body.get('admin_state_up', True),
                'binding:vnic_type': body.get('binding:vnic_type',
                                              'normal'),
                'binding:host_id': '',
                'device_id': '', 'device_owner': '',
                'security_groups': list(body.get('security_groups') or ()),
                'allowed_address_pairs': address_pairs(
                    body.get('allowed_address_pairs'), mac),
                'description': body.get('description') or '',
                'project_id': project_id, 'created_at': model.now(),
                'updated_at': model.now(), 'made_by_nova': False}
            state.records('ports')[port['id']] = port
            if server is not None:
                self.bind(port, server,
                          body.get('device_owner') or 'compute:nova')
            state.save()
            return port

    def update(self, port_id, body):
        state = self.state
        with state.lock:
            port = state.get('ports', port_id, 'Port')
            unknown = set(body) - set(UPDATABLE)
            if unknown:
                raise model.BadRequest(
                    'The lab cannot update %s of a port.'
                    % ', '.join(sorted(unknown)), kind='HTTPBadRequest')
            if 'allowed_address_pairs' in body:
                body = dict(body, allowed_address_pairs=address_pairs(
                    body['allowed_address_pairs'], port['mac_address']))
            if 'device_id' in body and body['device_id'] != port[
                    'device_id']:
                # Looked up before anything changes: no half update.
                server = (state.get('servers', body['device_id'])
                          if body['device_id'] else None)
                self.unbind(port)
                if server is not None:
                    self.bind(port, server,
                              body.get('device_owner') or 'compute:nova')
            for key in UPDATABLE:
                if key in body and key != 'device_id':
                    port[key] = body[key]
            port['updated_at'] = model.now()
            state.save()
            return port

    def delete(self, port_id):
        """Remove the port, unbinding it first (its server loses it, as a
        Nova server does when its port is deleted under it)."""
        state = self.state
        with state.lock:
            port = state.get('ports', port_id, 'Port')
            self.unbind(port)
            del state.records('ports')[port_id]
            state.save()

    def bind(self, port, server, owner='compute:nova'):
        if port['device_id'] and port['device_id'] != server['id']:
            raise model.Conflict('Port %s is still in use.' % port['id'],
                                 kind='PortInUse')
        port['device_id'] = server['id']
        port['device_owner'] = owner
        port['binding:host_id'] = server.get('host') or ''
        if port['id'] not in server['port_ids']:
            server['port_ids'].append(port['id'])

    def unbind(self, port):
        server = self.state.records('servers').get(port['device_id'] or '')
        if server and port['id'] in server['port_ids']:
            server['port_ids'].remove(port['id'])
        port['device_id'] = ''
        port['device_owner'] = ''
        port['binding:host_id'] = ''


def address_pairs(pairs, mac):
    """Neutron's allowed_address_pairs: each an IP or CIDR, with the
    port's own MAC where the pair gives none."""
    made = []
    for pair in pairs or ():
        address = pair.get('ip_address') if isinstance(pair, dict) else None
        try:
            ipaddress.ip_network(address or '', strict=False)
        except ValueError:
            raise model.BadRequest(
                'Invalid input for allowed_address_pairs: %r is no IP '
                'address or CIDR.' % (address,), kind='InvalidInput')
        made.append({'ip_address': address,
                     'mac_address': pair.get('mac_address') or mac})
    return made
