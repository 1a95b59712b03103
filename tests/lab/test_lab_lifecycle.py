"""The whole lab in one process: VMs made by real Heat through the lab's
stand-in Nova.

Real parts: Keystone and Heat (the session's shared control plane),
network namespaces, OpenSSH in every VM, python-heatclient and keystoneauth,
the driver's topology reader and SSH layer. Stand-ins: Nova, Neutron,
Cinder and Glance (served by the lab).
"""

import os

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import parallel
from k8s_mgmt import ssh
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import status as lab_status

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-lifecycle'
SETTINGS = manager.LabSettings(state_dir=STATE_DIR, subnet='10.254.201.0/24',
                               bridge='k8slabt1', tag='k8u', compute_hosts=4)


@pytest.fixture
def lab(make_lab):
    return make_lab(SETTINGS)


def _path(record):
    return '%s/%s' % (record['stack_name'], record['stack_id'])


def _targets(topology, password='ubuntu'):
    return [ssh.SSHTarget(name=n.name, host=n.ssh_ip, username='ubuntu',
                          password=password, server_id=n.server_id)
            for n in topology.all_nodes()]


def _connect_all(targets, store):
    def probe(target):
        with ssh.SSHSession(target, store=store,
                            connect_deadline=10) as session:
            return session.run(ssh.Command('cat', '/etc/machine-id'),
                               step='probe',
                               timeout=10).stdout.strip()
    return parallel.run_on_nodes('test', 'ssh', targets, probe)


def test_complex_lab_read_through_heat_and_reached_over_ssh(lab):
    record = lab.up('complex', workers=2)
    topology = lab_status.read_topology(record)
    assert len(topology.masters) == 3 and len(topology.workers) == 2
    heat, path = lab.region.stacks(), _path(record)
    servers = {s.server_id: s for s in heat.servers(path)}
    state = lab.region.iaas.state
    for node in topology.all_nodes():
        assert node.ssh_ip == servers[node.server_id].ip
        with state.lock:
            host = state.get('servers', node.server_id)['host']
        assert node.compute_host == host
        assert node.vnfc_id == record['vnfc_ids'][node.server_id]
    vip_port = heat.resource(path, 'vip_CP')['physical_resource_id']
    with state.lock:
        vip_ip = state.get('ports', vip_port)['fixed_ips'][0]['ip_address']
    assert topology.vip == vip_ip
    assert topology.vip not in {n.ssh_ip for n in topology.all_nodes()}

    store = ssh.HostKeyStore(os.path.join(STATE_DIR, 'pins.json'))
    # Five distinct VMs answered (their hostnames are Nova's, from the
    # server names: every master is "masternode", as on a real cloud).
    machines = _connect_all(_targets(topology), store)
    assert len(set(machines.values())) == 5
    assert len(store.all()) == 5               # each pinned by server id

    report = lab_status.lab_status(SETTINGS)
    assert [vm['ssh_ok'] for vm in report['vms']] == [True] * 5
    assert report['vip'] == topology.vip


def test_healed_vm_is_accepted_and_a_changed_key_is_refused(lab):
    record = lab.up('simple', workers=1)
    heat, path = lab.region.stacks(), _path(record)
    topology = lab_status.read_topology(record)
    store = ssh.HostKeyStore(os.path.join(STATE_DIR, 'pins.json'))
    _connect_all(_targets(topology), store)

    # Heal: Heat replaces the worker's server; new id, new VM, new host key.
    old = topology.workers[0]
    [worker] = [s for s in heat.servers(path) if s.server_id == old.server_id]
    heat.heal(path, [worker])
    healed = lab_status.read_topology(record)
    assert healed.workers[0].server_id != old.server_id
    assert old.server_id not in {v.vm_id for v in lab.vms.list()}
    assert healed.workers[0].ssh_ip == old.ssh_ip  # Heat keeps the port
    _connect_all(_targets(healed), store)          # fresh pin: accepted

    # Same server id, different key (a rebuilt disk, or an impostor): the
    # VM's sshd gets a new host key and re-reads it on SIGHUP.
    worker = healed.workers[0]
    key = '/etc/ssh/ssh_host_ed25519_key'
    before = lab.vms.host_key_fingerprints(worker.server_id)
    lab.vms.exec(worker.server_id, ['rm', '-f', key, key + '.pub'])
    lab.vms.exec(worker.server_id, ['ssh-keygen', '-q', '-t', 'ed25519',
                                    '-N', '', '-f', key])
    lab.vms.exec(worker.server_id,
                 ['sh', '-c', 'kill -HUP "$(cat /run/sshd.pid)"'])
    assert lab.vms.host_key_fingerprints(worker.server_id) != before
    with pytest.raises(exceptions.NodesFailed) as err:
        _connect_all(_targets(healed)[-1:], store)
    [(name, cause)] = err.value.failures
    assert name == worker.name
    assert isinstance(cause, exceptions.HostKeyMismatch)


def test_scale_out_in_and_whole_vnf_heal(lab):
    record = lab.up('complex', workers=1)
    heat, path = lab.region.stacks(), _path(record)
    before = lab_status.read_topology(record)

    heat.signal(path, 'worker_instance_scale_out')
    heat.wait_group(path, 'worker_instance', 2)
    grown = lab_status.read_topology(record)
    assert len(grown.workers) == 2
    [new_node] = [n for n in grown.workers
                  if n.server_id not in {w.server_id for w in before.workers}]
    assert new_node.role == 'worker' and new_node.stack_id
    store = ssh.HostKeyStore(os.path.join(STATE_DIR, 'pins.json'))
    _connect_all([t for t in _targets(grown) if t.server_id ==
                  new_node.server_id], store)

    heat.signal(path, 'worker_instance_scale_in')
    heat.wait_group(path, 'worker_instance', 1)
    [old] = before.workers                           # the oldest goes first
    shrunk = lab_status.read_topology(record)
    assert [n.server_id for n in shrunk.workers] == [new_node.server_id]
    assert old.server_id not in {v.vm_id for v in lab.vms.list()}

    # Whole-VNF heal as Tacker's infra driver runs it: delete, create.
    parameters = heat.parameters(path)
    heat.delete_and_wait(path)
    new_path = heat.create_flavour('k8s-lab-complex', SETTINGS.package_dir,
                                   'complex', parameters)
    heat.wait(new_path, 'CREATE')
    new_stack_id = new_path.split('/')[1]
    assert new_stack_id != record['stack_id']
    rebuilt = lab_status.read_topology(dict(record, stack_id=new_stack_id))
    assert len(rebuilt.masters) == 3 and len(rebuilt.workers) == 1
    old_ids = {n.server_id for n in before.all_nodes()}
    assert not old_ids & {n.server_id for n in rebuilt.all_nodes()}
    assert {v.vm_id for v in lab.vms.list()} == \
        {n.server_id for n in rebuilt.all_nodes()}
