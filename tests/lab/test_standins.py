"""The REAL install scripts build a Kubernetes cluster on the lab's stand-ins.

Real parts: namespace VMs with OpenSSH, scripts/install_k8s_cluster.sh and
scripts/configure_lb.sh run over the driver's SSH layer, the cluster CA and
certificates, a REAL etcd cluster (Debian etcd-server) on the masters, REAL
haproxy and keepalived (unicast VRRP), the official ``kubernetes`` Python
client, the lab's signed Kubernetes apt repository and Debian's containerd
(the install script installs both). Stand-ins: kubeadm, kubelet and
kubectl (the repository packages' payload), systemctl and the
kube-apiserver (``k8s_mgmt_lab.kube``).
"""

import json
import os
import pathlib
import socket
import subprocess
import tempfile

import kubernetes.client as kclient
import pytest

from k8s_mgmt import parallel
from k8s_mgmt import polling
from k8s_mgmt import secrets
from k8s_mgmt import ssh
from k8s_mgmt_lab import kube as standins
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import status as lab_status
from k8s_mgmt_lab.kube import layer

ROOT = pathlib.Path(__file__).resolve().parents[2]
INSTALL = str(ROOT / 'k8s_mgmt' / 'scripts' / 'install_k8s_cluster.sh')
CONFIGURE_LB = str(ROOT / 'k8s_mgmt' / 'scripts' / 'configure_lb.sh')
REMOTE_INSTALL = '/tmp/install_k8s_cluster.sh'
REMOTE_LB = '/tmp/configure_lb.sh'
# Both scripts source it from their own directory.
LIBRARY = str(ROOT / 'k8s_mgmt' / 'scripts' / 'k8s_mgmt_lib.sh')
REMOTE_LIBRARY = '/tmp/k8s_mgmt_lib.sh'
CNI = '/etc/k8s-mgmt-lab/cni.yaml'
STATE_DIR = '/var/lib/k8s-mgmt-lab-test-standins'
SETTINGS = manager.LabSettings(state_dir=STATE_DIR, subnet='10.254.231.0/24',
                               bridge='k8slabsi', tag='k8w', compute_hosts=4)


@pytest.fixture
def lab(make_lab):
    return make_lab(SETTINGS)


class Node(object):
    """One lab VM reached over the driver's SSH layer."""

    def __init__(self, node, store):
        self.name, self.ip, self.server_id = node.name, node.ssh_ip, \
            node.server_id
        target = ssh.SSHTarget(name=node.name, host=node.ssh_ip,
                               username='ubuntu', password='ubuntu',
                               server_id=node.server_id)
        self.session = ssh.SSHSession(target, store=store,
                                      connect_deadline=10)

    def upload_scripts(self):
        self.session.connect()
        self.session.put(LIBRARY, REMOTE_LIBRARY, mode=0o644)
        self.session.put(INSTALL, REMOTE_INSTALL, mode=0o755)
        self.session.put(CONFIGURE_LB, REMOTE_LB, mode=0o755)

    def install(self, mode, *args, stdin=None, check=True):
        # The lab's mirror of pkgs.k8s.io, where a mode installs packages.
        mirror = (('-r', manager.repository_url(SETTINGS.subnet))
                  if mode in ('init', 'join-master', 'join-worker',
                              'prepare') else ())
        cmd = ssh.Command('bash', REMOTE_INSTALL, mode, '-H', self.name,
                          '-w', '60', *mirror, *args)
        return self.session.run(cmd, step=mode, timeout=120, check=check,
                                stdin=stdin)

    def sudo(self, *argv, check=True):
        return self.session.run(ssh.Command('sudo', '-n', *argv),
                                step='sudo', timeout=60, check=check)


def _nodes(lab, record):
    topology = lab_status.read_topology(record)
    store = ssh.HostKeyStore(os.path.join(tempfile.mkdtemp(), 'pins.json'))
    nodes = [Node(n, store) for n in topology.all_nodes()]
    parallel.run_on_nodes('test', 'upload', nodes, Node.upload_scripts)
    masters = [n for n in nodes if n.name in {m.name for m in
                                              topology.masters}]
    workers = [n for n in nodes if n not in masters]
    return topology, masters, workers


def _join_secrets(join, token=None):
    lines = ['token=%s' % (token or join['token'])]
    if 'certificate_key' in join:
        lines.append('certificate_key=%s' % join['certificate_key'])
    return secrets.Secret('\n'.join(lines) + '\n')


def _kube(host, port, vim):
    """The official client with the VIM's bearer token and CA."""
    ca = tempfile.NamedTemporaryFile('w', suffix='.crt', delete=False)
    ca.write(vim['ca_cert'])
    ca.close()
    conf = kclient.Configuration()
    conf.host = 'https://%s:%d' % (host, port)
    conf.ssl_ca_cert = ca.name
    conf.api_key = {'authorization': vim['token']}
    conf.api_key_prefix = {'authorization': 'Bearer'}
    return kclient.CoreV1Api(kclient.ApiClient(conf))


def _ready_nodes(core):
    return {n.metadata.name: next(c.status for c in n.status.conditions
                                  if c.type == 'Ready')
            for n in core.list_node().items}


def _wait(what, check, seconds=60.0):
    for _ in polling.Poll(seconds, first=0.1, maximum=2.0):
        value = check()
        if value:
            return value
    raise AssertionError('timed out waiting for ' + what)


def test_simple_cluster_init_join_and_refused_joins(lab):
    record = lab.up('simple', workers=2)
    _topology, [master], [worker, other] = _nodes(lab, record)
    master.install('init', '-a', master.ip, '-c', CNI)
    join = json.loads(master.install('print-join').stdout)
    endpoint = '%s:6443' % master.ip

    # A wrong CA hash and a wrong token fail the join clearly and change
    # nothing on the node.
    bad_hash = 'sha256:' + '0' * 64
    bad = other.install('join-worker', '-e', endpoint, '-t', bad_hash,
                        '-s', '-', stdin=_join_secrets(join), check=False)
    assert bad.status != 0 and 'none of the public keys' in bad.stderr
    assert join['ca_cert_hash'].split(':')[1] in bad.stderr
    wrong = 'abcdef.0123456789abcdef'
    bad = other.install('join-worker', '-e', endpoint, '-t',
                        join['ca_cert_hash'], '-s', '-',
                        stdin=_join_secrets(join, token=wrong), check=False)
    assert bad.status != 0 and 'bootstrap token was rejected' in bad.stderr
    assert wrong.split('.')[1] not in bad.stderr + bad.stdout

    for node in (worker, other):
        node.install('join-worker', '-e', endpoint, '-t',
                     join['ca_cert_hash'], '-s', '-',
                     stdin=_join_secrets(join))

    vim = json.loads(master.install('token-secret').stdout)
    core = _kube(master.ip, 6443, vim)
    names = {master.name, worker.name, other.name}
    assert _wait('all Ready', lambda: _ready_nodes(core) == dict.fromkeys(
        names, 'True'))
    labels = core.read_node(master.name).metadata.labels
    assert 'node-role.kubernetes.io/control-plane' in labels
    assert core.read_node(worker.name).status.addresses[0].address == \
        worker.ip
    # Every kubelet takes TCP connections on its port, as a real one does
    # (the kubespray mode's external LB checks workers there).
    for node in (master, worker, other):
        socket.create_connection((node.ip, 10250), 5).close()

    report = lab_status.lab_status(SETTINGS, check_ssh=False)
    kube = report['kubernetes']
    assert kube['server'] == 'https://%s' % endpoint
    assert {n['name']: (n['ready'], n['roles']) for n in kube['nodes']} == {
        master.name: (True, ['control-plane']), worker.name: (True, []),
        other.name: (True, [])}
    assert [m['name'] for m in report['etcd_members']] == [master.name]
    assert 'stand-in' in report['stand_ins']['kubernetes']

    # A re-run of init and join changes nothing and succeeds.
    master.install('init', '-a', master.ip, '-c', CNI)
    worker.install('join-worker', '-e', endpoint, '-t', join['ca_cert_hash'],
                   '-s', '-', stdin=_join_secrets(join))

    # A VM that stops heartbeating turns NotReady by itself.
    lab.vms.kill(worker.server_id)
    assert _wait('worker NotReady', lambda: _ready_nodes(core)[
        worker.name] == 'Unknown', seconds=30)
    assert _ready_nodes(core)[master.name] == 'True'


def test_ha_cluster_behind_vip_survives_losing_haproxy(lab):
    record = lab.up('complex', workers=1)
    topology, masters, [worker] = _nodes(lab, record)
    vip = topology.vip
    backends = ','.join('%s=%s' % (m.name, m.ip) for m in masters)

    def configure_lb(index_and_node):
        index, node = index_and_node
        return node.session.run(ssh.Command(
            'bash', REMOTE_LB, '-v', vip + '/24', '-b', backends, '-P',
            str(150 - index), '-l', node.ip, '-r', '51', '-s', '-'),
            step='lb', timeout=60, stdin=secrets.Secret('auth_pass=lab\n'))
    for item in enumerate(masters):
        configure_lb(item)

    first = masters[0]
    first.install('init', '-a', first.ip, '-e', vip + ':16443', '-A',
                  '-c', CNI)
    for node in masters[1:]:
        join = json.loads(first.install('print-join', '-A').stdout)
        node.install('join-master', '-a', node.ip, '-e', vip + ':16443',
                     '-t', join['ca_cert_hash'], '-s', '-',
                     stdin=_join_secrets(join))
    join = json.loads(first.install('print-join').stdout)
    worker.install('join-worker', '-e', vip + ':16443', '-t',
                   join['ca_cert_hash'], '-s', '-',
                   stdin=_join_secrets(join))

    members = first.sudo('env', 'ETCDCTL_API=3', 'etcdctl',
                         '--endpoints=http://127.0.0.1:2379', 'member',
                         'list', '-w', 'json').stdout
    assert {m['name'] for m in json.loads(members)['members']} == \
        {m.name for m in masters}

    vim = json.loads(first.install('token-secret').stdout)
    core = _kube(vip, 16443, vim)
    everyone = {n.name for n in masters + [worker]}
    assert _wait('all Ready via the VIP', lambda: _ready_nodes(core) ==
                 dict.fromkeys(everyone, 'True'))
    core.create_namespaced_config_map('default', {
        'metadata': {'name': 'survivor'}, 'data': {'k': 'v'}})

    holder = _wait('a VIP holder', lambda: _vip_holder(masters, vip))
    holder.sudo('systemctl', 'stop', 'haproxy')
    new_holder = _wait('the VIP to move', lambda: (
        lambda h: h if h not in (None, holder) else None)(
            _vip_holder(masters, vip)), seconds=60)
    assert new_holder is not holder
    assert _wait('the API through the moved VIP', lambda: _answers(core))
    assert core.read_namespaced_config_map('survivor', 'default').data == \
        {'k': 'v'}
    assert set(_ready_nodes(core)) == everyone
    members = lab_status.lab_status(SETTINGS, check_ssh=False)[
        'etcd_members']
    assert {m['name'] for m in members} == {m.name for m in masters}


def _vip_holder(masters, vip):
    for node in masters:
        out = node.sudo('ip', '-o', '-4', 'addr', 'show').stdout
        if ' %s/' % vip in out:
            return node
    return None


def _answers(core):
    try:
        return bool(core.list_node().items)
    except (kclient.ApiException, OSError, Exception):
        return False


def test_standin_surface_is_labelled(lab):
    record = lab.up('simple', workers=1)
    _topology, [master], _ = _nodes(lab, record)
    # A fresh VM has none: prepare installs the newest 1.35 of the mirror.
    assert master.sudo('sh', '-c', 'command -v kubeadm',
                       check=False).status != 0
    master.install('prepare')
    assert master.sudo('kubeadm', 'version', '-o', 'short').stdout.strip() \
        == 'v1.35.1'
    assert master.sudo('dpkg', '-S', '/usr/bin/kubeadm').stdout.startswith(
        'kubeadm: ')
    head = master.sudo('head', '-2', '/usr/bin/kubeadm').stdout
    assert 'stand-in' in head
    bad = master.sudo('kubeadm', 'join', '--config', '/nonexistent',
                      check=False)
    assert bad.status == 1 and 'nonexistent' in bad.stderr
    assert master.sudo('systemctl', 'is-active', 'etcd',
                       check=False).status == 3


@pytest.mark.parametrize('tool', sorted(layer.VERSION_QUERIES))
def test_version_queries_answer_from_the_wrapper_as_python_would(
        tmp_path, tool):
    # The package wrapper's shortcut (no Python start) must print exactly
    # what the Python stand-in prints for the same query.
    wrapper = tmp_path / tool
    wrapper.write_text(layer.package_payload()(tool, '1.34.2'))
    query = layer.VERSION_QUERIES[tool][0].split()
    fast = subprocess.run(['sh', str(wrapper)] + query, capture_output=True,
                          text=True, timeout=30, check=True)
    slow = subprocess.run(
        standins.python_argv(layer.PACKAGED_TOOLS[tool]) + query,
        capture_output=True, text=True, timeout=60, check=True,
        env=dict(os.environ, PYTHONPATH=standins.python_path(),
                 **{standins.VERSION_ENV: 'v1.34.2'}))
    assert 'v1.34.2' in fast.stdout
    assert fast.stdout == slow.stdout
