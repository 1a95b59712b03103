"""The kubespray mode's operations walked without connecting (the dry run
``k8s-mgmt plan`` shows): which phases, in which order, which playbooks
with which arguments, what the inventory holds and what it never holds."""

import os
import sys

import pytest
import yaml

from k8s_mgmt import exceptions
from k8s_mgmt import params as params_mod
from k8s_mgmt.kubespray import driver as kubespray_driver
from k8s_mgmt.shared_phases import heal_plan
from k8s_mgmt.topology import model

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, 'operations'))
import op_helpers  # noqa: E402

PASSWORD = 'N0de-Secret-pw'
SERVER_PASSWORD = 'Ansible-Secret-pw'
LB_PASSWORD = 'Lb-Secret-pw'
# As ssh-keygen -lf prints it (of an empty blob: any well-formed one does).
FINGERPRINT = 'SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU'


def kubespray_body():
    body = op_helpers.sample_body('kubespray')
    install = body['additionalParams']['k8s_cluster_installation_param']
    for group in ('master_node', 'worker_node'):
        install[group]['password'] = PASSWORD
    install['ansible'].update(
        ip_address='10.254.0.250', password=SERVER_PASSWORD,
        kubespray_root_path='/opt/kubespray',
        transferring_inventory_path='/var/lib/inventories',
        host_key_fingerprint=FINGERPRINT)
    install['external_lb_param']['ssh_password'] = LB_PASSWORD
    return body


def params():
    return params_mod.load_request(kubespray_body())


def topology(masters=3, workers=2, extra=()):
    base = op_helpers.topology(masters, workers)
    lb = op_helpers.node('lb', 1)
    lb = model.Node(**dict(lb.__dict__, ssh_ip='10.254.0.60',
                           nic_ip='10.254.0.60'))
    return model.Topology(stack_id=base.stack_id, masters=base.masters,
                          workers=base.workers + tuple(extra), lbs=(lb,))


def plan(topo, operation='instantiate', hook='instantiate_end', **kwargs):
    return op_helpers.plan(params(), topo, operation, hook, **kwargs)


def work_of(phases, title):
    return [w.text for w in op_helpers.phase(phases, title).work]


def _playbooks(phases):
    return [w.text.split(' && ', 1)[1] for p in phases for w in p.work
            if 'ansible-playbook' in w.text]


def test_instantiate_configures_the_lb_before_cluster_yml():
    phases = plan(topology())
    titles = op_helpers.titles(phases)
    assert titles == [
        'Read the topology from Heat',
        'Connect to the Ansible server, the nodes and the load balancer',
        'Prepare the inventory directory on the Ansible server',
        'Create the cluster\'s key pair on the Ansible server',
        'Authorize the Ansible server\'s key on 5 nodes',
        'Write the inventory and known_hosts on the Ansible server',
        'Upload the scripts', 'Configure the external load balancer',
        'Run cluster.yml', 'Create the VIM token',
        'Wait until every node is Ready', 'Label workers',
        'Register the VIM']
    lb, = work_of(phases, 'Configure the external load balancer')
    assert 'configure_external_lb.sh --api-port 8383' in lb
    assert ('--masters master-1=10.254.0.11,master-2=10.254.0.12,'
            'master-3=10.254.0.13') in lb
    assert '--workers worker-1=10.254.0.21,worker-2=10.254.0.22' in lb
    assert _playbooks(phases) == [
        'ansible-playbook -i /var/lib/inventories/k8s-mgmt-inst-1/hosts.yaml'
        ' --become --become-user=root cluster.yml']
    # Only the LB VM and the first master get scripts.
    upload = op_helpers.phase(phases, 'Upload the scripts')
    assert upload.nodes == ('lb-1', 'master-1')


def test_the_inventory_is_kubesprays_current_shape_without_secrets():
    phases = plan(topology())
    text = work_of(phases, 'Write the inventory and known_hosts on the '
                           'Ansible server')[0]
    document = text.split('\n', 1)[1]
    inventory = yaml.safe_load(document)
    children = inventory['all']['children']
    assert sorted(children) == ['calico_rr', 'etcd', 'k8s_cluster',
                                'kube_control_plane', 'kube_node']
    assert sorted(children['k8s_cluster']['children']) == [
        'calico_rr', 'kube_control_plane', 'kube_node']
    assert sorted(children['kube_node']['hosts']) == ['worker-1', 'worker-2']
    hosts = inventory['all']['hosts']
    assert hosts['master-2']['etcd_member_name'] == 'etcd-master-2'
    assert hosts['worker-1']['ansible_host'] == '10.254.0.21'
    lb_vars = inventory['all']['vars']
    assert lb_vars['loadbalancer_apiserver'] == {'address': '10.254.0.60',
                                                 'port': 8383}
    assert '10.254.0.60' in lb_vars['supplementary_addresses_in_ssl_keys']
    everything = ''.join(w.text for p in phases for w in p.work)
    for secret in (PASSWORD, SERVER_PASSWORD, LB_PASSWORD):
        assert secret not in everything
    assert 'k8s-cluster' not in document


def test_scale_out_gathers_facts_then_limits_scale_yml_to_the_new():
    topo, ids = _with_new(topology(), 1)
    phases = plan(topo, 'scale_out', 'scale_end', scale_out_ids=ids,
                  ready={n.name for n in topo.all_nodes()} - {'new-worker-1'},
                  request={'type': 'SCALE_OUT',
                           'aspect_id': 'worker_instance'})
    books = _playbooks(phases)
    assert [b.split()[-1] for b in books] == ['playbooks/facts.yml',
                                              'scale.yml']
    assert '--limit=new-worker-1' in books[1]
    assert '--limit' not in books[0]
    titles = op_helpers.titles(phases)
    assert titles.index('Run scale.yml on the new workers') < titles.index(
        'Add the new workers to the load balancer')
    # Only the new worker gets the key; the others have it already.
    authorize = [t for t in titles if t.startswith('Authorize')]
    assert authorize == ['Authorize the Ansible server\'s key on '
                         'new-worker-1']


def _with_new(topo, count):
    from k8s_mgmt.cli import planning
    return planning.with_new_workers(topo, count)


def test_scale_in_takes_the_worker_out_of_the_lb_then_remove_node():
    topo = topology(workers=3)
    phases = plan(topo, 'scale_in', 'scale_start',
                  scale_names=['stack-worker-2'],
                  ready={n.name for n in topo.all_nodes()},
                  request={'type': 'SCALE_IN',
                           'aspect_id': 'worker_instance'})
    titles = op_helpers.titles(phases)
    assert titles.index('Remove the workers from the load balancer') < \
        titles.index('Drain the workers') < titles.index(
            'Run remove-node.yml')
    lb, = work_of(phases, 'Remove the workers from the load balancer')
    assert '--workers worker-1=10.254.0.21,worker-3=10.254.0.23' in lb
    book, = _playbooks(phases)
    assert book.endswith('-e node=worker-2 -e skip_confirmation=yes '
                         'remove-node.yml')
    assert titles[-1] == 'Write the inventory without the removed workers'
    last = op_helpers.phase(phases, titles[-1])
    assert 'worker-2' not in last.work[0].text
    assert 'worker-3' in last.work[0].text


def test_a_dead_worker_is_removed_without_reset():
    topo = topology(workers=2)
    phases = plan(topo, 'scale_in', 'scale_start',
                  scale_names=['stack-worker-1'],
                  ready={n.name for n in topo.all_nodes()},
                  unreachable={'worker-1'},
                  request={'type': 'SCALE_IN',
                           'aspect_id': 'worker_instance'})
    book, = _playbooks(phases)
    assert ('-e node=worker-1 -e skip_confirmation=yes -e reset_nodes=false'
            ' -e allow_ungraceful_removal=true remove-node.yml') in book


def test_rollback_removes_only_the_new_workers_the_cluster_lists():
    topo, ids = _with_new(topology(), 2)
    listed = {n.name for n in topo.all_nodes()} - {'new-worker-2'}
    phases = plan(topo, 'scale_out_rollback', 'scale_start',
                  scale_out_ids=ids, ready=listed,
                  request={'type': 'SCALE_OUT',
                           'aspect_id': 'worker_instance'})
    book, = _playbooks(phases)
    assert '-e node=new-worker-1 -e skip_confirmation=yes' in book
    assert 'new-worker-2' not in book
    lb, = work_of(phases, 'Remove the workers from the load balancer')
    assert 'new-worker' not in lb


def test_heal_of_a_master_is_refused_naming_why():
    with pytest.raises(heal_plan.HealRefused) as caught:
        plan(topology(), 'heal_vnfc', 'heal_start',
             request={'vnfc_instance_id': ['vnfc-master-2']})
    text = str(caught.value)
    assert 'master-2' in text and 'kubespray' in text
    assert 'whole VNF' in text


def test_heal_of_a_worker_removes_then_adds_it():
    topo = topology()
    start = plan(topo, 'heal_vnfc', 'heal_start',
                 ready={n.name for n in topo.all_nodes()},
                 request={'vnfc_instance_id': ['vnfc-worker-1']})
    assert [b.split()[-1] for b in _playbooks(start)] == ['remove-node.yml']
    assert 'Forget the healed VMs\' host keys' in op_helpers.titles(start)
    end = plan(topo, 'heal_vnfc', 'heal_end',
               ready={n.name for n in topo.all_nodes()} - {'worker-1'},
               request={'vnfc_instance_id': ['vnfc-worker-1']})
    books = _playbooks(end)
    assert books[-1].endswith('--limit=worker-1 scale.yml') or \
        '--limit=worker-1' in books[-1]


def test_heal_of_the_lb_configures_the_new_vm_and_touches_no_node():
    topo = topology()
    start = plan(topo, 'heal_vnfc', 'heal_start',
                 ready={n.name for n in topo.all_nodes()},
                 request={'vnfc_instance_id': ['vnfc-lb-1']})
    assert 'Forget the healed VMs\' host keys' in op_helpers.titles(start)
    assert _playbooks(start) == []
    end = plan(topo, 'heal_vnfc', 'heal_end',
               ready={n.name for n in topo.all_nodes()},
               request={'vnfc_instance_id': ['vnfc-lb-1']})
    assert op_helpers.titles(end) == [
        'Read the topology from Heat', 'Connect to the load balancer',
        'Upload the scripts', 'Configure the external load balancer']
    lb, = work_of(end, 'Configure the external load balancer')
    assert '--workers worker-1=10.254.0.21,worker-2=10.254.0.22' in lb


def test_whole_vnf_heal_and_terminate_remove_the_inventory_and_key():
    topo = topology()
    start = plan(topo, 'heal_vnf', 'heal_start')
    assert op_helpers.titles(start) == [
        'Unregister the VIM', 'Connect to the Ansible server',
        'Remove the old cluster\'s inventory and key pair from the Ansible '
        'server', 'Forget the old cluster\'s state']
    removal = work_of(start, op_helpers.titles(start)[2])
    assert removal == ['rm -rf /var/lib/inventories/k8s-mgmt-inst-1']
    end = plan(topo, 'heal_vnf', 'heal_end')
    assert 'Run cluster.yml' in op_helpers.titles(end)
    gone = plan(topo, 'terminate', 'terminate_end')
    assert 'Remove the inventory and key pair from the Ansible server' in \
        op_helpers.titles(gone)


def test_drivers_refuse_the_other_modes_requests_and_placeholders(config):
    from k8s_mgmt import driver as kubeadm_driver
    kubespray = kubespray_driver.KubesprayMgmtDriver()
    kubeadm = kubeadm_driver.KubernetesMgmtDriver()
    body = kubespray_body()
    request = {'flavour_id': 'kubespray',
               'additional_params': body['additionalParams']}
    instance = {'id': 'inst-1'}
    with pytest.raises(exceptions.ValidationError) as caught:
        kubeadm.instantiate_start(None, instance, request, None, None)
    assert 'mgmt-drivers-kubespray' in str(caught.value)
    kubespray.instantiate_start(None, instance, request, None, None)
    held = kubespray_body()
    held['additionalParams']['k8s_cluster_installation_param'][
        'ansible']['ip_address'] = '0.0.0.0'
    with pytest.raises(exceptions.ValidationError) as caught:
        kubespray.instantiate_start(
            None, instance, {'flavour_id': 'kubespray',
                             'additional_params': held['additionalParams']},
            None, None)
    assert 'ansible.ip_address' in str(caught.value)
    plain = op_helpers.sample_body('complex')
    with pytest.raises(exceptions.ValidationError) as caught:
        kubespray.instantiate_start(
            None, instance, {'flavour_id': 'complex',
                             'additional_params': plain['additionalParams']},
            None, None)
    assert 'mgmt-drivers-kubernetes' in str(caught.value)
