"""instantiate_end end to end on the lab: the real driver builds the cluster.

Real parts: namespace VMs with OpenSSH, the driver's Heat reader against the
lab's Heat API, the install and LB scripts, HAProxy and keepalived, etcd, the
kubernetes Python client. Stand-ins: the OpenStack APIs, kubeadm, kubelet,
containerd and the API server (lab/k8s_mgmt_lab/kube).

The driver is called the way Tacker's conductor calls it, through
:func:`k8s_mgmt_lab.conductor.lcm.instantiate` (one driver instance, keyword
arguments, Tacker-shaped dicts, ``vnf_package_path`` and ``vim_info``).
"""

import logging
import os
import time
import urllib.parse

import pytest
import yaml

from k8s_mgmt import exceptions
from k8s_mgmt import kube
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import status as lab_status
from k8s_mgmt.shared_phases import labels

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-instantiate'
SETTINGS = manager.LabSettings(state_dir=STATE_DIR, subnet='10.254.203.0/24',
                               bridge='k8slabt3', tag='k8i', compute_hosts=4)


@pytest.fixture
def lab(make_lab):
    return make_lab(SETTINGS)


def _vim_config(result):
    with open(os.path.join(result.driver_state, 'vim_config.yaml')) as src:
        return yaml.safe_load(src)


def _api(result):
    vim = _vim_config(result)
    return kube.ClusterAPI(vim['auth_url'], vim['bearer_token'],
                           vim['ssl_ca_cert'])


def _all_ready(result, topology):
    with _api(result) as api:
        nodes = api.nodes()
    names = {n.name for n in topology.masters + topology.workers}
    assert names and set(nodes) == names
    assert all(nodes[name].ready for name in names), nodes
    return nodes


def test_simple_cluster_then_a_rerun_changes_nothing(lab, caplog):
    caplog.set_level(logging.INFO)
    record = lab.up('simple', workers=2)
    topology = lab_status.read_topology(record)
    result = lcm.instantiate(SETTINGS)
    nodes = _all_ready(result, topology)
    master = topology.masters[0]
    vim = _vim_config(result)
    assert vim['auth_url'] == 'https://%s:6443' % master.nic_ip
    assert vim['type'] == 'kubernetes'
    with open(os.path.join(result.driver_state, 'kubeconfig')) as src:
        kubeconfig = yaml.safe_load(src)
    assert kubeconfig['clusters'][0]['cluster']['server'] == vim['auth_url']
    assert 'control-plane' in nodes[master.name].roles
    for path in ('vim_config.yaml', 'kubeconfig', 'host_keys.json'):
        mode = os.stat(os.path.join(result.driver_state, path)).st_mode
        assert mode & 0o077 == 0, path

    caplog.clear()
    again = lcm.instantiate(SETTINGS)
    assert _all_ready(again, topology) == nodes
    assert _vim_config(again) == vim
    text = caplog.text
    assert 'Join nodes: skipped (every node is already Ready)' in text
    assert 'Read join data' not in text


def test_complex_cluster_answers_through_the_vip(lab):
    record = lab.up('complex', workers=2)
    topology = lab_status.read_topology(record)
    result = lcm.instantiate(SETTINGS)
    _all_ready(result, topology)
    url = urllib.parse.urlsplit(_vim_config(result)['auth_url'])
    assert (url.hostname, url.port) == (topology.vip, 16443)
    assert topology.vip not in {n.nic_ip for n in topology.all_nodes()}
    with _api(result) as api:
        masters = [n for n in api.nodes().values()
                   if 'control-plane' in n.roles]
    assert len(masters) == 3


def test_podaffinity_workers_carry_their_compute_host(lab):
    record = lab.up('podaffinity', workers=2)
    topology = lab_status.read_topology(record)
    result = lcm.instantiate(SETTINGS)
    nodes = _all_ready(result, topology)
    assert len(topology.workers) == 2 and len(topology.masters) == 3
    hosts = set()
    for worker in topology.workers:
        assert worker.compute_host
        assert nodes[worker.name].labels[labels.CIS_NODE] == \
            worker.compute_host
        hosts.add(worker.compute_host)
    assert len(hosts) == len(topology.workers)   # anti-affinity spread them
    for master in topology.masters:
        assert labels.CIS_NODE not in nodes[master.name].labels


def test_wrong_password_on_one_worker_fails_within_seconds(lab):
    record = lab.up('simple', workers=2)
    topology = lab_status.read_topology(record)
    victim = topology.workers[1]
    lab.vms.exec(victim.server_id, ['chpasswd'],
                 input='ubuntu:not-the-request-password\n')
    started = time.monotonic()
    with pytest.raises(exceptions.NodesFailed) as err:
        lcm.instantiate(SETTINGS)
    assert time.monotonic() - started < 30
    assert [name for name, _e in err.value.failures] == [victim.name]
    assert isinstance(err.value.failures[0][1], exceptions.SSHAuthError)
    assert victim.name in str(err.value) and 'connect' in str(err.value)
