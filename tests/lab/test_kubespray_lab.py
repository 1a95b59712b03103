"""``k8s-mgmt lab up --flavour kubespray``: the Ansible server and the
stand-in kubespray playbooks, run for real.

Real: the lab VMs with OpenSSH, ansible-core on the Ansible server (its SSH
connections to the nodes, become root, host-key checking against a
known_hosts of the nodes' real keys), HAProxy on the external LB VM, etcd.
Stand-ins: the kubespray playbooks themselves (the lab's, with kubespray's
names and refusals) and kubeadm/kubelet/the API server on the nodes.
The test plays the driver's part by hand: key pair on the server, public
key in authorized_keys, inventory without passwords.
"""

import json

import pytest

from lab_cli import LabCLI
import kubespray_server as ks

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-kubespray'
SUBNET = '10.254.213.0/24'
k8s_mgmt = LabCLI(STATE_DIR, bridge='k8slabks', tag='kks')


@pytest.fixture(scope='module')
def lab(assert_lab_clean):
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', 'kubespray', '--masters', '1',
                 '--workers', '2', '--subnet', SUBNET)
        status = json.loads(k8s_mgmt('status', '--json').stdout)
        yield status


def _by_role(status, role):
    return [vm for vm in status['vms'] if vm['role'] == role]


@pytest.fixture(scope='module')
def server(lab):
    """A client on the Ansible server, with a key pair there, its public
    key on every node and a known_hosts of the nodes' pinned host keys;
    and the external LB forwarding to the master, as the driver sets it
    up before cluster.yml."""
    srv = lab['ansible_server']
    client = ks.connect(srv['ip'], srv['username'], 'ubuntu', STATE_DIR,
                        srv['vm_id'])
    ks.check(client, 'rm -rf {d} && mkdir -m 0700 {d} && ssh-keygen -q -t '
             'ed25519 -N "" -f {k}'.format(d=ks.INV_DIR, k=ks.KEY))
    public = ks.check(client, 'cat %s.pub' % ks.KEY).strip()
    known = []
    for vm in _by_role(lab, 'master') + _by_role(lab, 'worker'):
        kind, blob = ks.host_key(STATE_DIR, vm['server_id'])
        known.append('%s %s %s' % (vm['ip'], kind, blob))
        node = ks.connect(vm['ip'], 'ubuntu', 'ubuntu', STATE_DIR,
                          vm['server_id'])
        with node:
            ks.check(node, 'mkdir -p -m 0700 ~/.ssh && echo %s >> '
                     '~/.ssh/authorized_keys && chmod 0600 '
                     '~/.ssh/authorized_keys' % ks.shlex.quote(public))
    ks.write_file(client, ks.KNOWN_HOSTS, '\n'.join(known) + '\n')
    [lb] = _by_role(lab, 'external_lb')
    backends = ''.join('  server m%d %s:6443 check\n' % (i, vm['ip'])
                       for i, vm in enumerate(_by_role(lab, 'master')))
    config = ('defaults\n  mode tcp\n  timeout connect 5s\n'
              '  timeout client 1m\n  timeout server 1m\n'
              'frontend api\n  bind %s:%d\n  default_backend masters\n'
              'backend masters\n%s' % (lb['ip'], ks.LB_PORT, backends))
    with ks.connect(lb['ip'], 'ubuntu', 'ubuntu', STATE_DIR,
                    lb['server_id']) as node:
        ks.check(node, 'echo %s | sudo tee /etc/haproxy/lab-test.cfg '
                 '>/dev/null && sudo haproxy -D -f /etc/haproxy/lab-test.cfg'
                 % ks.shlex.quote(config))
    with client:
        yield client


def _names(lab):
    masters = [('master-%d' % i, vm['ip'])
               for i, vm in enumerate(_by_role(lab, 'master'))]
    workers = [('worker-%d' % i, vm['ip'])
               for i, vm in enumerate(_by_role(lab, 'worker'))]
    return masters, workers


def _runs():
    from k8s_mgmt_lab.machines import ansible_server
    from k8s_mgmt_lab import manager
    from k8s_mgmt_lab.machines import registry
    settings = manager.LabSettings(state_dir=STATE_DIR)
    return ansible_server.playbook_runs(registry.Registry(STATE_DIR),
                                        manager.read_record(settings))


def _nodes(server, lab):
    """{node name: Ready?} through the API server stand-in, asked on the
    master with kubectl."""
    master = _by_role(lab, 'master')[0]
    with ks.connect(master['ip'], 'ubuntu', 'ubuntu', STATE_DIR,
                    master['server_id']) as node:
        text = ks.check(node, 'sudo kubectl --kubeconfig '
                        '/etc/kubernetes/admin.conf get nodes -o json')
    return {item['metadata']['name']: any(
        c['type'] == 'Ready' and c['status'] == 'True'
        for c in item['status'].get('conditions', []))
        for item in json.loads(text)['items']}


def test_lab_up_gives_an_ansible_server_and_an_external_lb(lab):
    [srv] = _by_role(lab, 'ansible_server')
    assert srv['ip'] and srv['username'] == 'ubuntu' and srv['ssh_ok']
    assert srv['kubespray_root_path'] == '/opt/kubespray'
    assert 'not kubespray' in srv['stand_in']
    assert srv['server_id'] is None  # not a Heat resource
    [lb] = _by_role(lab, 'external_lb')
    assert lb['ssh_ok'] and lb['ip'] != srv['ip']
    assert len(_by_role(lab, 'master')) == 1
    assert len(_by_role(lab, 'worker')) == 2


def test_cluster_scale_and_removal_through_real_ansible(lab, server):
    masters, workers = _names(lab)
    # 1. cluster.yml on the master and the first worker.
    ks.write_inventory(server, ks.inventory(masters, workers[:1],
                                            _by_role(lab, 'external_lb')[0][
                                                'ip']))
    status, out = ks.playbook(server, 'cluster.yml')
    assert status == 0, out[-3000:]
    assert _nodes(server, lab) == {'master-0': True, 'worker-0': True}
    [run] = _runs()
    assert run['playbook'] == 'cluster.yml' and not run['failed']
    assert run['ssh']['host_key_checking'] is True
    assert 'StrictHostKeyChecking=yes' in run['ssh']['ssh_args']
    assert 'UserKnownHostsFile=/dev/null' not in run['ssh']['ssh_args']
    assert run['ssh']['password'] is False and not any(
        run['host_vars'].values())
    assert run['connected'] == ['master-0', 'worker-0']

    # 2. scale.yml --limit: only the new worker is touched.
    ks.write_inventory(server, ks.inventory(masters, workers,
                                            _by_role(lab, 'external_lb')[0][
                                                'ip']))
    status, out = ks.playbook(server, 'scale.yml', '--limit=worker-1')
    assert status == 0, out[-3000:]
    scale = _runs()[-1]
    assert scale['limit'] == 'worker-1'
    assert scale['hosts'] == scale['connected'] == ['worker-1']
    assert scale['delegated_to'] == ['master-0']  # join data only
    assert _nodes(server, lab)['worker-1'] is True

    # 3. remove-node.yml refuses without the confirmation, fast.
    status, out = ks.playbook(server, 'remove-node.yml', '-e',
                              'node=worker-1')
    assert status != 0 and 'skip_confirmation=yes' in out
    assert _runs()[-1]['connected'] == []
    assert 'worker-1' in _nodes(server, lab)
    status, out = ks.playbook(server, 'remove-node.yml', '-e',
                              'node=worker-1', '-e', 'skip_confirmation=yes')
    assert status == 0, out[-3000:]
    assert set(_nodes(server, lab)) == {'master-0', 'worker-0'}
    assert _runs()[-1]['connected'] == ['worker-1']


def test_a_host_key_mismatch_stops_ansible(lab, server):
    """The run checks host keys: with a known_hosts that pins another key
    for the worker, Ansible refuses to talk to it."""
    masters, workers = _names(lab)
    bad = ks.INV_DIR + '/bad_known_hosts'
    good = ks.check(server, 'cat %s' % ks.KNOWN_HOSTS)
    other = ks.check(server, 'cat %s.pub' % ks.KEY).split()[:2]
    lines = [('%s %s %s' % (workers[0][1], other[0], other[1])
              if line.startswith(workers[0][1] + ' ') else line)
             for line in good.splitlines()]
    ks.write_file(server, bad, '\n'.join(lines) + '\n')
    # Without the open master connections, which would skip the check.
    ks.check(server, 'rm -f ~/.ansible/cp/* && cp %s %s.good && cp %s %s'
             % (ks.KNOWN_HOSTS, ks.KNOWN_HOSTS, bad, ks.KNOWN_HOSTS))
    try:
        status, out = ks.playbook(server, 'playbooks/facts.yml')
    finally:
        ks.check(server, 'mv %s.good %s' % (ks.KNOWN_HOSTS, ks.KNOWN_HOSTS))
    assert status != 0
    assert 'worker-0' in out and 'UNREACHABLE' in out


def test_scale_needs_the_facts_of_the_hosts_outside_the_limit(lab, server):
    ks.check(server, 'rm -f /tmp/worker-0')  # its cached facts
    status, out = ks.playbook(server, 'scale.yml', '--limit=worker-1')
    assert status != 0 and 'No cached facts for worker-0' in out
    assert _runs()[-1]['connected'] == []
    status, out = ks.playbook(server, 'playbooks/facts.yml')
    assert status == 0, out[-3000:]
    assert ks.check(server, 'test -s /tmp/worker-0 && echo cached') == (
        'cached\n')


def test_an_inventory_with_the_removed_group_name_fails(lab, server):
    masters, workers = _names(lab)
    path = ks.INV_DIR + '/old.yaml'
    ks.write_inventory(server, ks.inventory(
        masters, workers, _by_role(lab, 'external_lb')[0]['ip'],
        group_name='k8s-cluster'), path=path)
    status, out = ks.playbook(server, 'cluster.yml', inventory_path=path)
    assert status != 0 and "'k8s-cluster'" in out and 'k8s_cluster' in out
    assert _runs()[-1]['connected'] == []
