"""Heal end to end on the lab: the real driver, called as Tacker calls it.

Real parts: namespace VMs with OpenSSH, the driver's Heat reader against the
lab's Heat API, the install and LB scripts, HAProxy and keepalived (the VIP
moves for real), etcd (members removed and added for real, quorum checked
with etcdctl -w json), the kubernetes Python client. Stand-ins: the
OpenStack APIs, kubeadm, kubelet, containerd and the API server.

The complex lab is built once and healed several times in order (a worker
alive, a worker killed, a master alive, a master killed): every heal must
leave a cluster the next one can heal.
"""

import json
import os
import threading

import pytest
import yaml

from k8s_mgmt import driver as driver_mod
from k8s_mgmt import exceptions
from k8s_mgmt import kube
from k8s_mgmt import polling
from k8s_mgmt import shipped
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import lcm_heal
from k8s_mgmt_lab.conductor import status as lab_status
from k8s_mgmt.shared_phases import heal_plan
from k8s_mgmt.shared_phases import labels

import vip_probe

COMPLEX = manager.LabSettings(
    state_dir='/var/lib/k8s-mgmt-lab-test-heal', subnet='10.254.205.0/24',
    bridge='k8slabt5', tag='k8h', compute_hosts=4)
PODAFFINITY = manager.LabSettings(
    state_dir='/var/lib/k8s-mgmt-lab-test-heal-pod',
    subnet='10.254.209.0/24', bridge='k8slabt9', tag='k8x',
    compute_hosts=4)
SIMPLE = manager.LabSettings(
    state_dir='/var/lib/k8s-mgmt-lab-test-heal-simple',
    subnet='10.254.206.0/24', bridge='k8slabt6', tag='k8v',
    compute_hosts=3)


def _up(settings, flavour, assert_lab_clean, **sizes):
    lab = manager.Lab(settings)
    lab.down()  # leftovers of an interrupted earlier run
    try:
        lab.up(flavour, **sizes)
        lcm.instantiate(settings)
        yield lab
    finally:
        lab.down()
        assert_lab_clean(settings.state_dir, settings.tag, settings.bridge)


@pytest.fixture(scope='module')
def complex_lab(assert_lab_clean):
    yield from _up(COMPLEX, 'complex', assert_lab_clean, workers=2)


@pytest.fixture(scope='module')
def simple_lab(assert_lab_clean):
    yield from _up(SIMPLE, 'simple', assert_lab_clean)


def _record(settings):
    return manager.read_record(settings)


def _api(settings):
    record = _record(settings)
    path = os.path.join(lcm.driver_state_dir(settings),
                        record['vnf_instance_id'], 'vim_config.yaml')
    with open(path) as src:
        vim = yaml.safe_load(src)
    return kube.ClusterAPI(vim['auth_url'], vim['bearer_token'],
                           vim['ssl_ca_cert'])


def _topology(settings):
    record = _record(settings)
    return lab_status.read_topology(record)


def _vnfc(settings, role, index=0):
    return getattr(_topology(settings), role + 's')[index].vnfc_id


def _assert_cluster_matches_heat(settings):
    """Every VM of the stack is a Ready node, and no other node exists."""
    topology = _topology(settings)
    with _api(settings) as api:
        nodes = api.nodes()
    names = {n.name for n in topology.masters + topology.workers}
    assert set(nodes) == names
    assert all(nodes[n].ready for n in names), nodes
    return topology, nodes


def _etcd_members(lab, topology):
    master = topology.masters[0]
    proc = lab.vms.exec(master.server_id, [
        'etcdctl', '--endpoints=http://127.0.0.1:2379', '-w', 'json',
        'member', 'list'])
    return sorted(m.get('name', '') for m in
                  json.loads(proc.stdout)['members'])


def _hand_etcd_leadership_away(lab, master):
    """When ``master`` leads etcd, make another member lead, so that killing
    it measures the VRRP handover alone. A leader's death adds an etcd
    election (the lab's etcd: election timeout 2.5 s, so 2.5 to 5 s), during
    which every API server's /readyz fails and HAProxy and keepalived
    count them all down; the bound below is not for that."""
    etcdctl = ['etcdctl', '--endpoints=http://127.0.0.1:2379', '-w', 'json']
    [status] = json.loads(lab.vms.exec(
        master.server_id, etcdctl + ['endpoint', 'status']).stdout)
    own, leader = (status['Status']['header']['member_id'],
                   status['Status']['leader'])
    if own != leader:
        return
    members = json.loads(lab.vms.exec(
        master.server_id, etcdctl + ['member', 'list']).stdout)['members']
    other = next(m['ID'] for m in members if m['ID'] != own)
    lab.vms.exec(master.server_id, etcdctl[:2] + ['move-leader',
                                                  '%x' % other])


# -- workers -----------------------------------------------------------------

def _heal_worker(lab, kill_first):
    before = _topology(COMPLEX)
    worker = before.workers[0]
    if kill_first:
        server_id, killed = lcm_heal.kill(COMPLEX, worker.vnfc_id)
        assert killed and server_id == worker.server_id
    result = lcm_heal.heal(COMPLEX, worker.vnfc_id)
    assert result.old == worker.server_id and result.new != worker.server_id
    topology, nodes = _assert_cluster_matches_heat(COMPLEX)
    healed = topology.by_vnfc_id(worker.vnfc_id)
    assert healed.server_id == result.new and healed.name != worker.name
    assert worker.name not in nodes
    # Labels re-derived from the new placement (complex has no
    # anti-affinity group, so no CIS-node; the zone needs a grant).
    assert labels.CIS_NODE not in nodes[healed.name].labels
    assert len(topology.workers) == len(before.workers)
    return result


def _ssh_accepted(lab, topology):
    """{node name: SSH connections its sshd accepted so far} (the VM's
    own log, not the driver's count)."""
    counts = {}
    for node in topology.all_nodes():
        proc = lab.vms.exec(node.server_id, ['cat', '/run/sshd.log'],
                            check=False)
        counts[node.name] = sum(1 for line in proc.stdout.splitlines()
                                if line.startswith('Accepted '))
    return counts


def test_heal_a_live_worker(complex_lab):
    before = _ssh_accepted(complex_lab, _topology(COMPLEX))
    result = _heal_worker(complex_lab, kill_first=False)
    assert result.seconds_start < 120 and result.seconds_end < 300
    after = _ssh_accepted(complex_lab, _topology(COMPLEX))
    # heal_start drains through the registered VIM (no SSH); heal_end
    # probes the masters and reuses the probe's connection: one each.
    opened = {name: after[name] - before[name] for name in before
              if name in after}
    assert opened and max(opened.values()) == 1, opened


class _WatchAfterHealStart(object):
    """The driver, but after heal_start, while the old VM still runs (Heat
    has not replaced it yet): its kubelet, if running, restarts (as after a
    crash: ``systemctl try-restart`` leaves a stopped unit stopped), and the
    removed Node is watched for three kubelet heartbeats."""

    def __init__(self, lab, node):
        self.driver = driver_mod.KubernetesMgmtDriver()
        self.lab, self.node = lab, node
        self.came_back = None
        self.kubelet = None

    def __getattr__(self, name):
        return getattr(self.driver, name)

    def heal_start(self, **kwargs):
        self.driver.heal_start(**kwargs)
        self.lab.vms.exec(self.node.server_id,
                          ['systemctl', 'try-restart', 'kubelet'])
        with _api(COMPLEX) as api:
            for _ in polling.Poll(3.0, first=0.2, maximum=0.2):
                if self.node.name in api.nodes():
                    self.came_back = True
                    break
        self.kubelet = self.lab.vms.exec(
            self.node.server_id, ['systemctl', 'is-active', 'kubelet'],
            check=False).stdout.strip()


def test_a_healed_live_workers_node_does_not_come_back(complex_lab):
    """heal_start stops the kubelet of a live node before deleting its
    Node: a kubelet left running and restarted before Heat deletes the VM
    (a crash, say) registers the Node again, which then stays behind."""
    worker = _topology(COMPLEX).workers[0]
    watch = _WatchAfterHealStart(complex_lab, worker)
    lcm_heal.heal(COMPLEX, worker.vnfc_id, driver=watch)
    assert watch.came_back is None
    assert watch.kubelet != 'active'
    _assert_cluster_matches_heat(COMPLEX)


def test_heal_a_killed_worker_without_waiting_on_its_pods(complex_lab):
    result = _heal_worker(complex_lab, kill_first=True)
    # A dead node is deleted at once: no drain deadline is waited for.
    assert result.seconds_start < 60


# -- masters -----------------------------------------------------------------

def _heal_master(lab, index, kill_first):
    before = _topology(COMPLEX)
    master = before.masters[index]
    assert len(_etcd_members(lab, before)) == 3
    if kill_first:
        _hand_etcd_leadership_away(lab, master)
        lcm_heal.kill(COMPLEX, master.vnfc_id)
    with vip_probe.VipProbe(_api(COMPLEX)) as probe:
        result = lcm_heal.heal(COMPLEX, master.vnfc_id)
    topology, nodes = _assert_cluster_matches_heat(COMPLEX)
    assert len(topology.masters) == 3
    healed = topology.by_vnfc_id(master.vnfc_id)
    assert healed.server_id == result.new and master.name not in nodes
    assert 'control-plane' in nodes[healed.name].roles
    assert _etcd_members(lab, topology) == sorted(
        m.name for m in topology.masters)
    # The VIP answered throughout, but for a VRRP handover. The longest:
    # the VIP holder crashed, the others take the VIP once its adverts
    # stop for 3 x advert_int + skew (up to about 3.1 s), while the probe's
    # request on the dead holder's connection hangs for its 2 s; a request
    # HAProxy sends to the dead API server before it is marked down is
    # tried on another after 1 s (redispatch). Measured 3.2 s on a quiet
    # machine; 6 s leaves room for a loaded one.
    print('VIP probe during the heal of %s: %d answers, %d failures, '
          'longest gap %.1f s' % (master.name, probe.answers,
                                  len(probe.failures), probe.longest_gap))
    print('\n'.join(probe.failed_attempts()))
    assert probe.answers > 10
    assert probe.longest_gap < 6.0, probe.failed_attempts()
    return result, probe


def test_heal_a_live_master_keeps_three_masters_etcd_and_the_vip(
        complex_lab):
    """Flaked (4 of 4 runs alone, stop 25): the healed master's Node came
    back, because heal_start deleted it while the old VM's kubelet still
    ran and re-registered it before Heat deleted the VM (a member removal
    retried for etcd's 5 s made the window). The driver now stops a live
    node's kubelet before deleting its Node; the deterministic reproduction
    is test_a_healed_live_workers_node_does_not_come_back (a kubelet
    restarted in that window)."""
    before = _ssh_accepted(complex_lab, _topology(COMPLEX))
    # The first master: the one the cluster record names.
    _heal_master(complex_lab, 0, kill_first=False)
    after = _ssh_accepted(complex_lab, _topology(COMPLEX))
    # heal_end reuses the sessions heal_start kept to the other masters:
    # one connection per node for the whole heal (the new VM's included).
    opened = {name: after[name] - before.get(name, 0) for name in after}
    assert opened and max(opened.values()) == 1, opened


def test_heal_a_killed_master(complex_lab):
    """Flaked (VIP gaps of 6.2, 8.1 and 10.2 s against the 6 s bound): the
    killed master led etcd, so its death added an election (lab etcd: 2.5
    to 5 s without a leader) in which every API server's /readyz failed,
    HAProxy marked every backend down and the VIP moved twice. The test
    hands etcd leadership away before the kill, so the bound measures the
    VRRP handover alone; a crash of the etcd leader is under no bound (see
    doc/source/testing.rst). Leader loss has no deterministic reproduction
    in the lab (an election's length is random); what the driver does
    about it, handing leadership over before removing a leader, is
    reproduced by tests/functional/kube/test_etcd.py::
    test_removing_the_leader_hands_leadership_over_first."""
    _heal_master(complex_lab, 1, kill_first=True)


def test_heal_end_again_changes_nothing(complex_lab, caplog):
    """A retried heal_end (Tacker's retry after a later failure) finds the
    healed master Ready and the load balancers current: no join again."""
    record = _record(COMPLEX)
    topology = _topology(COMPLEX)
    master = topology.masters[1]
    inst_id, request, lab_kwargs = lcm_heal._instance(COMPLEX, record)
    caplog.set_level('INFO', logger='k8s_mgmt')
    driver_mod.KubernetesMgmtDriver().heal_end(
        context=None,
        vnf_instance=lcm_heal._instantiated(inst_id, record, request,
                                            topology),
        heal_vnf_request={'vnfc_instance_id': [master.vnfc_id]}, grant=None,
        grant_request=None, vnf=lcm.vnf_dict(inst_id, record), **lab_kwargs)
    assert 'Join masters: skipped' in caplog.text
    assert 'Join master %s' % master.name not in caplog.text
    assert 'keepalived: reload' not in caplog.text
    _assert_cluster_matches_heat(COMPLEX)
    assert _etcd_members(complex_lab, topology) == sorted(
        m.name for m in topology.masters)


def test_master_heal_refused_when_etcd_would_lose_quorum(complex_lab):
    """Another master is dead: removing a live one would leave 1 healthy
    member of 2. Refused before anything changes; healing the dead one
    is still allowed and brings the cluster back.

    Flaked (2 of about 6 loaded runs, then once in CI): etcdctl member
    remove answered 'etcdserver: request timed out' (a removal etcd did not
    commit in time on a loaded machine) and the heal failed, taking two
    later tests with it; now retried like 'context deadline exceeded' for
    up to 30 s. Deterministic reproduction: tests/functional/kube/
    test_etcd.py::test_a_removal_etcd_did_not_commit_in_time_is_tried_again
    (etcdctl's real answer, replayed once before the real removal). A 19 s
    VIP gap seen once in the same runs was not explained then; the etcd
    leader loss of test_heal_a_killed_master is the likely cause."""
    before = _topology(COMPLEX)
    alive, dead = before.masters[0], before.masters[2]
    lcm_heal.kill(COMPLEX, dead.vnfc_id)
    with pytest.raises(heal_plan.HealRefused) as err:
        lcm_heal.heal(COMPLEX, alive.vnfc_id)
    assert 'would break etcd quorum' in str(err.value)
    assert dead.name in str(err.value)
    assert _topology(COMPLEX) == before
    with _api(COMPLEX) as api:
        assert alive.name in api.nodes()
    _heal_master(complex_lab, 2, kill_first=False)


def test_unknown_vnfc_is_refused_before_anything_changes(complex_lab):
    before = _topology(COMPLEX)
    with pytest.raises(heal_plan.HealRefused, match='unknown VNFC id'):
        lcm_heal.heal(COMPLEX, 'no-such-vnfc')
    assert _topology(COMPLEX) == before
    _assert_cluster_matches_heat(COMPLEX)


def test_two_instances_through_one_driver_do_not_interfere(complex_lab):
    """A worker heal on the lab and, at the same time on the same driver
    instance, a heal of another VNF instance that fails: each gets its own
    outcome; nothing of one leaks into the other."""
    driver = driver_mod.KubernetesMgmtDriver()
    worker = _topology(COMPLEX).workers[1]
    outcome = {}

    def lab_heal():
        try:
            outcome['lab'] = lcm_heal.heal(COMPLEX, worker.vnfc_id,
                                           driver=driver)
        except Exception as err:  # reported by the assertion below
            outcome['lab'] = err

    def other_heal():
        record = _record(COMPLEX)
        request = lcm.instantiate_request(
            shipped.sample_request('complex'))
        other = lcm.vnf_instance('other-instance', record, request)
        other['instantiated_vnf_info']['instance_id'] = 'no-such-stack'
        vim = lcm.vim_info(record)
        try:
            driver.heal_start(
                context=None, vnf_instance=other,
                heal_vnf_request={'vnfc_instance_id': ['x']}, grant=None,
                grant_request=None, vim_info=vim,
                vnf_package_path=lcm.package_dir(COMPLEX))
            outcome['other'] = 'no error'
        except Exception as err:
            outcome['other'] = err

    threads = [threading.Thread(target=lab_heal),
               threading.Thread(target=other_heal)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert isinstance(outcome['lab'], lcm_heal.HealResult), outcome['lab']
    assert isinstance(outcome['other'], exceptions.TopologyError)
    assert 'no-such-stack' in str(outcome['other'])
    assert worker.vnfc_id not in str(outcome['other'])
    _assert_cluster_matches_heat(COMPLEX)
    assert not os.path.exists(os.path.join(
        lcm.driver_state_dir(COMPLEX), 'other-instance', 'cluster.json'))


# -- simple flavour: the only master, the whole VNF --------------------------

def test_the_only_master_is_refused_naming_the_seed_limitation(simple_lab):
    before = _topology(SIMPLE)
    master = before.masters[0]
    with pytest.raises(heal_plan.HealRefused) as err:
        lcm_heal.heal(SIMPLE, master.vnfc_id)
    assert 'only master' in str(err.value)
    assert 'heal the whole VNF instead' in str(err.value)
    assert _topology(SIMPLE) == before      # Heat was not touched
    _assert_cluster_matches_heat(SIMPLE)


def test_cli_heal_and_kill_say_what_is_wrong_in_one_line(
        simple_lab, capsys):
    from k8s_mgmt.cli import main as cli
    master = _topology(SIMPLE).masters[0]
    assert cli.main(['lab', '--state-dir', SIMPLE.state_dir, 'heal',
                     '--vnfc', master.vnfc_id, '--quiet']) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'only master' in err[0], err
    assert cli.main(['lab', '--state-dir', SIMPLE.state_dir, 'kill',
                     '--vnfc', 'no-such-vnfc']) == 1
    err = capsys.readouterr().err
    assert 'no VNFC no-such-vnfc' in err and master.vnfc_id in err


def test_whole_vnf_heal_rebuilds_the_cluster_on_new_vms(simple_lab):
    before = _record(SIMPLE)
    old_servers = set(before['vnfc_ids'])
    result = lcm_heal.heal(SIMPLE)
    after = _record(SIMPLE)
    assert result.old == before['stack_id'] != after['stack_id']
    assert not old_servers & set(after['vnfc_ids'])
    topology, _ = _assert_cluster_matches_heat(SIMPLE)
    assert {n.server_id for n in topology.all_nodes()} == \
        set(after['vnfc_ids'])


# -- podaffinity: labels follow the new placement ----------------------------

@pytest.fixture(scope='module')
def podaffinity_lab(assert_lab_clean):
    yield from _up(PODAFFINITY, 'podaffinity', assert_lab_clean)


def test_healed_worker_gets_cis_node_of_its_new_compute_host(
        podaffinity_lab):
    before = _topology(PODAFFINITY)
    worker = before.workers[0]
    lcm_heal.heal(PODAFFINITY, worker.vnfc_id)
    topology, nodes = _assert_cluster_matches_heat(PODAFFINITY)
    healed = topology.by_vnfc_id(worker.vnfc_id)
    # Anti-affinity: never on a host another worker of the group uses.
    others = {w.compute_host for w in topology.workers if w is not healed}
    assert healed.compute_host not in others
    for node in topology.workers:
        assert nodes[node.name].labels[labels.CIS_NODE] == node.compute_host
