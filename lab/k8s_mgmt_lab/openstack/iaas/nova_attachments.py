"""Nova's interface and volume attachments of a server
(``os-interface``, ``os-volume_attachments``): the routes and handlers,
over the actions that change them. ``server_of(request)`` is Nova's
look-up of the request's server, visibility included."""

from k8s_mgmt_lab.openstack.iaas import http
from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import nova_views as views


class Attachments(object):

    def __init__(self, state, actions, server_of):
        self.state = state
        self.actions = actions
        self.server_of = server_of

    def routes(self, server):
        port = server + '/os-interface/(?P<port_id>[^/]+)'
        volume = server + '/os-volume_attachments/(?P<volume_id>[^/]+)'
        return [
            ('GET', server + '/os-interface', self.interfaces),
            ('POST', server + '/os-interface', self.attach_interface),
            ('GET', port, self.interface),
            ('DELETE', port, self.detach_interface),
            ('GET', server + '/os-volume_attachments', self.attachments),
            ('POST', server + '/os-volume_attachments', self.attach_volume),
            ('GET', volume, self.attachment),
            ('DELETE', volume, self.detach_volume),
        ]

    # Interfaces.

    def interfaces(self, request):
        with self.state.lock:
            server = self.server_of(request)
            return http.ok({'interfaceAttachments': [
                views.interface(self.state, p)
                for p in self.state.server_ports(server['id'])]})

    def interface(self, request):
        with self.state.lock:
            server = self.server_of(request)
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
            self.server_of(request)
        self.actions.detach_interface(request.params['server_id'],
                                      request.params['port_id'])
        return http.no_content(202)

    # Volume attachments.

    def attachments(self, request):
        with self.state.lock:
            server = self.server_of(request)
            return http.ok({'volumeAttachments': [
                views.volume_attachment(a)
                for _v, a in self.state.attachments_of(server['id'])]})

    def attachment(self, request):
        with self.state.lock:
            server = self.server_of(request)
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
            self.server_of(request)
        made = self.actions.attach_volume(request.params['server_id'],
                                          wanted['volumeId'],
                                          wanted.get('device'))
        return http.ok({'volumeAttachment': views.volume_attachment(made)})

    def detach_volume(self, request):
        with self.state.lock:
            self.server_of(request)
        self.actions.detach_volume(request.params['server_id'],
                                   request.params['volume_id'])
        return http.no_content(202)
