"""The kubespray inventory: shape, YAML round trip, bad input, no secrets."""

import json
import os
import types

import pytest
import yaml

from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt.ansible import inventory

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
REQUEST = os.path.join(REPO, 'tests', 'fixtures', 'requests',
                       'seed_001_0_simple.json')


def node(name, ssh_ip, nic_ip, **extra):
    return types.SimpleNamespace(name=name, ssh_ip=ssh_ip, nic_ip=nic_ip,
                                 **extra)


MASTERS = [node('master-b', '203.0.113.2', '10.0.0.2'),
           node('master-a', '203.0.113.1', '10.0.0.1')]
WORKERS = [node('worker-1', '203.0.113.11', '10.0.0.11'),
           node('worker-12', '203.0.113.12', '10.0.0.12')]
USERS = {'master-a': 'ubuntu', 'master-b': 'ubuntu', 'worker-1': 'core',
         'worker-12': 'core'}


def build(**overrides):
    args = dict(lb_address='192.0.2.10', lb_port=8443, users=USERS)
    args.update(overrides)
    return inventory.build(MASTERS, WORKERS, **args)


def test_the_shape_is_kubesprays_current_one():
    inv = build(pod_cidr='192.168.0.0/16', service_cidr='10.96.0.0/12',
                extra_sans=['api.example.com', '192.0.2.10'])
    top = inv['all']
    assert top['hosts']['master-b'] == {
        'ansible_host': '203.0.113.2', 'ip': '10.0.0.2',
        'access_ip': '10.0.0.2', 'ansible_user': 'ubuntu',
        'etcd_member_name': 'etcd-master-b'}
    assert top['hosts']['worker-12'] == {
        'ansible_host': '203.0.113.12', 'ip': '10.0.0.12',
        'access_ip': '10.0.0.12', 'ansible_user': 'core'}
    assert top['vars'] == {
        'loadbalancer_apiserver': {'address': '192.0.2.10', 'port': 8443},
        'supplementary_addresses_in_ssl_keys': ['192.0.2.10',
                                                'api.example.com'],
        'kube_pods_subnet': '192.168.0.0/16',
        'kube_service_addresses': '10.96.0.0/12'}
    children = top['children']
    assert list(children) == ['kube_control_plane', 'etcd', 'kube_node',
                              'calico_rr', 'k8s_cluster']
    assert children['kube_control_plane'] == {
        'hosts': {'master-b': {}, 'master-a': {}}}
    assert children['etcd'] == children['kube_control_plane']
    assert children['kube_node'] == {'hosts': {'worker-1': {},
                                               'worker-12': {}}}
    assert children['calico_rr'] == {'hosts': {}}
    assert children['k8s_cluster'] == {'children': {
        'kube_control_plane': {}, 'kube_node': {}, 'calico_rr': {}}}


def test_etcd_member_names_follow_the_node_not_its_position():
    first = build()['all']['hosts']
    reordered = inventory.build(list(reversed(MASTERS)), WORKERS,
                                lb_address='192.0.2.10', lb_port=8443,
                                users=USERS)['all']['hosts']
    for name in ('master-a', 'master-b'):
        assert first[name]['etcd_member_name'] == \
            reordered[name]['etcd_member_name'] == 'etcd-' + name


def test_cidrs_are_left_to_kubespray_when_not_given():
    assert set(build()['all']['vars']) == {
        'loadbalancer_apiserver', 'supplementary_addresses_in_ssl_keys'}


def test_yaml_round_trip_is_exact_stable_and_marked():
    inv = build(pod_cidr='192.168.0.0/16')
    text = inventory.to_yaml(inv)
    assert text.startswith('# kubespray inventory written by k8s-mgmt')
    assert yaml.safe_load(text) == inv
    assert inventory.to_yaml(build(pod_cidr='192.168.0.0/16')) == text
    # No hyphenated group names of old kubespray, no YAML aliases.
    for old in ('k8s-cluster', 'kube-master', 'kube-node', 'calico-rr'):
        assert old not in text
    assert '&id' not in text and '*id' not in text


def test_host_names_lists_masters_first():
    assert inventory.host_names(build()) == ['master-b', 'master-a',
                                             'worker-1', 'worker-12']


def test_a_non_default_ssh_port_becomes_ansible_port():
    inv = inventory.build([node('m1', '127.0.0.1', '127.0.0.1',
                                ssh_port=2222)], [],
                          lb_address='127.0.0.1', lb_port=6443,
                          users={'m1': 'root'})
    assert inv['all']['hosts']['m1']['ansible_port'] == 2222
    assert 'ansible_port' not in build()['all']['hosts']['master-a']


@pytest.mark.parametrize('change, field', [
    (dict(masters=[node('Master_1', '203.0.113.1', '10.0.0.1')]),
     'inventory.masters[0].name'),
    (dict(masters=[node('m1', 'not-an-ip', '10.0.0.1')]),
     'inventory.masters[0].ssh_ip'),
    (dict(workers=[node('w1', '203.0.113.1', '10.0.0.300')]),
     'inventory.workers[0].nic_ip'),
    (dict(workers=[MASTERS[0]]), 'inventory.workers[0].name'),
    (dict(users={'master-a': 'ubuntu'}), 'inventory.users.master-b'),
    (dict(users=dict(USERS, **{'worker-1': 'a b'})),
     'inventory.users.worker-1'),
    (dict(lb_address='lb.example.com'), 'inventory.lb_address'),
    (dict(lb_port='6443'), 'inventory.lb_port'),
    (dict(lb_port=70000), 'inventory.lb_port'),
    (dict(extra_sans=['ok.example.com', 'bad name']),
     'inventory.extra_sans[1]'),
    (dict(masters=[]), 'inventory.masters'),
])
def test_bad_input_is_refused_naming_the_field(change, field):
    args = dict(masters=MASTERS, workers=WORKERS, lb_address='192.0.2.10',
                lb_port=8443, users=USERS)
    args.update(change)
    with pytest.raises(exceptions.ValidationError) as info:
        inventory.build(args.pop('masters'), args.pop('workers'), **args)
    assert field in [path for path, _ in info.value.problems]


def test_no_password_of_the_request_reaches_the_inventory():
    with open(REQUEST, encoding='utf-8') as f:
        body = json.load(f)
    top = body['additionalParams']['k8s_cluster_installation_param']
    passwords = {'master': 'M4ster-pw-not-in-yaml',
                 'worker': 'W0rker-pw-not-in-yaml',
                 'ansible': 'Ans1ble-pw-not-in-yaml',
                 'lb': 'L0adbal-pw-not-in-yaml'}
    top['master_node']['password'] = passwords['master']
    top['worker_node']['password'] = passwords['worker']
    top['ansible'].update(ip_address='192.0.2.50',
                          password=passwords['ansible'],
                          kubespray_root_path='/opt/kubespray',
                          transferring_inventory_path='/opt/inventories')
    top['external_lb_param']['ssh_password'] = passwords['lb']
    for key in ('http_proxy', 'https_proxy'):
        top['proxy'][key] = top['proxy'][key].replace(':port', ':312')
    request = params.load_request(body)
    users = {m.name: request.master_node.username for m in MASTERS}
    users.update({w.name: request.worker_node.username for w in WORKERS})
    text = inventory.to_yaml(inventory.build(
        MASTERS, WORKERS, lb_address='192.0.2.10', lb_port=8443,
        users=users, pod_cidr=request.master_node.pod_cidr,
        service_cidr=request.master_node.cluster_cidr))
    assert request.master_node.password.reveal() == passwords['master']
    for secret in passwords.values():
        assert secret not in text
    assert 'password' not in text and 'ansible_ssh_pass' not in text
    assert 'ansible_user: ubuntu' in text
