"""The kubespray lab's Ansible server, driven over real SSH as a driver
would drive it: a key pair made on the server, its public key in each
node's authorized_keys, a known_hosts file of the nodes' real host keys,
an inventory with no password in it, and ansible-playbook run in the
kubespray directory with host-key checking forced on."""

import os
import shlex

import paramiko
import yaml

INV_DIR = '/home/ubuntu/lab-test-inventory'
KEY = INV_DIR + '/id_ed25519'
KNOWN_HOSTS = INV_DIR + '/known_hosts'
HOSTS = INV_DIR + '/hosts.yaml'
LB_PORT = 8383
SSH_ARGS = ('-o ControlMaster=auto -o ControlPersist=30m '
            '-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes'
            % KNOWN_HOSTS)


def host_key(state_dir, server_id):
    """(key type, base64) of a lab VM's real sshd host key, read from the
    VM's own files: the pinned key, not one learnt over the network."""
    from k8s_mgmt_lab.machines import registry
    vm = registry.Registry(state_dir).read()['vms'][server_id]
    path = os.path.join(vm['vm_dir'], 'upper', 'etc', 'ssh',
                        'ssh_host_ed25519_key.pub')
    with open(path) as handle:
        kind, blob = handle.read().split()[:2]
    return kind, blob


def connect(ip, username, password, state_dir, server_id):
    """A paramiko client to a lab VM, its host key pinned."""
    client = paramiko.SSHClient()
    kind, blob = host_key(state_dir, server_id)
    client.get_host_keys().add(ip, kind, paramiko.PKey.from_type_string(
        kind, __import__('base64').b64decode(blob)))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(ip, username=username, password=password, timeout=10,
                   allow_agent=False, look_for_keys=False)
    return client


def run(client, command, timeout=240):
    """(exit status, stdout, stderr) of a shell command."""
    _, out, err = client.exec_command(command, timeout=timeout)
    stdout = out.read().decode()
    stderr = err.read().decode()
    return out.channel.recv_exit_status(), stdout, stderr


def check(client, command, timeout=240):
    status, stdout, stderr = run(client, command, timeout)
    assert status == 0, '%s exited %d:\n%s\n%s' % (
        command, status, stdout[-3000:], stderr[-2000:])
    return stdout


def inventory(masters, workers, lb_ip, group_name='k8s_cluster'):
    """The inventory in the driver's shape: ``masters``/``workers`` are
    (name, ip) pairs. No password anywhere."""
    nodes = list(masters) + list(workers)
    hosts = {name: {'ansible_host': ip, 'ip': ip, 'access_ip': ip,
                    'ansible_user': 'ubuntu'} for name, ip in nodes}
    for position, (name, _) in enumerate(masters, 1):
        hosts[name]['etcd_member_name'] = 'etcd%d' % position
    members = {name: None for name, _ in masters}
    return {'all': {
        'hosts': hosts,
        'vars': {'loadbalancer_apiserver': {'address': lb_ip,
                                            'port': LB_PORT},
                 'supplementary_addresses_in_ssl_keys': [lb_ip]},
        'children': {
            'kube_control_plane': {'hosts': dict(members)},
            'etcd': {'hosts': dict(members)},
            'kube_node': {'hosts': {name: None for name, _ in workers}},
            'calico_rr': {'hosts': {}},
            group_name: {'children': {'kube_control_plane': None,
                                      'kube_node': None,
                                      'calico_rr': None}}}}}


def write_file(client, path, text, mode=0o600):
    with client.open_sftp() as sftp:
        with sftp.open(path, 'w') as handle:
            handle.write(text)
        sftp.chmod(path, mode)


def write_inventory(client, data, path=HOSTS):
    write_file(client, path, yaml.safe_dump(data, default_flow_style=False))


def playbook(client, name, *args, inventory_path=HOSTS, timeout=240):
    """(exit status, output) of one playbook run, the way the driver runs
    it: from the kubespray directory, host-key checking forced on through
    the environment, the key pair made on the server."""
    env = ('ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_SSH_ARGS=%s '
           'ANSIBLE_PRIVATE_KEY_FILE=%s'
           % (shlex.quote(SSH_ARGS), KEY))
    argv = ['ansible-playbook', '-i', inventory_path, '--become',
            '--become-user=root', name] + list(args)
    command = 'cd /opt/kubespray && %s %s' % (
        env, ' '.join(shlex.quote(a) for a in argv))
    status, stdout, stderr = run(client, command, timeout)
    return status, stdout + stderr
