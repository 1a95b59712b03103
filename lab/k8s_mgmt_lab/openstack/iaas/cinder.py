"""Cinder's API (``/v3/{project_id}``) over the shared state: the
version document at the endpoint's host root (where Heat's cinderclient
looks), volumes and their attachments, and the one volume type.

A volume's ``attachments`` lists only the attachments Nova completed,
as Cinder lists those whose attach status is ``attached``."""

from k8s_mgmt_lab.openstack.iaas import http
from k8s_mgmt_lab.openstack.iaas import microversion
from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import storage

MIN_VERSION, MAX_VERSION = '3.0', '3.71'
VOLUME = r'/v3/(?P<project_id>[^/]+)/volumes/(?P<volume_id>[^/]+)'
TYPE_ID = '00000000-0000-4000-8000-0000000000f1'


def version_document(base):
    return {'id': 'v3.0', 'status': 'CURRENT', 'version': MAX_VERSION,
            'min_version': MIN_VERSION, 'updated': '2023-08-31T00:00:00Z',
            'links': [{'rel': 'self', 'href': base + '/v3/'}],
            'media-types': [{
                'base': 'application/json',
                'type': 'application/vnd.openstack.volume+json;version=3'}]}


def volume_type():
    return {'id': TYPE_ID, 'name': storage.DEFAULT_TYPE,
            'description': 'loop devices on the lab host',
            'is_public': True, 'extra_specs': {},
            'os-volume-type-access:is_public': True, 'qos_specs_id': None}


class Cinder(http.Service):
    name = 'cinder'
    OPEN = ('/', r'/v3/?')

    def __init__(self, state, volumes):
        self.state = state
        self.volumes = volumes

    def routes(self):
        project = r'/v3/(?P<project_id>[^/]+)'
        return [
            ('GET', '/', self.versions),
            ('GET', r'/v3/?', self.version),
            ('POST', project + '/volumes', self.create),
            ('GET', project + r'/volumes(?P<detail>/detail)?', self.list),
            ('GET', VOLUME, self.show),
            ('DELETE', VOLUME, self.delete),
            ('POST', VOLUME + '/action', self.action),
            ('GET', project + '/types', self.types),
            ('GET', project + '/types/(?P<type_id>[^/]+)', self.type),
        ]

    def error_body(self, error):
        return http.fault_body(error)

    def decorate(self, request, response):
        try:
            version = microversion.requested(request.headers, 'volume',
                                             MIN_VERSION, MAX_VERSION)
        except model.IaasError:
            version = MIN_VERSION
        microversion.echo(response.headers, 'volume', version)

    def check(self, request):
        """A microversion out of range is a 406, whatever the route."""
        microversion.requested(request.headers, 'volume', MIN_VERSION,
                               MAX_VERSION)

    def versions(self, request):
        return http.ok({'versions': [version_document(request.base_url)]},
                       300)

    def version(self, request):
        return http.ok({'versions': [version_document(request.base_url)]})

    def _project(self, request):
        """The URL's project, which must be the token's (or the caller an
        admin), as Cinder's policy makes it."""
        project = request.params['project_id']
        if project != request.caller.project_id and \
                not request.caller.is_admin:
            error = model.IaasError('Policy does not allow this project.')
            error.status = 403
            raise error
        return project

    def _view(self, volume, request):
        shown = {k: v for k, v in volume.items() if k != 'attachments'}
        shown.update({
            'attachments': [
                {'server_id': a['server_id'],
                 'attachment_id': a['attachment_id'],
                 'attached_at': a['attached_at'],
                 'host_name': a['host_name'], 'volume_id': volume['id'],
                 'device': a['device'], 'id': volume['id']}
                for a in volume['attachments'] if a['attached_at']],
            'user_id': request.caller.user_id, 'encrypted': False,
            'multiattach': False, 'snapshot_id': None,
            'source_volid': None, 'consistencygroup_id': None,
            'replication_status': None, 'migration_status': None,
            'volume_type_id': TYPE_ID, 'group_id': None,
            'links': [{'rel': 'self', 'href': '%s/v3/%s/volumes/%s' % (
                request.base_url, volume['project_id'], volume['id'])}]})
        if request.caller.is_admin:
            shown['os-vol-tenant-attr:tenant_id'] = volume['project_id']
            shown['os-vol-host-attr:host'] = 'lab@%s#%s' % (
                storage.DEFAULT_TYPE, storage.DEFAULT_TYPE)
        return shown

    def create(self, request):
        project = self._project(request)
        wanted = request.json('volume')
        made = self.volumes.create(wanted, project)
        with self.state.lock:
            return http.ok({'volume': self._view(made, request)}, 202)

    def list(self, request):
        project = self._project(request)
        name = request.arg('name')
        with self.state.lock:
            found = [v for v in self.state.records('volumes').values()
                     if v['project_id'] == project and
                     (name is None or v['name'] == name)]
            if request.params.get('detail'):
                return http.ok({'volumes': [self._view(v, request)
                                            for v in found]})
            return http.ok({'volumes': [
                {'id': v['id'], 'name': v['name'],
                 'links': self._view(v, request)['links']} for v in found]})

    def _volume(self, request):
        found = self.state.get('volumes', request.params['volume_id'],
                               'Volume')
        if found['project_id'] != self._project(request):
            raise model.NotFound('Volume %s could not be found.'
                                 % found['id'])
        return found

    def show(self, request):
        with self.state.lock:
            return http.ok({'volume': self._view(self._volume(request),
                                                 request)})

    def delete(self, request):
        with self.state.lock:
            self._volume(request)
        self.volumes.delete(request.params['volume_id'])
        return http.no_content(202)

    def action(self, request):
        body = request.json()
        with self.state.lock:
            self._volume(request)
        raise model.Unsupported('The lab does not imitate the volume '
                                'action(s) %s; attach through Nova.'
                                % ', '.join(sorted(body)))

    def types(self, request):
        self._project(request)
        return http.ok({'volume_types': [volume_type()]})

    def type(self, request):
        self._project(request)
        if request.params['type_id'] not in (TYPE_ID, storage.DEFAULT_TYPE,
                                             'default'):
            raise model.NotFound('Volume type %s could not be found.'
                                 % request.params['type_id'])
        return http.ok({'volume_type': volume_type()})
