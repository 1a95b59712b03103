"""The stand-in's shared state with its services in one object, jobs
run inline (or as a test says), and fakes of the provisioner and the
volume backend that record what they were asked: what the IaaS unit
tests build their clouds from."""

from k8s_mgmt_lab.openstack.iaas import actions
from k8s_mgmt_lab.openstack.iaas import auth
from k8s_mgmt_lab.openstack.iaas import compute
from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import network
from k8s_mgmt_lab.openstack.iaas import storage

CALLER = auth.Caller('user-1', 'project-1', ('admin',))


def inline(work, name):
    work()


class Provisioner(object):
    def __init__(self, fail=False):
        self.created, self.deleted, self.fail = [], [], fail

    def create_servers(self, specs):
        if self.fail:
            raise RuntimeError('no VM today')
        self.created.extend(specs)

    def delete_servers(self, server_ids):
        self.deleted.extend(server_ids)

    def console_output(self, server_id):
        return 'line 1\nline 2\nlogin: '


class Backend(object):
    def __init__(self):
        self.calls = []

    def ensure(self, volume_id, size):
        self.calls.append(('ensure', volume_id, size))

    def attach(self, volume_id, server_id, device):
        self.calls.append(('attach', volume_id, server_id, device))

    def detach(self, volume_id, server_id=None, device=None):
        self.calls.append(('detach', volume_id, server_id, device))

    def delete(self, volume_id):
        self.calls.append(('delete', volume_id))


class Cloud(object):
    def __init__(self, tmp_path=None, provisioner=None, hosts=3,
                 run=inline):
        path = str(tmp_path / 'iaas.json') if tmp_path else None
        self.state = model.State('10.254.0.0/24', hosts, path)
        self.provisioner = provisioner or Provisioner()
        self.backend = Backend()
        self.ports = network.Ports(self.state)
        self.volumes = storage.Volumes(self.state, self.backend, inline)
        self.compute = compute.Compute(self.state, self.ports, self.volumes,
                                       self.provisioner, run)
        self.actions = actions.ServerActions(self.compute)
        self.net = self.state.network()['id']
        self.flavor = self.state.find_by_name('flavors', 'm1.tiny')[0]['id']

    def port(self, **extra):
        return self.ports.create(dict(network_id=self.net, **extra))

    def server(self, name='vdu', networks=None, hints=None, **extra):
        request = dict(name=name, flavorRef=self.flavor,
                       networks=networks or [], **extra)
        return self.compute.create(request, CALLER, hints)


def ports_agree(state, server_id):
    """Every bound port's MAC and IP in the server's addresses, and
    nothing else there."""
    with state.lock:
        bound = {(p['mac_address'], p['fixed_ips'][0]['ip_address'])
                 for p in state.records('ports').values()
                 if p['device_id'] == server_id}
        shown = {(a['OS-EXT-IPS-MAC:mac_addr'], a['addr'])
                 for entries in state.addresses(server_id).values()
                 for a in entries}
    return bound == shown, bound


class Jobs(object):
    """A ``run`` that keeps each job to be run by the test, in order."""

    def __init__(self):
        self.waiting = []

    def __call__(self, work, name):
        self.waiting.append(work)
        return self

    def join(self, timeout=None):
        pass

    def run_next(self):
        self.waiting.pop(0)()
