"""A real Ansible server and real nodes on loopback for the kubespray tests.

One OpenSSH sshd on 127.0.0.1 (tests/helpers/openssh.py) plays both: the
Ansible server (our SSH session logs in as root with the operator's key and
runs the real ansible-core of this virtualenv, put on the session's PATH by
sshd's SetEnv) and every node of the inventory (Ansible logs in to it as
root with the cluster's key pair, made on the "server" by
AnsibleServer.ensure_key_pair and authorized by authorize_key_command). The
session's HOME is a directory of the test, so nothing is written to the
real root's home. The fake kubespray directory holds an ansible.cfg as
hostile as kubespray's own (host_key_checking = False, ssh_args with
UserKnownHostsFile=/dev/null and StrictHostKeyChecking=no) and tiny
playbooks written by the tests.

The driver refuses a loopback Ansible server and an inventory directory
with a world-writable directory on its path, so the site's target is built
by hand (not by ansible_server.target_for) and the inventory lives in a
private directory under the home (tests/helpers/private_dirs.py), not in
the test's tmp_path under /tmp. The first contact with the "server" checks
its key against the fingerprint ssh-keygen -lf prints for it.
"""

import functools
import os
import subprocess
import sys
import types

import pytest
from oslo_config import fixture as config_fixture

from k8s_mgmt import conf
from k8s_mgmt import secrets
from k8s_mgmt.ansible import ansible_server
from k8s_mgmt.ansible import inventory
from k8s_mgmt.ansible import server_trust
from k8s_mgmt.params import model
from k8s_mgmt.ssh import client
from k8s_mgmt.ssh import hostkeys
from tests.helpers import openssh
from tests.helpers.private_dirs import private_dir

if not openssh.available():
    pytest.skip(openssh.SKIP_REASON, allow_module_level=True)

BIN = os.path.dirname(sys.executable)
NODES = (('master1', 'srv-m1'), ('worker1', 'srv-w1'), ('worker2', 'srv-w2'))

ANSIBLE_CFG = """\
[defaults]
host_key_checking = False
interpreter_python = /usr/bin/python3
stdout_callback = default
forks = 5

[ssh_connection]
ssh_args = -o ControlMaster=auto -o ControlPersist=30m \
-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no
"""


def write_playbook(site, name, tasks, hosts='all'):
    """A playbook ``name`` in the fake kubespray directory."""
    text = '- hosts: %s\n  gather_facts: false\n  tasks:\n' % hosts
    text += ''.join('    %s\n' % line for line in tasks.strip().splitlines())
    (site.root / name).write_text(text)
    return name


def keygen_fingerprint(pub_path):
    """The SHA256:... word of what ``ssh-keygen -lf`` prints for a key."""
    done = subprocess.run(['ssh-keygen', '-lf', str(pub_path)],
                          capture_output=True, text=True, check=True,
                          timeout=30)
    return done.stdout.split()[1]


def new_cluster(site, instance_id):
    """An AnsibleServer of its own (directory, key pair, known_hosts,
    inventory) on the shared site, its key authorized on the nodes."""
    server = ansible_server.AnsibleServer(site.session, site.params,
                                          instance_id)
    server.prepare()
    public = server.ensure_key_pair()
    site.session.run(ansible_server.authorize_key_command(public))
    server.write_known_hosts(ansible_server.known_hosts_lines(
        site.nodes, site.store))
    server.write_inventory(inventory.build(
        site.nodes[:1], site.nodes[1:], lb_address='127.0.0.1',
        lb_port=6443, users={n.name: 'root' for n in site.nodes}))
    return server


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('ks')
    settings = config_fixture.Config(conf.CONF)
    settings.setUp()
    settings.config(group='k8s_mgmt', connect_deadline=10.0,
                    connect_timeout=3.0, command_timeout=60.0)
    home = tmp / 'home'
    home.mkdir(mode=0o700)
    root = tmp / 'kubespray'
    root.mkdir(mode=0o700)
    (root / 'ansible.cfg').write_text(ANSIBLE_CFG)
    setenv = 'SetEnv PATH=%s:/usr/bin:/bin HOME=%s' % (BIN, home)
    with openssh.running_sshd(
            tmp, extra_config=[setenv],
            extra_authorized_files=[home / '.ssh' / 'authorized_keys']) \
            as sshd, private_dir('ks-') as private:
        store = hostkeys.HostKeyStore(str(tmp / 'pins' / 'host_keys.json'))
        params = model.AnsibleParams(
            ip_address='127.0.0.1', username='root',
            ssh_private_key=secrets.Secret(sshd.client_private),
            kubespray_root_path=str(root),
            transferring_inventory_path=str(private / 'inv'),
            host_key_fingerprint=keygen_fingerprint(sshd.dir / 'host_key.pub'))
        target = client.SSHTarget(
            ansible_server.NAME, '127.0.0.1', 'root', port=sshd.port,
            private_key=secrets.Secret(sshd.client_private))
        nodes = [types.SimpleNamespace(name=name, server_id=server_id,
                                       ssh_ip='127.0.0.1',
                                       nic_ip='127.0.0.1',
                                       ssh_port=sshd.port)
                 for name, server_id in NODES]
        # The driver pins each node's key on its first SSH contact.
        for node in nodes:
            node_target = client.SSHTarget(
                node.name, '127.0.0.1', 'root', port=sshd.port,
                private_key=secrets.Secret(sshd.client_private),
                server_id=node.server_id)
            with client.SSHSession(node_target, store=store,
                                   policy=hostkeys.POLICY_TOFU):
                pass
        try:
            with server_trust.open_session(
                    target, params, store,
                    policy=hostkeys.POLICY_CONSOLE) as session:
                result = types.SimpleNamespace(
                    tmp=tmp, home=home, root=root, sshd=sshd, store=store,
                    params=params, target=target, nodes=nodes,
                    session=session, inv=private / 'inv')
                result.write_playbook = functools.partial(write_playbook,
                                                          result)
                result.new_cluster = functools.partial(new_cluster, result)
                result.cluster = new_cluster(result, 'test-instance')
                yield result
        finally:
            # Ansible's master connections (ControlPersist) and anything a
            # test left running: their command lines name the test's dirs.
            openssh.kill_groups_of(str(private / 'inv'))
            openssh.kill_groups_of('k8s-mgmt-hang-marker')
            settings.cleanUp()
