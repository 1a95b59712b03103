"""The kubespray mode end to end on the lab: ``mgmt-drivers-kubespray``
(loaded through its entry point, as the flavour's VNFD names it) called as
Tacker calls it, every operation from the CLI.

Real: the lab VMs with OpenSSH, ansible-core on the Ansible server (its
SSH connections to the nodes with the key pair the driver made there,
become root, host keys checked against the known_hosts the driver wrote),
the event callback the driver uploads, HAProxy on the external LB VM
configured by configure_external_lb.sh, etcd, the kubernetes client.
Stand-ins: kubespray's playbooks (the lab's, with kubespray's names,
arguments and refusals), kubeadm/kubelet/the API server, OpenStack. The
node VMs start with none of them: cluster.yml installs Debian's real
containerd and downloads the kubeadm/kubelet/kubectl stand-ins from the
lab's mirror of dl.k8s.io, as kubespray downloads the real ones.

One lab (3 masters, 2 workers) is built once; the tests run in order,
each leaving the lab the next one uses.
"""

import json
import os
import re

import pytest
import yaml

from k8s_mgmt_lab import manager
from k8s_mgmt_lab.machines import ansible_server
from k8s_mgmt_lab.machines import registry as registry_mod

from lab_cli import LabCLI

SETTINGS = manager.LabSettings(
    state_dir='/var/lib/k8s-mgmt-lab-test-kubespray-e2e',
    subnet='10.254.207.0/24', bridge='k8slabt7', tag='k8e')
k8s_mgmt = LabCLI(SETTINGS.state_dir, bridge=SETTINGS.bridge,
                  tag=SETTINGS.tag, timeout=600)
RUN_LINE = re.compile(r'\] ==> (.*)$')
LB_PORT = 8383


@pytest.fixture(scope='module')
def kubespray_lab(assert_lab_clean):
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', 'kubespray', '--masters', '3',
                 '--workers', '2', '--subnet', SETTINGS.subnet)
        yield


def status():
    return json.loads(k8s_mgmt('status', '--json').stdout)


def vms(role, found=None):
    return [vm for vm in (found or status())['vms'] if vm['role'] == role]


def runs():
    """Every playbook run on the Ansible server so far (the lab's audit)."""
    record = manager.read_record(SETTINGS)
    return ansible_server.playbook_runs(
        registry_mod.Registry(SETTINGS.state_dir), record)


def on_vm(name, *command):
    return k8s_mgmt('exec', name, '--', *command).stdout


def lb_config():
    [lb] = vms('external_lb')
    return on_vm(lb['name'], 'cat', '/etc/haproxy/haproxy.cfg')


# The lab's own audit (its callback and log) on the Ansible server: not
# written by the driver or by Ansible's runs.
LAB_AUDIT = ('usr/share/ansible/plugins/callback/', 'var/log/k8s-mgmt-lab/')


def server_upper(vm_id=None):
    """The Ansible server VM's own files (its overlay's upper dir)."""
    vm_id = vm_id or manager.read_record(SETTINGS)['ansible_server']['vm_id']
    vm = registry_mod.Registry(SETTINGS.state_dir).read()['vms'][vm_id]
    return os.path.join(vm['vm_dir'], 'upper')


def server_files():
    """{path: bytes} of every file the Ansible server VM wrote, but the
    lab's audit."""
    upper = server_upper()
    found = {}
    for dirpath, _dirs, names in os.walk(upper):
        for name in names:
            path = os.path.join(dirpath, name)
            relative = os.path.relpath(path, upper)
            if os.path.isfile(path) and not os.path.islink(path) and \
                    not relative.startswith(LAB_AUDIT):
                with open(path, 'rb') as handle:
                    found[relative] = handle.read()
    return found


def inventory_root():
    return status()['ansible_server']['transferring_inventory_path']


def ready_nodes(found):
    return sorted(n['name'] for n in found['kubernetes']['nodes']
                  if n.get('ready'))


def test_instantiate_builds_the_cluster_behind_the_lb(kubespray_lab):
    """``lab plan`` shows the kubespray phases; instantiate runs them line
    for line; the API answers through the LB for every node."""
    planned = [p['title'] for p in json.loads(
        k8s_mgmt('plan', 'instantiate', '--json').stdout)]
    assert planned.index('Configure the external load balancer') < \
        planned.index('Run cluster.yml')
    proc = k8s_mgmt('instantiate')
    ran = [m.group(1) for m in map(RUN_LINE.search,
                                   proc.stderr.splitlines()) if m]
    assert ran == planned
    assert 'cluster.yml: TASK ' in proc.stderr   # streamed per task
    found = status()
    [lb] = vms('external_lb', found)
    endpoint = 'https://%s:%d' % (lb['ip'], LB_PORT)
    assert found['kubernetes']['server'] == endpoint
    names = sorted(vm['name'] for vm in vms('master', found) +
                   vms('worker', found))
    assert ready_nodes(found) == names
    config = lb_config()
    for master in vms('master', found):
        assert '%s:6443' % master['ip'] in config
    for worker in vms('worker', found):
        assert worker['name'] in config
    [run] = runs()
    assert run['playbook'] == 'cluster.yml' and not run['failed']
    assert run['argv'][-3:] == ['--become', '--become-user=root',
                                'cluster.yml']
    assert sorted(run['connected']) == names


# What a node got from cluster.yml, read in one exec (each costs a CLI
# start): one "key=value" line per fact.
NODE_FACTS = r"""
echo "kubeadm_version=$(/usr/local/bin/kubeadm version -o short)"
echo "modes=$(stat -c %a /usr/local/bin/kubeadm /usr/local/bin/kubelet \
    /usr/local/bin/kubectl | tr '\n' ' ')"
echo "usr_bin_kubeadm=$(test -e /usr/bin/kubeadm && echo present)"
echo "containerd_package=$(dpkg-query -W -f '${Status}|${Maintainer}' \
    containerd)"
echo "containerd_active=$(/usr/local/bin/systemctl is-active containerd)"
echo "ctr_version=$(ctr version 2>&1 | grep -c Version:)"
echo "systemd_cgroup=$(grep -E '^\s*SystemdCgroup = ' \
    /etc/containerd/config.toml | tr -d ' ')"
echo "kubelet_exec_start=$(grep '^ExecStart=' \
    /etc/systemd/system/kubelet.service | cut -d' ' -f1)"
"""


def node_facts(name):
    return dict(line.split('=', 1) for line in
                on_vm(name, 'sh', '-c', NODE_FACTS).splitlines())


def stand_in_default(name):
    """A kubespray download variable's default in the lab's stand-in."""
    path = os.path.join(ansible_server.STANDIN_DIR, 'roles', 'lab_kubeadm',
                        'defaults', 'main', 'download.yml')
    with open(path) as handle:
        return yaml.safe_load(handle)[name]


def test_nodes_got_containerd_and_the_binaries_as_kubespray_puts_them(
        kubespray_lab):
    """cluster.yml gave a master and a worker what kubespray's container
    engine and download roles give a node: kubeadm of kube_version in
    /usr/local/bin (none in /usr/bin: no package), Debian's containerd
    running with SystemdCgroup = true, a kubelet unit of kubespray's."""
    found = status()
    version = stand_in_default('kube_version')
    for node in vms('master', found)[:1] + vms('worker', found)[:1]:
        facts = node_facts(node['name'])
        assert facts == {
            'kubeadm_version': version,
            'modes': '755 755 755 ',
            'usr_bin_kubeadm': '',
            'containerd_package': facts['containerd_package'],
            'containerd_active': 'active',
            'ctr_version': '2',             # client and server
            'systemd_cgroup': 'SystemdCgroup=true',
            'kubelet_exec_start': 'ExecStart=/usr/local/bin/kubelet',
        }, node['name']
        assert facts['containerd_package'].startswith(
            'install ok installed|Debian '), facts
    # Through the API too: every kubelet is the downloaded kube_version.
    assert on_vm(vms('master', found)[0]['name'],
                 '/usr/local/bin/kubectl', '--kubeconfig',
                 '/etc/kubernetes/admin.conf', 'get', 'nodes', '-o',
                 'jsonpath={.items[*].status.nodeInfo.kubeletVersion}'
                 ).split() == [version] * len(ready_nodes(found))


def test_no_password_or_host_key_bypass_on_the_ansible_server(
        kubespray_lab):
    """The inventory holds no credentials, the key pair was made on the
    server (mode 0600, in a 0700 directory), and no file the server wrote
    carries a password variable."""
    files = server_files()
    inventories = {p: d for p, d in files.items()
                   if p.endswith('/hosts.yaml') and 'k8s-mgmt-' in p}
    assert len(inventories) == 1
    inventory = yaml.safe_load(list(inventories.values())[0])
    keys = set()

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                keys.add(key)
                walk(item)
    walk(inventory)
    assert not [k for k in keys if 'pass' in k.lower()]
    assert 'k8s-cluster' not in keys and 'k8s_cluster' in keys
    for path, data in files.items():
        for word in (b'ansible_password', b'ansible_ssh_pass',
                     b'ansible_become_pass', b'ansible_become_password'):
            assert word not in data, path
    [directory] = {os.path.dirname(p) for p in inventories}
    listing = on_vm('ansible-server', 'stat', '-c', '%a %n',
                    '/' + directory, '/' + directory + '/hosts.yaml',
                    '/' + directory + '/id_ed25519',
                    '/' + directory + '/known_hosts')
    modes = [line.split()[0] for line in listing.splitlines()]
    assert modes == ['700', '600', '600', '600']


def test_scale_out_touches_only_the_new_worker(kubespray_lab):
    before = {vm['name'] for vm in vms('worker')}
    count = len(runs())
    k8s_mgmt('scale', '--type', 'SCALE_OUT')
    found = status()
    new = {vm['name'] for vm in vms('worker', found)} - before
    assert len(new) == 1
    facts, scale = runs()[count:]
    assert facts['playbook'] == 'playbooks/facts.yml'
    assert scale['playbook'] == 'scale.yml'
    assert scale['argv'][-2:] == ['--limit=%s' % list(new)[0], 'scale.yml']
    # The play recap: the only host scale.yml connected to is the new one.
    assert set(scale['connected']) == new
    assert set(new) <= set(ready_nodes(found))
    assert list(new)[0] in lb_config()


def test_scale_in_removes_the_worker_from_lb_cluster_and_inventory(
        kubespray_lab):
    before = {vm['name'] for vm in vms('worker')}
    count = len(runs())
    k8s_mgmt('scale', '--type', 'SCALE_IN')
    found = status()
    gone = before - {vm['name'] for vm in vms('worker', found)}
    assert len(gone) == 1
    name = list(gone)[0]
    [remove] = runs()[count:]
    assert remove['playbook'] == 'remove-node.yml'
    assert remove['extra_vars'] == ['node=%s' % name,
                                    'skip_confirmation=yes']
    assert name not in ready_nodes(found)
    assert name not in [n['name'] for n in found['kubernetes']['nodes']]
    assert name not in lb_config()
    inventory = on_vm('ansible-server', 'sh', '-c', 'cat %s/k8s-mgmt-*/'
                      'hosts.yaml' % inventory_root())
    assert name not in inventory


def test_heal_of_a_worker_replaces_it(kubespray_lab):
    found = status()
    worker = vms('worker', found)[0]
    k8s_mgmt('heal', '--vnfc', worker['vnfc_id'])
    after = status()
    replaced = [vm for vm in vms('worker', after)
                if vm['vnfc_id'] == worker['vnfc_id']]
    assert replaced and replaced[0]['name'] != worker['name']
    assert replaced[0]['name'] in ready_nodes(after)
    assert worker['name'] not in [n['name'] for n in
                                  after['kubernetes']['nodes']]
    books = [r['playbook'] for r in runs()[-3:]]
    assert books == ['remove-node.yml', 'playbooks/facts.yml', 'scale.yml']


def test_heal_of_a_dead_worker_removes_it_without_reset(kubespray_lab):
    """A crashed worker cannot be reset: remove-node.yml is told so
    (reset_nodes=false, allow_ungraceful_removal=true), and only that."""
    worker = vms('worker')[-1]
    k8s_mgmt('kill', '--vnfc', worker['vnfc_id'])
    count = len(runs())
    k8s_mgmt('heal', '--vnfc', worker['vnfc_id'])
    remove = runs()[count]
    assert remove['playbook'] == 'remove-node.yml'
    assert remove['extra_vars'] == [
        'node=%s' % worker['name'], 'skip_confirmation=yes',
        'reset_nodes=false', 'allow_ungraceful_removal=true']
    assert worker['name'] not in remove['connected']
    after = status()
    [replaced] = [vm for vm in vms('worker', after)
                  if vm['vnfc_id'] == worker['vnfc_id']]
    assert replaced['name'] in ready_nodes(after)


def test_heal_of_the_lb_keeps_the_api_answering_through_it(kubespray_lab):
    """A new LB VM on the same port is configured again; no playbook
    runs, and the cluster answers on the same endpoint."""
    [lb] = vms('external_lb')
    count = len(runs())
    k8s_mgmt('heal', '--vnfc', lb['vnfc_id'])
    found = status()
    [new] = vms('external_lb', found)
    assert new['server_id'] != lb['server_id'] and new['ip'] == lb['ip']
    assert len(runs()) == count
    endpoint = 'https://%s:%d' % (lb['ip'], LB_PORT)
    assert found['kubernetes']['server'] == endpoint
    assert ready_nodes(found) == sorted(
        vm['name'] for vm in vms('master', found) + vms('worker', found))
    for master in vms('master', found):
        assert '%s:6443' % master['ip'] in lb_config()


def test_heal_of_a_master_is_refused_and_changes_nothing(kubespray_lab):
    master = vms('master')[0]
    count = len(runs())
    proc = k8s_mgmt('heal', '--vnfc', master['vnfc_id'], check=False)
    assert proc.returncode != 0
    assert 'cannot heal a master' in proc.stderr
    assert 'whole VNF' in proc.stderr
    assert len(runs()) == count
    assert master['name'] in ready_nodes(status())


def test_heal_of_the_whole_vnf_rebuilds_the_cluster(kubespray_lab):
    old = {vm['name'] for vm in vms('master') + vms('worker')}
    k8s_mgmt('heal')
    found = status()
    new = {vm['name'] for vm in vms('master', found) + vms('worker', found)}
    assert not old & new
    assert ready_nodes(found) == sorted(new)
    assert runs()[-1]['playbook'] == 'cluster.yml'
    listing = on_vm('ansible-server', 'ls', inventory_root())
    assert len(listing.split()) == 1    # the old cluster's dir is gone


def test_every_run_checked_host_keys_with_the_drivers_key(kubespray_lab):
    every = runs()
    assert len(every) >= 8
    for run in every:
        ssh = run['ssh']
        assert ssh['host_key_checking'] is True, run['playbook']
        assert 'StrictHostKeyChecking=yes' in ssh['ssh_args']
        assert 'UserKnownHostsFile=/dev/null' not in ssh['ssh_args']
        assert re.search(r'UserKnownHostsFile=\S+/k8s-mgmt-[^/]+/'
                         r'known_hosts', ssh['ssh_args'])
        assert ssh['password'] is False
        assert ssh['private_key_file'].endswith('/id_ed25519')


def test_terminate_leaves_no_inventory_or_key(kubespray_lab):
    root = inventory_root().lstrip('/')
    assert os.listdir(os.path.join(server_upper(), root))
    k8s_mgmt('terminate')
    # (The stack is gone: the VM is read from the outside.)
    assert os.listdir(os.path.join(server_upper(), root)) == []
    left = [p for p in server_files() if 'k8s-mgmt-' in p and
            ('id_ed25519' in p or p.endswith('hosts.yaml'))]
    assert left == []
