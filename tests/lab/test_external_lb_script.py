"""configure_external_lb.sh on a lab VM, as the kubespray mode runs it on
its load-balancer VM: over the driver's SSH layer, re-run through sudo,
REAL haproxy under the lab's systemctl stand-in, in front of a stand-in
cluster (kube-apiserver stand-in on the master, kubelet stand-ins).

A VM of the ``simple`` flavour that joins no cluster plays the LB VM: it
starts with the distribution's haproxy.cfg, which the script may replace.
"""

import http.client
import json
import os
import pathlib
import ssl
import tempfile

import pytest

from k8s_mgmt import parallel
from k8s_mgmt import secrets
from k8s_mgmt import ssh
from k8s_mgmt.polling import Poll
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import status as lab_status

SCRIPTS = pathlib.Path(__file__).resolve().parents[2] / 'k8s_mgmt' / 'scripts'
UPLOADS = ('k8s_mgmt_lib.sh', 'install_k8s_cluster.sh',
           'configure_external_lb.sh')
CNI = '/etc/k8s-mgmt-lab/cni.yaml'
API_PORT = 8443
# Where the lab's systemctl stand-in keeps haproxy's master pid.
PID_FILE = '/run/standin/haproxy.pid'
SETTINGS = manager.LabSettings(
    state_dir='/var/lib/k8s-mgmt-lab-test-external-lb',
    subnet='10.254.247.0/24', bridge='k8slabel', tag='kel', compute_hosts=3)


@pytest.fixture
def lab(make_lab):
    return make_lab(SETTINGS)


class VM(object):
    def __init__(self, node, store):
        self.name, self.ip = node.name, node.ssh_ip
        self.session = ssh.SSHSession(
            ssh.SSHTarget(name=node.name, host=node.ssh_ip,
                          username='ubuntu', password='ubuntu',
                          server_id=node.server_id),
            store=store, connect_deadline=10)

    def upload(self):
        self.session.connect()
        for name in UPLOADS:
            self.session.put(str(SCRIPTS / name), '/tmp/' + name, mode=0o755)

    def run(self, *argv, stdin=None):
        return self.session.run(ssh.Command(*argv), step='run',
                                timeout=120, stdin=stdin)

    def install(self, *args, stdin=None):
        # The lab's mirror of pkgs.k8s.io, where a mode installs packages.
        mirror = (('-r', manager.repository_url(SETTINGS.subnet))
                  if args[0] in ('init', 'join-master', 'join-worker')
                  else ())
        return self.run('bash', '/tmp/install_k8s_cluster.sh', *args,
                        '-H', self.name, '-w', '60', *mirror, stdin=stdin)

    def configure_lb(self, masters, workers):
        out = self.run('bash', '/tmp/configure_external_lb.sh', '--api-port',
                       str(API_PORT), '--masters', masters,
                       '--workers', workers).stdout
        return out.splitlines()[-1]


def _cluster(lab):
    topology = lab_status.read_topology(lab.up('simple', workers=2))
    store = ssh.HostKeyStore(os.path.join(tempfile.mkdtemp(), 'pins.json'))
    vms = [VM(n, store) for n in topology.all_nodes()]
    parallel.run_on_nodes('test', 'upload', vms, VM.upload)
    [master] = [v for v in vms if v.name == topology.masters[0].name]
    worker, lb_vm = [v for v in vms if v is not master]
    master.install('init', '-a', master.ip, '-c', CNI)
    join = json.loads(master.install('print-join').stdout)
    worker.install('join-worker', '-e', '%s:6443' % master.ip, '-t',
                   join['ca_cert_hash'], '-s', '-',
                   stdin=secrets.Secret('token=%s\n' % join['token']))
    return master, worker, lb_vm


def _connection(host):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return http.client.HTTPSConnection(host, API_PORT, timeout=5,
                                       context=context)


def _readyz(conn):
    conn.request('GET', '/readyz')
    response = conn.getresponse()
    response.read()
    return response.status


def _ready_through(host):
    conn = _connection(host)
    try:
        return _readyz(conn) == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def test_the_lb_vm_serves_the_api_and_reloads_in_place(lab):
    master, worker, lb_vm = _cluster(lab)
    masters = '%s=%s' % (master.name, master.ip)
    workers = '%s=%s' % (worker.name, worker.ip)
    assert lb_vm.configure_lb(masters, workers) == 'haproxy: start'
    for _ in Poll(30.0, first=0.2, maximum=2.0):
        if _ready_through(lb_vm.ip):
            break
    assert _ready_through(lb_vm.ip)

    conn = _connection(lb_vm.ip)
    try:
        assert _readyz(conn) == 200
        sock = conn.sock
        pid = lb_vm.run('sudo', '-n', 'cat', PID_FILE).stdout
        assert lb_vm.configure_lb(masters, workers) == 'haproxy: unchanged'
        # The worker leaves: a new config, HAProxy reloaded, not restarted.
        # The reload returns once the old workers reach none of the servers
        # it left out (none here: nothing reached the worker); they carry
        # their other connections for hard-stop-after only: the API
        # connection made before still answers, is closed within that,
        # and a new one is served at once.
        assert lb_vm.configure_lb(masters, '') == 'haproxy: reload'
        assert _readyz(conn) == 200
        cfg = lb_vm.run('cat', '/etc/haproxy/haproxy.cfg').stdout
        assert 'server %s ' % worker.name not in cfg
        assert 'k8s-nodeports' not in cfg
        assert lb_vm.run('sudo', '-n', 'cat', PID_FILE).stdout == pid
        assert conn.sock is sock
        assert _ready_through(lb_vm.ip)
        closed = False
        for _ in Poll(10.0, first=0.2, maximum=0.5):
            try:
                _readyz(conn)
            except (OSError, http.client.HTTPException):
                closed = True
                break
        assert closed, 'the old worker still serves after hard-stop-after'
    finally:
        conn.close()
