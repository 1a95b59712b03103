"""Nova's API (``/v2.1``) over the shared state: version documents,
flavors, servers, their interfaces, volume attachments and console,
server groups, availability zones and hypervisors.

The microversion comes from ``X-OpenStack-Nova-API-Version`` or
``OpenStack-API-Version: compute X`` (2.1 when neither) and is echoed
back with ``Vary``, as Nova does; one outside 2.1..2.96 is a 406.
"""

import re

from k8s_mgmt_lab.openstack.iaas import http
from k8s_mgmt_lab.openstack.iaas import microversion
from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import nova_attachments
from k8s_mgmt_lab.openstack.iaas import nova_views as views

MIN_VERSION, MAX_VERSION = '2.1', '2.96'
LEGACY_HEADER = 'X-OpenStack-Nova-API-Version'
SERVER = r'/v2\.1/servers/(?P<server_id>[^/]+)'


def version_document(base):
    return {'id': 'v2.1', 'status': 'CURRENT', 'version': MAX_VERSION,
            'min_version': MIN_VERSION, 'updated': '2013-07-23T11:33:21Z',
            'links': [{'rel': 'self', 'href': base + '/v2.1/'}],
            'media-types': [{
                'base': 'application/json',
                'type': 'application/vnd.openstack.compute+json;version=2.1'
            }]}


def requested_version(headers):
    return microversion.requested(headers, 'compute', MIN_VERSION,
                                  MAX_VERSION, LEGACY_HEADER)


class Nova(http.Service):
    name = 'nova'
    OPEN = ('/', r'/v2\.1/?')

    def __init__(self, state, compute, actions):
        self.state = state
        self.compute = compute
        self.actions = actions
        self.attachments = nova_attachments.Attachments(
            state, actions, self._server)

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
            ('GET', r'/v2\.1/os-server-groups', self.groups),
            ('POST', r'/v2\.1/os-server-groups', self.create_group),
            ('GET', r'/v2\.1/os-server-groups/(?P<group_id>[^/]+)',
             self.group),
            ('DELETE', r'/v2\.1/os-server-groups/(?P<group_id>[^/]+)',
             self.delete_group),
            ('GET', r'/v2\.1/os-availability-zone(/detail)?', self.zones),
            ('GET', r'/v2\.1/os-hypervisors(/detail)?', self.hypervisors),
        ] + self.attachments.routes(SERVER)

    def error_body(self, error):
        return http.fault_body(error)

    def decorate(self, request, response):
        try:
            version = requested_version(request.headers)
        except model.IaasError:
            version = MIN_VERSION
        microversion.echo(response.headers, 'compute', version,
                          LEGACY_HEADER)

    def check(self, request):
        """A microversion out of range is a 406, whatever the route."""
        requested_version(request.headers)

    @staticmethod
    def _version(request):
        return microversion.as_tuple(requested_version(request.headers))

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
        if not isinstance(hints, dict):
            raise model.BadRequest('Invalid input: scheduler hints must be '
                                   'an object.')
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
        try:
            name = re.compile(name or '')
        except re.error as wrong:
            raise model.BadRequest('Invalid filter name: %s.' % wrong)
        with self.state.lock:
            found = [s for s in self.state.records('servers').values()
                     if self._visible(request, s) and
                     name.search(s['name']) and
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
                request.params['server_id'], _console_length(asked))})
        raise model.Unsupported('The lab does not imitate the server '
                                'action(s) %s.' % ', '.join(sorted(body)))

    # Server groups, zones, hypervisors.

    def groups(self, request):
        version = self._version(request)
        with self.state.lock:
            return http.ok({'server_groups': [
                views.server_group(self.state, g, version)
                for g in self.state.records('server_groups').values()
                if request.caller.is_admin or
                g['project_id'] == request.caller.project_id]})

    def _group(self, request):
        """The request's group; another project's is not found, as a
        member of that project alone (or an admin) may see it."""
        found = self.state.get('server_groups', request.params['group_id'],
                               'Instance group')
        if found['project_id'] != request.caller.project_id and \
                not request.caller.is_admin:
            raise model.NotFound('Instance group %s could not be found.'
                                 % found['id'])
        return found

    def group(self, request):
        version = self._version(request)
        with self.state.lock:
            return http.ok({'server_group': views.server_group(
                self.state, self._group(request), version)})

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
        with self.state.lock:
            self._group(request)
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


def _console_length(asked):
    """The last lines wanted (None or -1: all), as Nova reads them."""
    length = asked.get('length') if isinstance(asked, dict) else None
    if length is None:
        return None
    try:
        return int(length)
    except (TypeError, ValueError):
        raise model.BadRequest("Invalid input: 'length' %r is not an "
                               "integer." % (length,))
