"""Nova's API (``/v2.1``) over the shared state: version documents,
flavors, servers, their interfaces, volume attachments and console,
server groups, availability zones and hypervisors.

The microversion comes from ``X-OpenStack-Nova-API-Version`` or
``OpenStack-API-Version: compute X`` (2.1 when neither) and is echoed
back with ``Vary``, as Nova does; one outside 2.1..2.96 is a 406.
"""

import re

from k8s_mgmt_lab.openstack.iaas import http
from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import nova_views as views

MIN_VERSION, MAX_VERSION = '2.1', '2.96'
SERVER = r'/v2\.1/servers/(?P<server_id>[^/]+)'
ERROR_NAMES = {400: 'badRequest', 401: 'unauthorized', 403: 'forbidden',
               404: 'itemNotFound', 405: 'methodNotAllowed',
               406: 'notAcceptable', 409: 'conflictingRequest',
               501: 'notImplemented'}


def version_document(base):
    return {'id': 'v2.1', 'status': 'CURRENT', 'version': MAX_VERSION,
            'min_version': MIN_VERSION, 'updated': '2013-07-23T11:33:21Z',
            'links': [{'rel': 'self', 'href': base + '/v2.1/'}],
            'media-types': [{
                'base': 'application/json',
                'type': 'application/vnd.openstack.compute+json;version=2.1'
            }]}


def requested_version(headers):
    text = None
    for value in headers.get_all('OpenStack-API-Version') or ():
        service, _, number = value.strip().partition(' ')
        if service.lower() == 'compute':
            text = number.strip()
    if text is None:
        text = headers.get('X-OpenStack-Nova-API-Version')
    if not text:
        return MIN_VERSION
    if text == 'latest':
        return MAX_VERSION
    if not re.match(r'^\d+\.\d+$', text) or not (
            views.version_tuple(MIN_VERSION) <= views.version_tuple(text)
            <= views.version_tuple(MAX_VERSION)):
        error = model.IaasError(
            'Version %s is not supported by the API. Minimum is %s and '
            'maximum is %s.' % (text, MIN_VERSION, MAX_VERSION))
        error.status = 406
        raise error
    return text


class Nova(http.Service):
    name = 'nova'
    OPEN = ('/', r'/v2\.1/?')

    def __init__(self, state, compute, actions):
        self.state = state
        self.compute = compute
        self.actions = actions

    def routes(self):
        return [
            ('GET', '/', self.versions),
            ('GET', r'/v2\.1/?', self.version),
            ('GET', r'/v2\.1/flavors(/detail)?', self.flavors),
            ('GET', r'/v2\.1/flavors/(?P<flavor_id>[^/]+)', self.flavor),
            ('GET', r'/v2\.1/flavors/(?P<flavor_id>[^/]+)/os-extra_specs',
             self.extra_specs),
            ('POST', r'/v2\.1/servers', self.create_server),
            ('GET', r'/v2\.1/servers(?P<detail>/detail)?', self.servers),
            ('GET', SERVER, self.server),
            ('DELETE', SERVER, self.delete_server),
            ('POST', SERVER + '/action', self.action),
            ('GET', SERVER + '/os-interface', self.interfaces),
            ('POST', SERVER + '/os-interface', self.attach_interface),
            ('GET', SERVER + '/os-interface/(?P<port_id>[^/]+)',
             self.interface),
            ('DELETE', SERVER + '/os-interface/(?P<port_id>[^/]+)',
             self.detach_interface),
            ('GET', SERVER + '/os-volume_attachments', self.attachments),
            ('POST', SERVER + '/os-volume_attachments', self.attach_volume),
            ('GET', SERVER + '/os-volume_attachments/(?P<volume_id>[^/]+)',
             self.attachment),
            ('DELETE',
             SERVER + '/os-volume_attachments/(?P<volume_id>[^/]+)',
             self.detach_volume),
            ('GET', r'/v2\.1/os-server-groups', self.groups),
            ('POST', r'/v2\.1/os-server-groups', self.create_group),
            ('GET', r'/v2\.1/os-server-groups/(?P<group_id>[^/]+)',
             self.group),
            ('DELETE', r'/v2\.1/os-server-groups/(?P<group_id>[^/]+)',
             self.delete_group),
            ('GET', r'/v2\.1/os-availability-zone(/detail)?', self.zones),
            ('GET', r'/v2\.1/os-hypervisors(/detail)?', self.hypervisors),
        ]

    def error_body(self, error):
        name = ERROR_NAMES.get(error.status, 'computeFault')
        return {name: {'code': error.status, 'message': error.message}}

    def decorate(self, request, response):
        try:
            version = requested_version(request.headers)
        except model.IaasError:
            version = MIN_VERSION
        response.headers.update({
            'OpenStack-API-Version': 'compute %s' % version,
            'X-OpenStack-Nova-API-Version': version,
            'Vary': 'OpenStack-API-Version, X-OpenStack-Nova-API-Version'})

    @staticmethod
    def _version(request):
        return views.version_tuple(requested_version(request.headers))

    def versions(self, request):
        return http.ok({'versions': [version_document(request.base_url)]})

    def version(self, request):
        return http.ok({'version': version_document(request.base_url)})

    # Flavors.

    def flavors(self, request):
        version = self._version(request)
        with self.state.lock:
            found = list(self.state.records('flavors').values())
            if request.path.endswith('/detail'):
                return http.ok({'flavors': [views.flavor(
                    f, request.base_url, version) for f in found]})
        return http.ok({'flavors': [
            {'id': f['id'], 'name': f['name'],
             'links': views.links(request.base_url, 'flavors', f['id'])}
            for f in found]})

    def flavor(self, request):
        version = self._version(request)
        with self.state.lock:
            found = self.state.get('flavors', request.params['flavor_id'],
                                   'Flavor')
            return http.ok({'flavor': views.flavor(found, request.base_url,
                                                   version)})

    def extra_specs(self, request):
        with self.state.lock:
            self.state.get('flavors', request.params['flavor_id'], 'Flavor')
        return http.ok({'extra_specs': {}})

    # Servers.

    def create_server(self, request):
        self._version(request)
        body = request.json()
        wanted = body.get('server')
        if not isinstance(wanted, dict):
            raise model.BadRequest("Invalid input: no 'server' object.")
        hints = body.get('os:scheduler_hints') or body.get(
            'OS-SCH-HNT:scheduler_hints') or {}
        made = self.compute.create(wanted, request.caller, hints)
        return http.ok({'server': {
            'id': made['id'], 'OS-DCF:diskConfig': 'MANUAL',
            'security_groups': [{'name': 'default'}], 'adminPass': '',
            'links': views.links(request.base_url, 'servers', made['id'])}},
            202)

    def _visible(self, request, record):
        every = request.caller.is_admin and request.arg('all_tenants') in (
            '1', 'True', 'true', '')
        return every or record['tenant_id'] == request.caller.project_id

    def servers(self, request):
        version = self._version(request)
        name, status = request.arg('name'), request.arg('status')
        with self.state.lock:
            found = [s for s in self.state.records('servers').values()
                     if self._visible(request, s) and
                     (not name or re.search(name, s['name'])) and
                     (not status or s['status'] == status.upper())]
            if request.params.get('detail'):
                return http.ok({'servers': [views.server(
                    self.state, s, request.base_url, version,
                    request.caller.is_admin) for s in found]})
            return http.ok({'servers': [views.server_brief(
                s, request.base_url) for s in found]})

    def _server(self, request):
        found = self.state.get('servers', request.params['server_id'],
                               'Instance')
        if not self._visible(request, found):
            raise model.NotFound('Instance %s could not be found.'
                                 % found['id'])
        return found

    def server(self, request):
        version = self._version(request)
        with self.state.lock:
            return http.ok({'server': views.server(
                self.state, self._server(request), request.base_url,
                version, request.caller.is_admin)})

    def delete_server(self, request):
        with self.state.lock:
            self._server(request)
        self.compute.delete(request.params['server_id'])
        return http.no_content()

    def action(self, request):
        body = request.json()
        with self.state.lock:
            self._server(request)
        if 'os-getConsoleOutput' in body:
            asked = body['os-getConsoleOutput'] or {}
            return http.ok({'output': self.actions.console_output(
                request.params['server_id'], asked.get('length'))})
        raise model.Unsupported('The lab does not imitate the server '
                                'action(s) %s.' % ', '.join(sorted(body)))

    # Interfaces.

    def interfaces(self, request):
        with self.state.lock:
            server = self._server(request)
            return http.ok({'interfaceAttachments': [
                views.interface(self.state, p)
                for p in self.state.server_ports(server['id'])]})

    def interface(self, request):
        with self.state.lock:
            server = self._server(request)
            for port in self.state.server_ports(server['id']):
                if port['id'] == request.params['port_id']:
                    return http.ok({'interfaceAttachment': views.interface(
                        self.state, port)})
        raise model.NotFound('Port %s is not attached'
                             % request.params['port_id'])

    def attach_interface(self, request):
        wanted = request.json('interfaceAttachment')
        port = self.actions.attach_interface(request.params['server_id'],
                                             wanted, request.caller)
        with self.state.lock:
            return http.ok({'interfaceAttachment': views.interface(
                self.state, port)})

    def detach_interface(self, request):
        with self.state.lock:
            self._server(request)
        self.actions.detach_interface(request.params['server_id'],
                                      request.params['port_id'])
        return http.no_content(202)

    # Volume attachments.

    def attachments(self, request):
        with self.state.lock:
            server = self._server(request)
            return http.ok({'volumeAttachments': [
                views.volume_attachment(a)
                for _v, a in self.state.attachments_of(server['id'])]})

    def attachment(self, request):
        with self.state.lock:
            server = self._server(request)
            for volume, found in self.state.attachments_of(server['id']):
                if volume['id'] == request.params['volume_id']:
                    return http.ok({'volumeAttachment':
                                    views.volume_attachment(found)})
        raise model.NotFound('Volume %s is not attached to the server.'
                             % request.params['volume_id'])

    def attach_volume(self, request):
        wanted = request.json('volumeAttachment')
        if not wanted.get('volumeId'):
            raise model.BadRequest("Invalid input: 'volumeId' is required.")
        with self.state.lock:
            self._server(request)
        made = self.actions.attach_volume(request.params['server_id'],
                                          wanted['volumeId'],
                                          wanted.get('device'))
        return http.ok({'volumeAttachment': views.volume_attachment(made)})

    def detach_volume(self, request):
        with self.state.lock:
            self._server(request)
        self.actions.detach_volume(request.params['server_id'],
                                   request.params['volume_id'])
        return http.no_content(202)

    # Server groups, zones, hypervisors.

    def groups(self, request):
        version = self._version(request)
        with self.state.lock:
            return http.ok({'server_groups': [
                views.server_group(self.state, g, version)
                for g in self.state.records('server_groups').values()
                if request.caller.is_admin or
                g['project_id'] == request.caller.project_id]})

    def group(self, request):
        version = self._version(request)
        with self.state.lock:
            found = self.state.get('server_groups',
                                   request.params['group_id'],
                                   'Instance group')
            return http.ok({'server_group': views.server_group(
                self.state, found, version)})

    def create_group(self, request):
        version = self._version(request)
        wanted = request.json('server_group')
        if version >= (2, 64):
            policy = wanted.get('policy')
        else:
            policies = wanted.get('policies') or [None]
            if len(policies) != 1:
                raise model.BadRequest('Invalid input: exactly one policy.')
            policy = policies[0]
        made = self.actions.create_group(wanted.get('name'), policy,
                                         wanted.get('rules'), request.caller)
        with self.state.lock:
            return http.ok({'server_group': views.server_group(
                self.state, made, version)})

    def delete_group(self, request):
        self.actions.delete_group(request.params['group_id'])
        return http.no_content()

    def zones(self, request):
        return http.ok({'availabilityZoneInfo': [views.zone()]})

    def hypervisors(self, request):
        if not request.caller.is_admin:
            error = model.IaasError('Policy does not allow hypervisors.')
            error.status = 403
            raise error
        with self.state.lock:
            return http.ok({'hypervisors': [
                views.hypervisor(self.state, n, host)
                for n, host in enumerate(self.state.hosts)]})
