"""Every flavour of the shipped VNF package built by real Heat 27 against
the lab's IaaS stand-ins, through the lab's own Heat side
(k8s_mgmt_lab.openstack.stacks), as Tacker's OpenStack infra driver
builds it: the flavour's BaseHOT with its nested templates as files and
the parameters the package's UserData returns for the flavour's sample
request (the stand-in's network has the id the samples name). One
control plane for the module, a recording provisioner (no VMs). For each
flavour: create, with exactly the servers the request asks for, each at
its port's IP; a worker group scaled out and in (simple by
desired_capacity as Tacker's ETSI scale does, complex by the scaling
policies' signals); one worker healed (mark unhealthy, then an update: a
new server on the same port); delete, leaving the stand-in empty. Each
phase's seconds are printed (run with -s)."""

import concurrent.futures
import copy
import time

import pytest

from k8s_mgmt import package as package_mod
from k8s_mgmt import params as params_mod
from k8s_mgmt import shipped
from k8s_mgmt.topology import heat as topology_heat
from k8s_mgmt.topology import model as topology_model
from k8s_mgmt.topology.from_params import spec_from_params
from k8s_mgmt_lab.openstack import bootstrap
from k8s_mgmt_lab.openstack import stack_servers
from k8s_mgmt_lab.openstack import stacks as stacks_mod
from k8s_mgmt_lab.openstack import state as plane_state
from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab import user_data
from tests.functional.openstack import iaas_fixture

FLAVOURS = ('simple', 'complex', 'podaffinity', 'storage', 'kubespray')
SUBNET = '10.254.0.0/24'
# Servers of each flavour that are no group member: never scaled.
SINGLES = {'storage': ('storage_server',), 'kubespray': ('externalLB',)}
# podaffinity's sample asks for one worker: two show the spread.
WORKERS = {'podaffinity': 2}


def _network_of(requests):
    """The one network the sample requests name: the stand-in's."""
    named = {link['resourceId'] for body in requests.values()
             for link in body.get('extVirtualLinks') or ()}
    assert len(named) == 1, named
    return named.pop()


class Bench(object):
    """The control plane, stand-ins, the lab's Heat side and the package."""

    def __init__(self, running, package_dir, parameters):
        self.plane, self.iaas, self.provisioner, self.volumes = running
        self.state = self.iaas.state
        self.package_dir = package_dir
        self._parameters = parameters
        self.stacks = stacks_mod.Stacks(bootstrap.admin_session(
            self.plane.ports, plane_state.secrets(self.plane.layout)))

    def parameters(self, flavour):
        found = copy.deepcopy(self._parameters[flavour].result())
        if flavour in WORKERS:
            found['nfv']['VDU']['workerNode']['desired_capacity'] = \
                WORKERS[flavour]
        return found

    def records(self, kind):
        with self.state.lock:
            return copy.deepcopy(self.state.records(kind))


@pytest.fixture(scope='module')
def bench(tmp_path_factory):
    root = iaas_fixture.plane_root(tmp_path_factory, 'flavours')
    package_dir, csar = str(root / 'vnf_package'), str(root / 'vnf.zip')
    package_mod.build(output=csar, output_dir=package_dir)
    requests = {f: shipped.sample_request(f) for f in FLAVOURS}
    state = model.State(SUBNET, 3, str(root / 'iaas.json'),
                        network_id=_network_of(requests))
    # The UserData runs (a child process each, one at a time: two cores)
    # overlap the plane's start and the first flavours' tests.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        parameters = {f: pool.submit(user_data.hot_parameters, csar,
                                     requests[f]) for f in FLAVOURS}
        started = time.monotonic()
        with iaas_fixture.plane_with_iaas(root, state) as running:
            print('\ncontrol plane and stand-ins up in %.1f s'
                  % (time.monotonic() - started))
            yield Bench(running, package_dir, parameters)


def _timed(seconds, what, action, *args):
    started = time.monotonic()
    result = action(*args)
    seconds[what] = time.monotonic() - started
    return result


def _created_since(bench, mark):
    return {s.server_id: s for s in bench.provisioner.created[mark:]}


def _expected_counts(flavour, parameters):
    vdus = parameters['nfv']['VDU']
    counts = {vdu: vdus[vdu]['desired_capacity']
              for vdu in ('masterNode', 'workerNode')}
    counts.update({vdu: 1 for vdu in SINGLES.get(flavour, ())})
    return counts


def _check_created(bench, flavour, servers, specs):
    """The provisioner got exactly the stack's servers, each with the IP
    its port holds, as Nova shows it too."""
    assert {s.server_id: (s.vdu, s.ip) for s in servers} == \
        {i: (spec.name, spec.ip) for i, spec in specs.items()}
    nova = bench.records('servers')
    for server in servers:
        assert server.ip and server.ip.startswith('10.254.0.')
        shown = [a['addr'] for found in bench.state.addresses(
            server.server_id).values() for a in found]
        assert shown == [ip for _name, _id, ip in server.ports]
        assert nova[server.server_id]['status'] == 'ACTIVE'
    groups = {(s.vdu, s.group) for s in servers}
    assert ('masterNode', 'master_instance') in groups
    assert ('workerNode', 'worker_instance') in groups
    for vdu in SINGLES.get(flavour, ()):
        assert (vdu, None) in groups


def _check_storage(bench, servers):
    storage = stack_servers.by_vdu(servers)['storage_server'][0]
    volumes = list(bench.records('volumes').values())
    assert [(v['status'], v['size'], [(a['server_id'], a['device'])
                                      for a in v['attachments']])
            for v in volumes] == [('in-use', 5, [(storage.server_id,
                                                  '/dev/vdb')])]


def _check_vip(bench, path, servers):
    """Every master's port allows the cluster's VIP, the vip_CP port's
    address, as an extra address (keepalived moves it between them)."""
    vip = bench.stacks.resource(path, 'vip_CP')['physical_resource_id']
    ports = bench.records('ports')
    vip_ip = ports[vip]['fixed_ips'][0]['ip_address']
    neutron = bench.stacks.session.get_endpoint(service_type='network')
    for master in stack_servers.by_vdu(servers)['masterNode']:
        port_id = master.ports[0][1]
        shown = bench.stacks.session.get('%s/v2.0/ports/%s' % (
            neutron.rstrip('/'), port_id)).json()['port']
        assert shown['allowed_address_pairs'] == [{
            'ip_address': vip_ip, 'mac_address': shown['mac_address']}]


def _check_spread(bench, servers):
    workers = stack_servers.by_vdu(servers)['workerNode']
    nova = bench.records('servers')
    hosts = [nova[w.server_id]['host'] for w in workers]
    assert len(hosts) == 2 and len(set(hosts)) == 2
    group_ids = {nova[w.server_id]['group_id'] for w in workers}
    assert len(group_ids) == 1
    group = bench.records('server_groups')[group_ids.pop()]
    assert group['policy'] == 'anti-affinity'


def _check_topology(bench, flavour, path, servers):
    """The driver's own Heat reader, as instantiate_end runs it on the
    flavour's sample request, finds each server in its role at its port's
    IP on the host Nova put it, the VIP's address and the storage
    volume: what the stand-ins show through real Heat is what the driver
    reads."""
    cluster = params_mod.load_request(shipped.sample_request(flavour))
    reader = topology_heat.HeatReader(bench.stacks.session)
    topology = reader.read_topology(spec_from_params(cluster),
                                    path.split('/')[1])
    nova, ports = bench.records('servers'), bench.records('ports')
    by_vdu = stack_servers.by_vdu(servers)
    roles = {'masterNode': topology.masters, 'workerNode': topology.workers,
             'storage_server': topology.storage, 'externalLB': topology.lbs}
    for vdu, nodes in roles.items():
        assert sorted(n.server_id for n in nodes) == sorted(
            s.server_id for s in by_vdu.get(vdu, ())), vdu
    ips = {s.server_id: {ip for _name, _id, ip in s.ports} for s in servers}
    for nodes in roles.values():
        for node in nodes:
            assert node.ssh_ip in ips[node.server_id]
            assert node.nic_ip in ips[node.server_id]
            assert node.compute_host == nova[node.server_id]['host']
    if flavour in ('complex', 'podaffinity'):
        vip = bench.stacks.resource(path, 'vip_CP')['physical_resource_id']
        assert topology.vip == ports[vip]['fixed_ips'][0]['ip_address']
    if flavour == 'storage':
        [volume_id] = bench.records('volumes')
        [storage] = topology.storage
        assert topology.volumes == (topology_model.Volume(
            resource_name='storage_server_volume', volume_id=volume_id,
            device='/dev/vdb', server_id=storage.server_id),)


def _scale(bench, flavour, path, seconds):
    """Out by one worker, then in by that one; the provisioner made and
    removed exactly it."""
    stacks = bench.stacks
    before = stack_servers.by_vdu(stacks.servers(path))['workerNode']
    mark = len(bench.provisioner.created)
    started = time.monotonic()
    if flavour == 'complex':
        stacks.signal(path, 'worker_instance_scale_out')
        stacks.wait_group(path, 'worker_instance', len(before) + 1)
    else:
        stacks.resize(path, 'workerNode', len(before) + 1)
    seconds['scale out'] = time.monotonic() - started
    after = stack_servers.by_vdu(stacks.servers(path))['workerNode']
    added = set(_created_since(bench, mark))
    assert len(after) == len(before) + 1
    assert added == {w.server_id for w in after} - {
        w.server_id for w in before}
    new = [w for w in after if w.server_id in added]
    started = time.monotonic()
    if flavour == 'complex':
        stacks.signal(path, 'worker_instance_scale_in')
        stacks.wait_group(path, 'worker_instance', len(before))
    else:
        stacks.resize(path, 'workerNode', len(before), remove=new)
    seconds['scale in'] = time.monotonic() - started
    left = stack_servers.by_vdu(stacks.servers(path))['workerNode']
    assert len(left) == len(before)
    removed = {w.server_id for w in after} - {w.server_id for w in left}
    assert removed <= set(bench.provisioner.deleted) and len(removed) == 1
    if flavour != 'complex':
        assert removed == added


def _heal(bench, path, seconds):
    """One worker healed: a new server on the same port, the old one
    deleted through the provisioner."""
    stacks = bench.stacks
    old = stack_servers.by_vdu(stacks.servers(path))['workerNode'][0]
    mark = len(bench.provisioner.created)
    _timed(seconds, 'heal', stacks.heal, path, [old])
    healed = [w for w in stack_servers.by_vdu(stacks.servers(path))[
        'workerNode'] if w.member == old.member]
    assert len(healed) == 1
    new = healed[0]
    assert new.server_id != old.server_id
    assert new.ports == old.ports
    assert old.server_id in bench.provisioner.deleted
    made = _created_since(bench, mark)
    assert list(made) == [new.server_id]
    assert made[new.server_id].ip == old.ip
    assert old.server_id not in bench.records('servers')


@pytest.mark.parametrize('flavour', FLAVOURS)
def test_the_flavours_stack_is_created_scaled_healed_and_deleted(
        bench, flavour):
    seconds, stacks = {}, bench.stacks
    parameters = bench.parameters(flavour)
    mark = len(bench.provisioner.created)
    started = time.monotonic()
    path = stacks.create_flavour('vnflcm_' + flavour, bench.package_dir,
                                 flavour, parameters)
    stacks.wait(path, 'CREATE')
    seconds['create'] = time.monotonic() - started
    servers = stacks.servers(path)
    assert {vdu: len(found) for vdu, found in stack_servers.by_vdu(
        servers).items()} == _expected_counts(flavour, parameters)
    _check_created(bench, flavour, servers, _created_since(bench, mark))
    if flavour == 'storage':
        _check_storage(bench, servers)
    if flavour == 'podaffinity':
        _check_spread(bench, servers)
    if flavour in ('complex', 'podaffinity'):
        _check_vip(bench, path, servers)
    _timed(seconds, 'topology read', _check_topology, bench, flavour, path,
           servers)
    if flavour in ('simple', 'complex'):
        _scale(bench, flavour, path, seconds)
    _heal(bench, path, seconds)

    everyone = {s.server_id for s in bench.provisioner.created[mark:]}
    _timed(seconds, 'delete', stacks.delete_and_wait, path)
    for kind in ('servers', 'ports', 'volumes', 'server_groups'):
        assert bench.records(kind) == {}, kind
    assert everyone <= set(bench.provisioner.deleted)
    print('\n%s: %s' % (flavour, ', '.join(
        '%s %.1f s' % item for item in seconds.items())))
