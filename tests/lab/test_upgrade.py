"""A Kubernetes upgrade on the lab, as Tacker's v1 API asks for it: the
instance's metadata ``k8sMgmtUpgrade`` PATCHed, then the driver's
``modify_information_end``.

A simple cluster built at 1.35 is upgraded to 1.36: every node's kubeadm,
kubelet and kubectl come from the lab's repository at the target's newest
patch (the install script's own apt path, packages held after), the API
server and kubeadm-config say the new version, no node is left cordoned;
a worker a scale-out adds afterwards gets the new version; skipping a
minor is refused before anything changes.

Real parts: namespace VMs with OpenSSH, the driver, the install script and
its upgrade modes, apt-get and dpkg with the lab's signed repository, etcd,
Keystone and Heat. Stand-ins: kubeadm (``upgrade apply|node``, refusing
what kubeadm refuses), kubelet and the API server (their versions are
their packages'), Nova, Neutron, Cinder and Glance.
"""

import datetime
import json
import os

import pytest
import yaml

from k8s_mgmt import kube
from k8s_mgmt import shipped
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import lcm_scale
from k8s_mgmt_lab.conductor import lcm_upgrade
from k8s_mgmt_lab.kube import faults
from k8s_mgmt_lab.conductor import status as lab_status
from k8s_mgmt.shared_phases import certs
from k8s_mgmt.shared_phases import upgrade_plan

import vip_probe

SETTINGS = manager.LabSettings(
    state_dir='/var/lib/k8s-mgmt-lab-test-upgrade', subnet='10.254.223.0/24',
    bridge='k8slabug', tag='kug', compute_hosts=4)
KUBECTL = ('kubectl', '--kubeconfig', '/etc/kubernetes/admin.conf')


@pytest.fixture
def lab(make_lab):
    return make_lab(SETTINGS)


def run(lab, node, *argv, check=True):
    return lab.vms.exec(node.server_id, list(argv), check=check,
                        timeout=120.0)


def topology():
    with open(SETTINGS.lab_file) as handle:
        return lab_status.read_topology(json.load(handle))


# The stand-in's certificate dates (its certificates.json): apiserver's
# moved to the given date, as time passing would.
AGE = """import json, sys
path = '/etc/kubernetes/standin/certificates.json'
data = json.load(open(path))
data['apiserver'] = '%s'
json.dump(data, open(path, 'w'))
"""


def cluster_record(result):
    with open(os.path.join(result.driver_state, 'cluster.json')) as handle:
        return json.load(handle)


def versions_seen(lab, master):
    """{node: kubeletVersion}, the API server's gitVersion, and
    kubeadm-config's kubernetesVersion, as the cluster reports them."""
    nodes = json.loads(run(lab, master, *KUBECTL, 'get', 'nodes', '-o',
                           'json').stdout)['items']
    kubelets = {n['metadata']['name']: n['status']['nodeInfo'][
        'kubeletVersion'] for n in nodes}
    cordoned = [n['metadata']['name'] for n in nodes
                if (n.get('spec') or {}).get('unschedulable')]
    server = json.loads(run(lab, master, *KUBECTL, 'get', '--raw',
                            '/version').stdout)['gitVersion']
    config = json.loads(run(lab, master, *KUBECTL, '-n', 'kube-system',
                            'get', 'configmap', 'kubeadm-config', '-o',
                            'json').stdout)['data']['ClusterConfiguration']
    cluster = [line.split(':', 1)[1].strip().strip('"')
               for line in config.splitlines()
               if line.startswith('kubernetesVersion:')][0]
    return kubelets, cordoned, server, cluster


def package_versions(lab, node):
    """kubeadm, kubelet, kubectl as dpkg has them, and whether held."""
    out = run(lab, node, 'dpkg-query', '-W', '-f',
              '${Package} ${Version} ${db:Status-Want}\n', 'kubeadm',
              'kubelet', 'kubectl').stdout
    return {line.split()[0]: tuple(line.split()[1:])
            for line in out.splitlines()}


def test_a_simple_cluster_moves_one_minor_and_later_nodes_follow(lab):
    lab.up(manager.sample_on_subnet(shipped.sample_request('simple'),
                                    SETTINGS.subnet))
    made = lcm.instantiate(SETTINGS)
    first = topology()
    master = first.masters[0]

    # The certificates, read on the master and recorded: a year each, ten
    # for the authorities; one aged to expire in 10 days is warned about.
    lcm_upgrade.certificates(SETTINGS)
    recorded = cluster_record(made)['certificates'][master.name]
    assert len(recorded) == 14, recorded
    at = datetime.datetime.now(datetime.timezone.utc)
    assert certs.expiring({master.name: recorded}, at) == []
    aged = (at + datetime.timedelta(days=10)).isoformat()
    run(lab, master, 'python3', '-c', AGE % aged)
    lcm_upgrade.certificates(SETTINGS)
    soon = certs.expiring(cluster_record(made)['certificates'], at)
    assert [(node, c.name) for node, c in soon] == [(master.name,
                                                     'apiserver')]
    with open(SETTINGS.lab_file) as handle:
        assert 'k8sMgmtCertificates' not in json.load(handle)[
            'vnf_metadata']
    # Renewed: every leaf a year again, the API answering after.
    lcm_upgrade.certificates(SETTINGS, 'renew')
    renewed = cluster_record(made)['certificates'][master.name]
    assert certs.expiring({master.name: renewed}, at) == []
    assert datetime.datetime.fromisoformat(renewed['apiserver']) > \
        at + datetime.timedelta(days=364)
    kubelets, _, server, cluster = versions_seen(lab, master)
    assert set(kubelets.values()) == {server} and server.startswith(
        'v1.35.')

    # Skipping a minor: refused before anything changes.
    with pytest.raises(upgrade_plan.UpgradeRefused) as refused:
        lcm_upgrade.upgrade(SETTINGS, '1.37')
    assert 'skips 1.36' in str(refused.value)
    assert versions_seen(lab, master)[2] == server

    read_before = cluster_record(made)['certificates_read']
    # kubeadm upgrade fails on the worker: the upgrade stops there, the
    # master upgraded and serving, the worker cordoned; a re-run resumes.
    worker = first.workers[0]
    fault = os.path.join(faults.FAULT_DIR, 'kubeadm-upgrade')
    run(lab, worker, 'mkdir', '-p', faults.FAULT_DIR)
    run(lab, worker, 'touch', fault)
    with pytest.raises(upgrade_plan.UpgradeStopped) as stopped:
        lcm_upgrade.upgrade(SETTINGS, '1.36')
    text = str(stopped.value)
    assert text.startswith('Upgrade to 1.36.1 stopped at %s (Upgrade %s '
                           '(kubeadm upgrade node))' % (worker.name,
                                                        worker.name)), text
    assert 'Done: %s; left: ' % master.name in text
    assert worker.name in text.split('left: ', 1)[1]
    kubelets, cordoned, server, cluster = versions_seen(lab, master)
    assert server == cluster == 'v1.36.1' and cordoned == [worker.name]
    # kubeadm upgrade renewed the master's certificates: read again.
    assert cluster_record(made)['certificates_read'] > read_before
    run(lab, worker, 'rm', '-f', fault)
    done = lcm_upgrade.upgrade(SETTINGS, '1.36')
    kubelets, cordoned, server, cluster = versions_seen(lab, master)
    assert server == cluster == 'v1.36.1', (server, cluster)
    assert set(kubelets.values()) == {'v1.36.1'}, kubelets
    assert cordoned == []
    for node in first.masters + first.workers:
        assert package_versions(lab, node) == {
            tool: ('1.36.1-1.1', 'hold')
            for tool in ('kubeadm', 'kubelet', 'kubectl')}, node.name
    assert done.seconds > 0

    # Again: nothing to do.
    lcm_upgrade.upgrade(SETTINGS, '1.36')
    assert versions_seen(lab, master)[0] == kubelets

    lcm_scale.scale(SETTINGS, 'SCALE_OUT')
    added = [n for n in topology().workers
             if n.server_id not in {w.server_id for w in first.workers}]
    assert added
    kubelets = versions_seen(lab, master)[0]
    assert {kubelets[n.name] for n in added} == {'v1.36.1'}, kubelets


COMPLEX = manager.LabSettings(
    state_dir='/var/lib/k8s-mgmt-lab-test-upgrade-ha',
    subnet='10.254.224.0/24', bridge='k8slabuh', tag='kuh', compute_hosts=4)


@pytest.fixture
def ha_lab(make_lab):
    return make_lab(COMPLEX)


def ha_api(result):
    with open(os.path.join(result.driver_state, 'vim_config.yaml')) as src:
        vim = yaml.safe_load(src)
    return kube.ClusterAPI(vim['auth_url'], vim['bearer_token'],
                           vim['ssl_ca_cert'])


def etcd_members(lab, master):
    out = run(lab, master, 'etcdctl', '--endpoints', 'http://127.0.0.1:2379',
              'member', 'list', '-w', 'json').stdout
    return sorted(m.get('name', '') for m in json.loads(out)['members'])


def test_ha_masters_one_at_a_time_with_the_vip_answering(ha_lab):
    ha_lab.up(manager.sample_on_subnet(shipped.sample_request('complex'),
                                       COMPLEX.subnet))
    result = lcm.instantiate(COMPLEX)
    with open(COMPLEX.lab_file) as handle:
        first = lab_status.read_topology(json.load(handle))
    masters = sorted(m.name for m in first.masters)
    assert etcd_members(ha_lab, first.masters[0]) == masters
    with vip_probe.VipProbe(ha_api(result)) as probe:
        lcm_upgrade.upgrade(COMPLEX, '1.36', max_unavailable=2)
    print('VIP probe during the upgrade: %d answers, %d failures, longest '
          'gap %.1f s' % (probe.answers, len(probe.failures),
                          probe.longest_gap))
    print('\n'.join(probe.failed_attempts()))
    assert probe.answers > 20
    # The VIP moves once (its holder goes last); HAProxy never sends a
    # request to a master being upgraded.
    assert probe.longest_gap < 6.0, probe.failed_attempts()
    kubelets, cordoned, server, cluster = versions_seen(ha_lab,
                                                        first.masters[1])
    assert server == cluster == 'v1.36.1'
    assert set(kubelets.values()) == {'v1.36.1'} and cordoned == []
    # etcd kept every member.
    assert etcd_members(ha_lab, first.masters[2]) == masters
    # The certificates renewed one master at a time, the VIP answering.
    with vip_probe.VipProbe(ha_api(result)) as probe:
        lcm_upgrade.certificates(COMPLEX, 'renew')
    print('VIP probe during the renewal: %d answers, %d failures, longest '
          'gap %.1f s' % (probe.answers, len(probe.failures),
                          probe.longest_gap))
    assert probe.answers > 10
    assert probe.longest_gap < 6.0, probe.failed_attempts()
    assert etcd_members(ha_lab, first.masters[0]) == masters
    # Every master's API server runs the target.
    for master in first.masters:
        found = json.loads(run(ha_lab, master, 'curl', '-sk', '--max-time',
                               '10', 'https://127.0.0.1:6443/version')
                           .stdout)['gitVersion']
        assert found == 'v1.36.1', master.name
