"""Lab VMs against the real thing: namespaces, overlay roots, OpenSSH, sudo."""

import base64
import hashlib
import os
import socket
import subprocess
import sys
import textwrap
import uuid

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PASSWORD = 'ubuntu'  # the test lab's password (conftest.TEST_PASSWORD)


class PinnedKey(object):
    """paramiko policy accepting only the host key the lab reported."""

    def __init__(self, expected_sha256):
        self.expected = expected_sha256

    def missing_host_key(self, client, hostname, key):
        offered = 'SHA256:' + base64.b64encode(
            hashlib.sha256(key.asbytes()).digest()).decode().rstrip('=')
        if offered != self.expected:
            raise AssertionError('host key %s, lab says %s'
                                 % (offered, self.expected))


def ssh(info, password=PASSWORD):
    import paramiko
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(PinnedKey(info.host_key_sha256))
    client.connect(info.ip, username='ubuntu', password=password, timeout=5,
                   look_for_keys=False, allow_agent=False)
    return client


def ssh_run(client, command):
    _, stdout, stderr = client.exec_command(command, timeout=10)
    status = stdout.channel.recv_exit_status()
    return status, stdout.read().decode(), stderr.read().decode()


def test_ssh_password_login_and_passwordless_sudo(make_vms):
    info, = make_vms(1)
    with ssh(info) as client:
        status, out, err = ssh_run(client, 'sudo -n true && id -un && '
                                           'sudo -n id -u')
    assert status == 0, err
    assert out.split() == ['ubuntu', '0']
    assert err == ''


def test_wrong_password_is_refused(make_vms):
    import paramiko
    info, = make_vms(1)
    with pytest.raises(paramiko.AuthenticationException):
        ssh(info, password='not-' + PASSWORD)


def test_hostnames_differ_and_match_records(make_vms, vm_manager):
    a, b = make_vms(2)
    names = []
    for info in (a, b):
        with ssh(info) as client:
            names.append(ssh_run(client, 'hostname')[1].strip())
    assert names == [a.hostname, b.hostname]
    assert a.hostname != b.hostname
    assert socket.gethostname() not in names


def test_etc_hosts_write_stays_in_its_vm(make_vms, vm_manager):
    a, b = make_vms(2)
    with open('/etc/hosts') as f:
        host_before = f.read()
    line = '10.254.200.250 only-in-%s' % a.hostname
    vm_manager.exec(a.vm_id, ['sh', '-c', 'echo "$1" >> /etc/hosts', 'sh',
                              line])
    assert line in vm_manager.exec(a.vm_id, ['cat', '/etc/hosts']).stdout
    assert line not in vm_manager.exec(b.vm_id, ['cat', '/etc/hosts']).stdout
    with open('/etc/hosts') as f:
        assert f.read() == host_before
    with open(os.path.join(a.state_dir, 'upper', 'etc', 'hosts')) as f:
        assert line in f.read()


def test_process_in_one_vm_invisible_in_another(make_vms, vm_manager):
    a, b = make_vms(2)
    vm_manager.exec(a.vm_id, ['sh', '-c',
                              'sleep 1000 >/dev/null 2>&1 </dev/null &'])
    assert vm_manager.exec(a.vm_id, ['pgrep', '-x', 'sleep'],
                           check=False).returncode == 0
    assert vm_manager.exec(b.vm_id, ['pgrep', '-x', 'sleep'],
                           check=False).returncode == 1
    assert vm_manager.exec(b.vm_id, ['killall', '-0', 'sleep'],
                           check=False).returncode != 0
    # Its own PID namespace: the lab init is PID 1.
    init_args = vm_manager.exec(a.vm_id, ['ps', '-o', 'args=', '-p', '1'])
    assert 'k8s-lab-init' in init_args.stdout


def test_vms_reach_each_other_on_port_22(make_vms, vm_manager):
    a, b = make_vms(2)
    for src, dst in ((a, b), (b, a)):
        proc = vm_manager.exec(src.vm_id, [
            'bash', '-c', 'exec 3<>/dev/tcp/$1/22 && head -c 7 <&3', 'bash',
            dst.ip])
        assert proc.stdout == 'SSH-2.0'


def test_vm_has_own_host_key_and_not_the_hosts(make_vms, vm_manager):
    a, b = make_vms(2)
    assert a.host_key_sha256 != b.host_key_sha256
    assert vm_manager.host_key_fingerprints(a.vm_id) == [a.host_key_sha256]
    listing = vm_manager.exec(a.vm_id, ['ls', '/etc/ssh']).stdout.split()
    assert [n for n in listing if n.startswith('ssh_host_')] == [
        'ssh_host_ed25519_key', 'ssh_host_ed25519_key.pub']
    with open('/etc/passwd') as f:
        assert not any(entry.startswith('ubuntu:') for entry in f)


def test_recreated_vm_gets_a_new_host_key(make_vms, vm_manager):
    old, = make_vms(1)
    vm_manager.destroy(old.vm_id)
    new = vm_manager.create(str(uuid.uuid4()), old.hostname, old.ip)
    try:
        assert new.host_key_sha256 != old.host_key_sha256
        with ssh(new) as client:  # pinned to the new key
            assert ssh_run(client, 'true')[0] == 0
        with pytest.raises(AssertionError, match='host key'):
            ssh(old)
    finally:
        vm_manager.destroy(new.vm_id)


def test_kill_stops_sshd_but_keeps_the_record(make_vms, vm_manager):
    info, = make_vms(1)
    vm_manager.kill(info.vm_id)
    with pytest.raises(OSError) as refused:
        socket.create_connection((info.ip, 22), timeout=2).close()
    # A crashed VM answers nothing: no reset from a kernel still holding
    # its addresses (it would also keep answering for a VRRP VIP).
    assert not isinstance(refused.value, ConnectionRefusedError)
    killed = vm_manager.get(info.vm_id)
    assert killed.init_pid is None and killed.ip == info.ip
    assert not os.path.exists('/proc/%d' % info.init_pid)
    assert os.path.exists('/run/netns/%s' % info.netns)


def test_destroy_removes_netns_veth_and_files(make_vms, vm_manager,
                                              lab_config):
    info, = make_vms(1)
    short = info.netns.split('-', 1)[1]
    vm_manager.destroy(info.vm_id)
    assert not os.path.exists('/run/netns/%s' % info.netns)
    assert not os.path.exists('/sys/class/net/%sh%s'
                              % (lab_config['tag'], short))
    assert not os.path.exists(info.state_dir)
    assert not os.path.exists('/proc/%d' % info.init_pid)
    assert info.vm_id not in [v.vm_id for v in vm_manager.list()]


def test_duplicate_ip_is_refused(make_vms, vm_manager):
    from k8s_mgmt_lab.errors import LabError
    info, = make_vms(1)
    with pytest.raises(LabError, match='already used'):
        vm_manager.create(str(uuid.uuid4()), 'dup', info.ip)


def test_short_names_avoid_collisions(tmp_path):
    from k8s_mgmt_lab.machines import registry as registry_mod
    registry = registry_mod.Registry(str(tmp_path))
    first = registry.claim_vm('a', iter(['aaaa1111', 'bbbb2222']),
                              {'ip': '1'})
    second = registry.claim_vm('b', iter(['aaaa1111', 'cccc3333']),
                               {'ip': '2'})
    assert (first, second) == ('aaaa1111', 'cccc3333')


CRASHING_CONTROLLER = textwrap.dedent('''
    import os, sys, uuid
    from k8s_mgmt_lab.machines import net, vm
    state_dir, subnet, bridge, tag = sys.argv[1:5]
    network = net.LabNetwork(state_dir, subnet=subnet, bridge=bridge, tag=tag)
    network.up()
    manager = vm.VMManager(network, state_dir)
    ips = network.free_ips([])[:2]
    manager.create_many([(str(uuid.uuid4()), 'crash%d' % i, ip)
                         for i, ip in enumerate(ips)])
    manager.exec(manager.list()[0].vm_id,
                 ['sh', '-c', 'sleep 1000 >/dev/null 2>&1 </dev/null &'])
    os._exit(0)  # the controller dies without destroying anything
''')


@pytest.mark.parametrize('in_process', [False, True])
def test_teardown_after_controller_crash(in_process, lab_config,
                                         assert_lab_clean):
    from k8s_mgmt_lab.machines import cleanup
    state_dir = lab_config['state_dir'] + '-crash'
    args = [state_dir, '10.254.214.0/24', 'k8slabc0', 'kcr']
    cleanup.teardown(state_dir, tag='kcr', bridge='k8slabc0')
    try:
        if in_process:
            _create_and_forget(*args)
        else:
            subprocess.run([sys.executable, '-c', CRASHING_CONTROLLER] + args,
                           check=True, timeout=30,
                           cwd=REPO_ROOT)
        left = cleanup.find_leftovers(state_dir, 'kcr', 'k8slabc0')
        assert len(left['netns']) == 2 and left['processes']
        assert left['mounts'] and 'k8slabc0' in left['links']
    finally:
        cleanup.teardown(state_dir)  # tag and bridge from the registry
    assert_lab_clean(state_dir, 'kcr', 'k8slabc0')


def _create_and_forget(state_dir, subnet, bridge, tag):
    from k8s_mgmt_lab.machines import net
    from k8s_mgmt_lab.machines import vm
    network = net.LabNetwork(state_dir, subnet=subnet, bridge=bridge, tag=tag)
    network.up()
    manager = vm.VMManager(network, state_dir)
    ips = network.free_ips([])[:2]
    manager.create_many([(str(uuid.uuid4()), 'drop%d' % i, ip)
                         for i, ip in enumerate(ips)])
    del manager, network


def test_create_many_is_all_or_nothing(vm_manager, lab_network):
    from k8s_mgmt_lab.errors import LabError
    ip = lab_network.free_ips([v.ip for v in vm_manager.list()])[0]
    before = vm_manager.list()
    with pytest.raises(LabError, match='already used'):
        vm_manager.create_many([(str(uuid.uuid4()), 'twin-a', ip),
                                (str(uuid.uuid4()), 'twin-b', ip)])
    assert vm_manager.list() == before
    assert vm_manager.registry.read()['vms'].keys() == {
        v.vm_id for v in before}


def test_extra_layer_is_visible_in_the_vm(vm_manager, lab_network, tmp_path):
    from k8s_mgmt_lab.machines import vm
    tool = tmp_path / 'usr' / 'local' / 'bin' / 'lab-stand-in'
    tool.parent.mkdir(parents=True)
    tool.write_text('#!/bin/sh\necho stand-in "$@"\n')
    tool.chmod(0o755)
    manager = vm.VMManager(lab_network, vm_manager.state_dir,
                           extra_layers=[str(tmp_path)])
    ip = lab_network.free_ips([v.ip for v in manager.list()])[0]
    info = manager.create(str(uuid.uuid4()), 'layered', ip)
    try:
        out = manager.exec(info.vm_id, ['lab-stand-in', 'ok']).stdout
        assert out == 'stand-in ok\n'
        manager.exec(info.vm_id, ['sh', '-c', 'echo x > /usr/local/bin/new'])
        assert not (tmp_path / 'usr' / 'local' / 'bin' / 'new').exists()
    finally:
        manager.destroy(info.vm_id)
