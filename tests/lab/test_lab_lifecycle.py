"""The whole lab in one process: VMs behind the Keystone/Heat APIs.

Real parts: network namespaces, OpenSSH in every VM, python-heatclient and
keystoneauth against the lab APIs, the driver's topology reader and SSH layer.
Stand-ins: the OpenStack APIs themselves (served by the lab).
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


def _targets(topology, password='ubuntu'):
    return [ssh.SSHTarget(name=n.name, host=n.ssh_ip, username='ubuntu',
                          password=password, server_id=n.server_id)
            for n in topology.all_nodes()]


def _connect_all(targets, store):
    def probe(target):
        with ssh.SSHSession(target, store=store,
                            connect_deadline=10) as session:
            return session.run(ssh.Command('hostname'), step='probe',
                               timeout=10).stdout.strip()
    return parallel.run_on_nodes('test', 'ssh', targets, probe)


def test_complex_lab_read_through_heat_and_reached_over_ssh(lab):
    record = lab.up('complex', workers=2)
    topology = lab_status.read_topology(record)
    assert len(topology.masters) == 3 and len(topology.workers) == 2
    servers = {s['server_id']: s for s in lab.cloud.servers(
        record['stack_id'])}
    for node in topology.all_nodes():
        assert node.ssh_ip == servers[node.server_id]['ip']
        assert node.compute_host == servers[node.server_id]['compute_host']
        assert node.vnfc_id == record['vnfc_ids'][node.server_id]
    vip_port = lab.cloud.resource(record['stack_id'], 'vip_CP')[2]
    assert topology.vip == vip_port['fixed_ips'][0]['ip_address']
    assert topology.vip not in {n.ssh_ip for n in topology.all_nodes()}

    store = ssh.HostKeyStore(os.path.join(STATE_DIR, 'pins.json'))
    hostnames = _connect_all(_targets(topology), store)
    assert len(set(hostnames.values())) == 5   # five distinct VMs answered
    assert len(store.all()) == 5               # each pinned by server id

    report = lab_status.lab_status(SETTINGS)
    assert [vm['ssh_ok'] for vm in report['vms']] == [True] * 5
    assert report['vip'] == topology.vip


def test_healed_vm_is_accepted_and_a_changed_key_is_refused(lab):
    record = lab.up('simple', workers=1)
    stack_id = record['stack_id']
    topology = lab_status.read_topology(record)
    store = ssh.HostKeyStore(os.path.join(STATE_DIR, 'pins.json'))
    _connect_all(_targets(topology), store)

    # Heal: Heat replaces the worker's server; new id, new VM, new host key.
    old = topology.workers[0]
    new_id = lab.cloud.replace_server(stack_id, old.server_id)
    healed = lab_status.read_topology(record)
    assert healed.workers[0].server_id == new_id != old.server_id
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
    stack_id = record['stack_id']
    before = lab_status.read_topology(record)

    out = lab.cloud.scale(stack_id, 'worker_instance', 'SCALE_OUT', steps=1)
    grown = lab_status.read_topology(record)
    assert len(grown.workers) == 2
    [new_stack] = out.stack_ids
    new_node = grown.by_stack_id(new_stack)
    assert new_node is not None and new_node.role == 'worker'
    assert new_node.server_id not in {n.server_id for n in before.workers}
    store = ssh.HostKeyStore(os.path.join(STATE_DIR, 'pins.json'))
    _connect_all([t for t in _targets(grown) if t.server_id ==
                  new_node.server_id], store)

    back = lab.cloud.scale(stack_id, 'worker_instance', 'SCALE_IN', steps=1)
    [old] = before.workers                           # the oldest goes first
    assert back.stack_ids == [old.stack_id]
    shrunk = lab_status.read_topology(record)
    assert [n.server_id for n in shrunk.workers] == [new_node.server_id]
    assert old.server_id not in {v.vm_id for v in lab.vms.list()}

    new_stack_id = lab.cloud.recreate_stack(stack_id)
    assert new_stack_id != stack_id
    rebuilt = lab_status.read_topology(dict(record, stack_id=new_stack_id))
    assert len(rebuilt.masters) == 3 and len(rebuilt.workers) == 1
    old_ids = {n.server_id for n in before.all_nodes()}
    assert not old_ids & {n.server_id for n in rebuilt.all_nodes()}
    assert {v.vm_id for v in lab.vms.list()} == \
        {n.server_id for n in rebuilt.all_nodes()}
