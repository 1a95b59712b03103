"""The four stand-ins on their ports, over one state, started and
stopped together::

    state = model.State(subnet='10.254.0.0/24', path=state_file)
    iaas = Iaas(state, tokens, ports, provisioner, volume_backend).start()
    ...                       # catalog: bootstrap.register_iaas(...)
    iaas.stop()

``ports`` maps 'nova', 'neutron', 'cinder', 'glance' to port numbers
(0 picks a free one; ``iaas.ports`` then says which). ``tokens`` checks
X-Auth-Token (:class:`.auth.KeystoneTokens`).
"""

import threading

from k8s_mgmt_lab.openstack.iaas import actions
from k8s_mgmt_lab.openstack.iaas import cinder
from k8s_mgmt_lab.openstack.iaas import compute
from k8s_mgmt_lab.openstack.iaas import glance
from k8s_mgmt_lab.openstack.iaas import http
from k8s_mgmt_lab.openstack.iaas import network
from k8s_mgmt_lab.openstack.iaas import neutron
from k8s_mgmt_lab.openstack.iaas import nova
from k8s_mgmt_lab.openstack.iaas import storage

SERVICE_NAMES = ('nova', 'neutron', 'cinder', 'glance')


class Iaas(object):

    def __init__(self, state, tokens, ports=None, provisioner=None,
                 volume_backend=None, run=storage.in_thread):
        self.state = state
        self.tokens = tokens
        self.wanted_ports = dict(ports or {})
        self.ports = network.Ports(state)
        self.volumes = storage.Volumes(state, volume_backend, run)
        self.compute = compute.Compute(state, self.ports, self.volumes,
                                       provisioner, run)
        self.actions = actions.ServerActions(self.compute)
        self.servers = {}

    def services(self):
        return {
            'nova': nova.Nova(self.state, self.compute, self.actions),
            'neutron': neutron.Neutron(self.state, self.ports),
            'cinder': cinder.Cinder(self.state, self.volumes),
            'glance': glance.Glance(self.state),
        }

    def start(self):
        """Listen on every port; on a failure close what listens."""
        try:
            for name, service in self.services().items():
                self.servers[name] = http.Server(
                    service, self.wanted_ports.get(name, 0),
                    self.tokens).start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        """Close every listener, all at once (each waits out its poll)."""
        stopping = [threading.Thread(target=server.stop, daemon=True)
                    for server in self.servers.values()]
        for thread in stopping:
            thread.start()
        for thread in stopping:
            thread.join()
        self.servers.clear()

    def endpoints(self):
        """The catalog's URL of each service, as Heat looks them up."""
        url = {name: server.url for name, server in self.servers.items()}
        return {'compute': url['nova'] + '/v2.1',
                'network': url['neutron'] + '/',
                'volumev3': url['cinder'] + '/v3/%(project_id)s',
                'image': url['glance'] + '/'}

    def listening_ports(self):
        return {name: server.port for name, server in self.servers.items()}
