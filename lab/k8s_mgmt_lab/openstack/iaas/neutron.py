"""Neutron's API (``/v2.0``, no version discovery, as Heat uses none)
over the shared state: the one network and its subnet, ports, and the
default security group. Lists take equality filters on any field shown
(repeated for several values) and ``fields=``; a filter on a field no
record has is a 400, as Neutron's filter validation makes it."""

from k8s_mgmt_lab.openstack.iaas import http
from k8s_mgmt_lab.openstack.iaas import model

PAGING = ('fields', 'limit', 'marker', 'sort_key', 'sort_dir',
          'page_reverse')
SECURITY_GROUP_ID = '00000000-0000-4000-8000-000000000001'


def _security_group(project_id):
    return {'id': SECURITY_GROUP_ID, 'name': 'default',
            'description': 'The lab does not filter traffic.',
            'project_id': project_id, 'tenant_id': project_id,
            'security_group_rules': [], 'stateful': True, 'tags': []}


class Neutron(http.Service):
    name = 'neutron'

    def __init__(self, state, ports):
        self.state = state
        self.ports = ports

    def routes(self):
        port = r'/v2\.0/ports/(?P<port_id>[^/]+)'
        return [
            ('GET', r'/v2\.0/networks', self.networks),
            ('GET', r'/v2\.0/networks/(?P<network_id>[^/]+)', self.network),
            ('GET', r'/v2\.0/subnets', self.subnets),
            ('GET', r'/v2\.0/subnets/(?P<subnet_id>[^/]+)', self.subnet),
            ('GET', r'/v2\.0/ports', self.list_ports),
            ('POST', r'/v2\.0/ports', self.create_port),
            ('GET', port, self.show_port),
            ('PUT', port, self.update_port),
            ('DELETE', port, self.delete_port),
            ('GET', r'/v2\.0/security-groups', self.security_groups),
            ('GET', r'/v2\.0/security-groups/(?P<group_id>[^/]+)',
             self.security_group),
        ]

    def error_body(self, error):
        kind = error.kind
        if error.status == 404 and not kind.endswith('NotFound'):
            kind = 'HTTPNotFound'
        return {'NeutronError': {'type': kind, 'message': error.message,
                                 'detail': ''}}

    def _listed(self, request, shown):
        """The records matching the query's filters, with ``fields``."""
        filters = {k: v for k, v in request.query.items()
                   if k not in PAGING}
        found = []
        for record in shown:
            for key, values in filters.items():
                if key not in record and key != 'fixed_ips':
                    raise model.BadRequest(
                        '%s is an invalid filter.' % key,
                        kind='HTTPBadRequest')
                if not _matches(record, key, values):
                    break
            else:
                found.append(http.wanted_fields(request, record))
        return found

    def _network_view(self, network):
        return dict(network, tenant_id=network['project_id'])

    def networks(self, request):
        with self.state.lock:
            shown = [self._network_view(n)
                     for n in self.state.records('networks').values()]
            return http.ok({'networks': self._listed(request, shown)})

    def network(self, request):
        with self.state.lock:
            found = self.state.get('networks', request.params['network_id'],
                                   'Network')
            return http.ok({'network': http.wanted_fields(
                request, self._network_view(found))})

    def subnets(self, request):
        with self.state.lock:
            shown = [dict(s, tenant_id=s['project_id'])
                     for s in self.state.records('subnets').values()]
            return http.ok({'subnets': self._listed(request, shown)})

    def subnet(self, request):
        with self.state.lock:
            found = self.state.get('subnets', request.params['subnet_id'],
                                   'Subnet')
            return http.ok({'subnet': http.wanted_fields(
                request, dict(found, tenant_id=found['project_id']))})

    def _port_view(self, port):
        shown = {k: v for k, v in port.items() if k != 'made_by_nova'}
        bound = bool(port['device_id'])
        shown.update({
            'status': self.state.port_status(port),
            'tenant_id': port['project_id'],
            'binding:vif_type': 'ovs' if bound else 'unbound',
            'binding:vif_details': {}, 'binding:profile': {},
            'allowed_address_pairs': [dict(pair) for pair in port.get(
                'allowed_address_pairs') or ()],
            'extra_dhcp_opts': [],
            'port_security_enabled': True, 'tags': [],
            'fixed_ips': [dict(f) for f in port['fixed_ips']]})
        return shown

    def list_ports(self, request):
        with self.state.lock:
            shown = [self._port_view(p)
                     for p in self.state.records('ports').values()]
            return http.ok({'ports': self._listed(request, shown)})

    def show_port(self, request):
        with self.state.lock:
            found = self.state.get('ports', request.params['port_id'], 'Port')
            return http.ok({'port': http.wanted_fields(
                request, self._port_view(found))})

    def create_port(self, request):
        wanted = request.json('port')
        if 'network_id' not in wanted:
            raise model.BadRequest("Failed to parse request. Required "
                                   "attribute 'network_id' not specified",
                                   kind='HTTPBadRequest')
        groups = wanted.get('security_groups')
        if groups and any(g != SECURITY_GROUP_ID for g in groups):
            raise model.NotFound('Security group %s does not exist' % (
                [g for g in groups if g != SECURITY_GROUP_ID][0]),
                kind='SecurityGroupNotFound')
        made = self.ports.create(wanted, request.caller.project_id)
        with self.state.lock:
            return http.ok({'port': self._port_view(made)}, 201)

    def update_port(self, request):
        wanted = request.json('port')
        changed = self.ports.update(request.params['port_id'], wanted)
        with self.state.lock:
            return http.ok({'port': self._port_view(changed)})

    def delete_port(self, request):
        self.ports.delete(request.params['port_id'])
        return http.no_content()

    def security_groups(self, request):
        shown = [_security_group(request.caller.project_id)]
        return http.ok({'security_groups': self._listed(request, shown)})

    def security_group(self, request):
        if request.params['group_id'] != SECURITY_GROUP_ID:
            raise model.NotFound('Security group %s does not exist'
                                 % request.params['group_id'],
                                 kind='SecurityGroupNotFound')
        return http.ok({'security_group': _security_group(
            request.caller.project_id)})


def _matches(record, key, values):
    if key == 'fixed_ips':
        wanted = [v.split('=', 1) for v in values]
        if any(len(pair) != 2 for pair in wanted):
            raise model.BadRequest('fixed_ips filters are key=value: %s.'
                                   % ', '.join(values),
                                   kind='HTTPBadRequest')
        return all(any(f.get(k) == v for f in record['fixed_ips'])
                   for k, v in wanted)
    return str(record[key]) in values or (
        isinstance(record[key], bool) and
        str(record[key]).lower() in [v.lower() for v in values])
