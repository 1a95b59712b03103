"""Glance's API (``/v2``), read-only: the images the state was seeded
with (those the sample VNF package names), their list with filters, one
image, and the image schema glanceclient builds its model from. Upload,
import and change are not imitated: the lab's VMs boot the lab's own
image whatever the name says."""

from k8s_mgmt_lab.openstack.iaas import http
from k8s_mgmt_lab.openstack.iaas import model

FILTERS = ('name', 'status', 'visibility', 'disk_format',
           'container_format', 'id')
ERROR_TITLES = {400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found',
                405: 'Method Not Allowed', 501: 'Not Implemented'}


def image_schema():
    """Enough of Glance's image schema for glanceclient: the core
    properties and their types, extra properties as strings."""
    nullable = {'type': ['null', 'string']}
    properties = {
        'id': {'type': 'string'}, 'name': nullable,
        'status': {'type': 'string', 'enum': [
            'queued', 'saving', 'active', 'killed', 'deleted',
            'pending_delete', 'deactivated', 'uploading', 'importing']},
        'visibility': {'type': 'string', 'enum': [
            'community', 'public', 'private', 'shared']},
        'protected': {'type': 'boolean'}, 'os_hidden': {'type': 'boolean'},
        'checksum': nullable, 'os_hash_algo': nullable,
        'os_hash_value': nullable, 'owner': nullable,
        'size': {'type': ['null', 'integer']},
        'virtual_size': {'type': ['null', 'integer']},
        'min_ram': {'type': 'integer'}, 'min_disk': {'type': 'integer'},
        'container_format': nullable, 'disk_format': nullable,
        'created_at': {'type': 'string'}, 'updated_at': {'type': 'string'},
        'tags': {'type': 'array', 'items': {'type': 'string'}},
        'self': {'type': 'string'}, 'file': {'type': 'string'},
        'schema': {'type': 'string'},
        'locations': {'type': 'array', 'items': {'type': 'object'}},
    }
    return {'name': 'image', 'properties': properties,
            'additionalProperties': {'type': 'string'},
            'links': [{'rel': 'self', 'href': '{self}'},
                      {'rel': 'enclosure', 'href': '{file}'},
                      {'rel': 'describedby', 'href': '{schema}'}]}


class Glance(http.Service):
    name = 'glance'
    OPEN = ('/', '/versions')

    def __init__(self, state):
        self.state = state

    def routes(self):
        return [
            ('GET', '/(versions)?', self.versions),
            ('GET', '/v2/images', self.list),
            ('GET', '/v2/images/(?P<image_id>[^/]+)', self.show),
            ('GET', '/v2/schemas/image', self.schema),
            ('GET', '/v2/schemas/images', self.schemas),
        ]

    def error_body(self, error):
        return {'code': error.status, 'message': error.message,
                'title': ERROR_TITLES.get(error.status, 'Error')}

    def versions(self, request):
        return http.ok({'versions': [{
            'id': 'v2.17', 'status': 'CURRENT',
            'links': [{'rel': 'self', 'href': request.base_url + '/v2/'}]}]},
            300 if request.path == '/' else 200)

    def _view(self, image):
        return dict(image, protected=False, os_hidden=False,
                    tags=list(image.get('tags') or ()),
                    checksum=None, os_hash_algo=None, os_hash_value=None,
                    owner=None, virtual_size=None,
                    updated_at=image['created_at'],
                    self='/v2/images/%s' % image['id'],
                    file='/v2/images/%s/file' % image['id'],
                    schema='/v2/schemas/image')

    def list(self, request):
        unknown = [k for k in request.query
                   if k not in FILTERS + ('tag', 'limit', 'marker',
                                          'sort_key', 'sort_dir', 'sort')]
        if unknown:
            raise model.BadRequest('The lab glance cannot filter on %s.'
                                   % ', '.join(sorted(unknown)))
        with self.state.lock:
            found = [self._view(i)
                     for i in self.state.records('images').values()
                     if all(request.arg(k) is None or
                            str(i.get(k)) == request.arg(k)
                            for k in FILTERS) and
                     # Glance's ``tag`` (repeatable): every one given.
                     set(request.query.get('tag') or ()) <=
                     set(i.get('tags') or ())]
        return http.ok({'images': found, 'first': '/v2/images',
                        'schema': '/v2/schemas/images'})

    def show(self, request):
        with self.state.lock:
            found = self.state.get('images', request.params['image_id'],
                                   'Image')
            return http.ok(self._view(found))

    def schema(self, request):
        return http.ok(image_schema())

    def schemas(self, request):
        return http.ok({'name': 'images', 'properties': {
            'images': {'type': 'array', 'items': image_schema()},
            'schema': {'type': 'string'}, 'first': {'type': 'string'},
            'next': {'type': 'string'}},
            'links': [{'rel': 'first', 'href': '{first}'},
                      {'rel': 'next', 'href': '{next}'},
                      {'rel': 'describedby', 'href': '{schema}'}]})
