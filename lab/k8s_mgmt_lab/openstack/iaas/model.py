"""The stand-in's one state: a network with its subnet, ports, servers,
server groups, flavors, images, volumes and compute hosts, as plain
JSON-ready records behind one lock, written to a file after every change
so another process can read it and a later one load it.

What two services show of one thing is derived, never stored twice: a
server's addresses are read from the ports whose ``device_id`` names it,
its attached volumes from the volumes' attachments, a group's members
from the servers that name it. So Nova and Neutron cannot disagree about
a MAC, and Nova and Cinder cannot disagree about an attachment.
"""

import datetime
import ipaddress
import json
import os
import random
import threading
import uuid

STATE_VERSION = 1
FIRST_HOST_OCTET = 10     # .1 is the host's bridge; leave room below .10
NETWORK_NAME = 'lab-net'
ZONE = 'nova'
GIB = 1024 ** 3
KINDS = ('networks', 'subnets', 'ports', 'servers', 'server_groups',
         'flavors', 'images', 'volumes')

# What the sample VNF package asks for (Definitions/*.yaml: m1.medium,
# ubuntu-22.04 of 2 GB with min_disk 0), plus smaller sizes for tests.
FLAVORS = (('m1.tiny', 1, 512, 1), ('m1.small', 1, 2048, 20),
           ('m1.medium', 2, 4096, 40), ('m1.large', 4, 8192, 80))
IMAGES = (('ubuntu-22.04-server-cloudimg-amd64', 2 * GIB),)


class IaasError(Exception):
    """An answer other than success: ``status`` is the HTTP code, ``kind``
    the name Neutron shows as its error type."""
    status = 500
    kind = 'InternalError'

    def __init__(self, message, kind=None):
        super(IaasError, self).__init__(message)
        self.message = message
        if kind:
            self.kind = kind


class NotFound(IaasError):
    status = 404
    kind = 'NotFound'


class BadRequest(IaasError):
    status = 400
    kind = 'BadRequest'


class Conflict(IaasError):
    status = 409
    kind = 'Conflict'


class Unsupported(IaasError):
    """What the lab does not imitate: said loudly, never faked."""
    status = 501
    kind = 'NotImplemented'


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def new_id():
    return str(uuid.uuid4())


class State(object):
    """The records and the lock every change holds; ``save()`` after a
    change (the operations do) writes them to ``path`` when one is set.
    The one network takes ``network_id`` when given: the id an
    instantiate request names in its extVirtualLinks."""

    def __init__(self, subnet='10.254.0.0/24', compute_hosts=3, path=None,
                 network_id=None):
        self.lock = threading.RLock()
        self.path = path
        self.data = {kind: {} for kind in KINDS}
        self.data['version'] = STATE_VERSION
        self.data['hosts'] = ['compute%02d' % n
                              for n in range(1, compute_hosts + 1)]
        self._seed(ipaddress.ip_network(subnet), network_id or new_id())
        self.save()

    @classmethod
    def load(cls, path):
        """The state another process saved at ``path``."""
        with open(path) as handle:
            data = json.load(handle)
        if data.get('version') != STATE_VERSION:
            raise ValueError('%s holds state version %r, not %d'
                             % (path, data.get('version'), STATE_VERSION))
        loaded = cls.__new__(cls)
        loaded.lock = threading.RLock()
        loaded.path = path
        loaded.data = data
        return loaded

    @classmethod
    def open(cls, path, subnet='10.254.0.0/24', compute_hosts=3,
             network_id=None):
        """The state saved at ``path``, resumed, or a new one saved there:
        what a lab that restarts its stand-ins wants. Work that was in
        flight when the last process stopped can never finish, so it is
        an error now (no BUILD or ``deleting`` stays so forever)."""
        if not os.path.exists(path):
            return cls(subnet, compute_hosts, path, network_id)
        resumed = cls.load(path)
        for server in resumed.data['servers'].values():
            if server['status'] == 'BUILD' or server['task_state']:
                server.update(status='ERROR', vm_state='error',
                              task_state=None, fault={
                                  'message': 'The lab stopped while the '
                                             'server was %s.'
                                             % server['task_state'],
                                  'code': 500, 'created': now()})
        for volume in resumed.data['volumes'].values():
            if volume['status'] in ('creating', 'deleting', 'attaching',
                                    'detaching'):
                volume['status'] = 'error'
        resumed.save()
        return resumed

    def save(self):
        """Write the state whole or not at all (a temporary file synced,
        then renamed), readable by its owner alone: servers' user_data
        can carry credentials."""
        if not self.path:
            return
        with self.lock:
            text = json.dumps(self.data, indent=1, sort_keys=True)
            temporary = self.path + '.tmp'
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT |
                                 os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, 'w') as handle:
                os.fchmod(handle.fileno(), 0o600)
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)

    def _seed(self, net, network_id):
        subnet_id = new_id()
        hosts = list(net.hosts())
        self.data['networks'][network_id] = {
            'id': network_id, 'name': NETWORK_NAME, 'subnets': [subnet_id],
            'status': 'ACTIVE', 'admin_state_up': True, 'shared': True,
            'router:external': False, 'mtu': 1500, 'project_id': '',
            'provider:network_type': 'flat', 'created_at': now()}
        self.data['subnets'][subnet_id] = {
            'id': subnet_id, 'name': NETWORK_NAME + '-subnet',
            'network_id': network_id, 'cidr': str(net), 'ip_version': 4,
            'gateway_ip': str(hosts[0]), 'enable_dhcp': False,
            'allocation_pools': [{
                'start': str(net.network_address + FIRST_HOST_OCTET),
                'end': str(hosts[-1])}],
            'dns_nameservers': [], 'host_routes': [], 'project_id': ''}
        for name, vcpus, ram, disk in FLAVORS:
            flavor_id = str(len(self.data['flavors']) + 1)
            self.data['flavors'][flavor_id] = {
                'id': flavor_id, 'name': name, 'vcpus': vcpus, 'ram': ram,
                'disk': disk}
        for name, size in IMAGES:
            image_id = new_id()
            self.data['images'][image_id] = {
                'id': image_id, 'name': name, 'status': 'active',
                'size': size, 'min_disk': 0, 'min_ram': 0,
                'disk_format': 'qcow2', 'container_format': 'bare',
                'visibility': 'public', 'created_at': now()}

    # Reading, under the lock by the caller.

    def records(self, kind):
        return self.data[kind]

    def get(self, kind, record_id, what=None):
        """The record, or NotFound named as the service names it."""
        found = self.data[kind].get(record_id or '')
        if found is None:
            what = what or kind[:-1].replace('_', ' ').title()
            raise NotFound('%s %s could not be found.' % (what, record_id),
                           kind=what.replace(' ', '') + 'NotFound')
        return found

    @property
    def hosts(self):
        return list(self.data['hosts'])

    def network(self):
        """The one network (the lab has one)."""
        return next(iter(self.data['networks'].values()))

    def subnet(self):
        return next(iter(self.data['subnets'].values()))

    def find_by_name(self, kind, name):
        return [r for r in self.data[kind].values() if r['name'] == name]

    # Derived views: what one service shows of another's records.

    def server_ports(self, server_id):
        """The ports bound to the server, in the order they were bound."""
        server = self.data['servers'].get(server_id) or {}
        ports = self.data['ports']
        return [ports[p] for p in server.get('port_ids', ())
                if p in ports and ports[p]['device_id'] == server_id]

    def addresses(self, server_id):
        """Nova's ``addresses``, read from the bound ports: a port unbound
        is gone from here at the same moment, MAC and all."""
        found = {}
        for port in self.server_ports(server_id):
            network = self.data['networks'][port['network_id']]
            entries = found.setdefault(network['name'], [])
            for fixed in port['fixed_ips']:
                entries.append({
                    'addr': fixed['ip_address'], 'version': 4,
                    'OS-EXT-IPS:type': 'fixed',
                    'OS-EXT-IPS-MAC:mac_addr': port['mac_address']})
        return found

    def port_status(self, port):
        server = self.data['servers'].get(port['device_id'] or '')
        return 'ACTIVE' if server and server['status'] == 'ACTIVE' \
            else 'DOWN'

    def attachments_of(self, server_id):
        """(volume, attachment) for every volume attached to the server."""
        return [(v, a) for v in self.data['volumes'].values()
                for a in v['attachments'] if a['server_id'] == server_id]

    def group_members(self, group_id):
        return [s for s in self.data['servers'].values()
                if s.get('group_id') == group_id]

    # Addresses.

    def allocate_ip(self, requested=None):
        """``requested`` if it is free on the subnet, else the first free
        address from .10 upwards."""
        net = ipaddress.ip_network(self.subnet()['cidr'])
        used = {f['ip_address'] for p in self.data['ports'].values()
                for f in p['fixed_ips']}
        if requested:
            try:
                address = ipaddress.ip_address(requested)
            except ValueError:
                raise BadRequest('Invalid input: %r is not an IP address.'
                                 % requested, kind='InvalidInput')
            if address not in net or address in (
                    net.network_address, net.broadcast_address,
                    net.network_address + 1):
                raise BadRequest(
                    'IP address %s is not a valid IP for the specified '
                    'subnet.' % requested, kind='InvalidIpForSubnet')
            if requested in used:
                raise Conflict(
                    'Unable to complete operation for network %s. The IP '
                    'address %s is in use.' % (self.network()['id'],
                                               requested),
                    kind='IpAddressAlreadyAllocated')
            return requested
        for address in net.hosts():
            if (int(address) - int(net.network_address) >= FIRST_HOST_OCTET
                    and str(address) not in used):
                return str(address)
        raise Conflict('No more IP addresses available on network %s.'
                       % self.network()['id'],
                       kind='IpAddressGenerationFailure')

    def new_mac(self):
        used = {p['mac_address'] for p in self.data['ports'].values()}
        while True:
            mac = 'fa:16:3e:%02x:%02x:%02x' % tuple(
                random.randrange(256) for _ in range(3))
            if mac not in used:
                return mac
