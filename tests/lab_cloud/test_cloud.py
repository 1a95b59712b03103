"""The lab's stack model, built from the sample package's BaseHOT (no VMs)."""

import collections
import ipaddress

import pytest

from k8s_mgmt_lab import cloud as lab_cloud
from k8s_mgmt_lab import errors as lab_errors
from tests.lab_cloud import nfv_params
from k8s_mgmt_lab import hot


def _roles(cloud, stack_id):
    return collections.Counter(s['resource_name']
                               for s in cloud.servers(stack_id))


@pytest.mark.parametrize('flavour,masters,has_vip', [
    ('simple', 1, False), ('complex', 3, True), ('podaffinity', 3, True)])
def test_each_flavour_builds_from_package(make_cloud, provisioner, flavour,
                                          masters, has_vip):
    cloud, stack_id = make_cloud(flavour, workers=2)
    assert _roles(cloud, stack_id) == {'masterNode': masters, 'workerNode': 2}
    top = cloud.stack(stack_id)
    assert ('vip_CP' in top['resources']) == has_vip
    servers = cloud.servers(stack_id)
    ips = [s['ip'] for s in servers]
    assert len(set(ips)) == len(ips)
    subnet = ipaddress.ip_network('10.254.0.0/24')
    assert all(ipaddress.ip_address(ip) in subnet and
               int(ip.rsplit('.', 1)[1]) >= 10 for ip in ips)
    # every server went to the provisioner once, with its IP and host
    assert sorted(s.server_id for s in provisioner.created) == sorted(
        s['server_id'] for s in servers)
    assert {(s.ip, s.compute_host) for s in provisioner.created} == {
        (s['ip'], s['compute_host']) for s in servers}


def test_vip_allowed_on_every_master_port(make_cloud):
    cloud, stack_id = make_cloud('complex')
    vip = cloud.resource(stack_id, 'vip_CP')[2]['fixed_ips'][0]['ip_address']
    ports = [(s, r) for s, r in cloud.list_resources(stack_id, 2)
             if r['name'] == 'masterNode_CP1']
    assert len(ports) == 3
    for stack, port in ports:
        attrs = cloud.resource(stack['id'], port['name'])[2]
        assert [p['ip_address'] for p in attrs['allowed_address_pairs']] == [
            vip]
        assert attrs['fixed_ips'][0]['ip_address'] != vip


def test_anti_affinity_workers_on_distinct_hosts(make_cloud):
    cloud, stack_id = make_cloud('podaffinity', workers=4, hosts=4)
    workers = [s for s in cloud.servers(stack_id)
               if s['resource_name'] == 'workerNode']
    assert len({w['compute_host'] for w in workers}) == 4
    group = cloud.resource(stack_id, 'srvgroup')[2]
    assert group['policy'] == 'anti-affinity'
    assert sorted(group['members']) == sorted(w['server_id'] for w in workers)


def test_anti_affinity_fails_clearly_without_enough_hosts(make_cloud):
    with pytest.raises(lab_errors.LabCloudError,
                       match='no compute host left'):
        make_cloud('podaffinity', workers=3, hosts=2)


def test_anti_affinity_blocks_scale_out_beyond_hosts(make_cloud):
    cloud, stack_id = make_cloud('podaffinity', workers=2, hosts=2)
    with pytest.raises(lab_errors.LabCloudError, match='no compute host'):
        cloud.scale(stack_id, 'worker_instance', 'SCALE_OUT')


def test_scale_out_then_in_removes_the_oldest(make_cloud, provisioner):
    """As Heat's AutoScalingGroup: the oldest members go first."""
    cloud, stack_id = make_cloud('complex', workers=2)
    before = {s['server_id'] for s in cloud.servers(stack_id)}
    first = [s for s in cloud.servers(stack_id)
             if s['resource_name'] == 'workerNode']
    stacks_before = {s['stack_id'] for s in cloud.servers(stack_id)}
    out1 = cloud.scale(stack_id, 'worker_instance', 'SCALE_OUT')
    out2 = cloud.scale(stack_id, 'worker_instance', 'SCALE_OUT')
    assert out1.scale_type == 'SCALE_OUT' and len(out1.stack_ids) == 1
    assert not (set(out1.stack_ids + out2.stack_ids) & stacks_before)
    assert not (set(out1.server_ids + out2.server_ids) & before)
    assert _roles(cloud, stack_id)['workerNode'] == 4
    group = cloud.resource(stack_id, 'worker_instance')[2]
    assert group['current_size'] == 4

    removed = cloud.scale(stack_id, 'worker_instance', 'SCALE_IN', steps=2)
    assert removed.stack_ids == [s['stack_id'] for s in first]
    assert set(provisioner.deleted) == {s['server_id'] for s in first}
    assert {s['server_id'] for s in cloud.servers(stack_id)} == (
        before - {s['server_id'] for s in first}) | set(
            out1.server_ids + out2.server_ids)


def test_scale_in_prefers_unhealthy_member(make_cloud):
    cloud, stack_id = make_cloud('complex', workers=3)
    newest = [s for s in cloud.servers(stack_id)
              if s['resource_name'] == 'workerNode'][-1]
    cloud.mark_unhealthy(newest['stack_id'], 'workerNode')
    removed = cloud.scale(stack_id, 'worker_instance', 'SCALE_IN')
    assert removed.server_ids == [newest['server_id']]


def test_scale_outside_bounds_refused(make_cloud):
    cloud, stack_id = make_cloud('simple')
    with pytest.raises(lab_errors.LabCloudError, match='outside min_size'):
        cloud.scale(stack_id, 'master_instance', 'SCALE_OUT')
    with pytest.raises(lab_errors.LabCloudError, match='outside min_size'):
        cloud.scale(stack_id, 'worker_instance', 'SCALE_IN')


def test_group_beyond_basehot_max_size_refused_like_heat(package_dir):
    cloud = lab_cloud.LabCloud(package_dir, compute_hosts=9)
    params = nfv_params.sample_parameters(package_dir, 'simple', workers=8)
    with pytest.raises(lab_errors.LabCloudError,
                       match='desired_capacity 8 is outside min_size 1 .. '
                             'max_size 5'):
        cloud.create_stack('simple', params)


def test_raised_max_size_lets_a_big_lab_scale_both_ways(package_dir,
                                                        tmp_path):
    state = str(tmp_path / 'state.json')
    cloud = lab_cloud.LabCloud(package_dir, compute_hosts=10,
                               state_file=state,
                               group_max_sizes={'workerNode': 9})
    stack_id = cloud.create_stack('simple', nfv_params.sample_parameters(
        package_dir, 'simple', workers=8))
    cloud.scale(stack_id, 'worker_instance', 'SCALE_IN')
    cloud = lab_cloud.LabCloud.load(state)  # the limit is kept in the state
    cloud.scale(stack_id, 'worker_instance', 'SCALE_OUT')
    cloud.scale(stack_id, 'worker_instance', 'SCALE_OUT')
    assert _roles(cloud, stack_id)['workerNode'] == 9
    with pytest.raises(lab_errors.LabCloudError, match='max_size 9'):
        cloud.scale(stack_id, 'worker_instance', 'SCALE_OUT')
    # The master group keeps the BaseHOT's limit.
    with pytest.raises(lab_errors.LabCloudError, match='max_size 1'):
        cloud.scale(stack_id, 'master_instance', 'SCALE_OUT')


def test_replace_server_new_id_same_ip(make_cloud, provisioner):
    cloud, stack_id = make_cloud('podaffinity', workers=2)
    old = [s for s in cloud.servers(stack_id)
           if s['resource_name'] == 'workerNode'][0]
    new_id = cloud.replace_server(stack_id, old['server_id'])
    new = [s for s in cloud.servers(stack_id) if s['server_id'] == new_id][0]
    assert new_id != old['server_id']
    assert (new['ip'], new['stack_id']) == (old['ip'], old['stack_id'])
    assert provisioner.deleted == [old['server_id']]
    assert provisioner.created[-1].server_id == new_id
    members = cloud.resource(stack_id, 'srvgroup')[2]['members']
    assert new_id in members and old['server_id'] not in members
    port = cloud.resource(new['stack_id'], 'workerNode_CP2')[2]
    assert port['device_id'] == new_id
    workers = [s for s in cloud.servers(stack_id)
               if s['resource_name'] == 'workerNode']
    assert len({w['compute_host'] for w in workers}) == 2


def test_update_replaces_servers_marked_unhealthy(make_cloud):
    cloud, stack_id = make_cloud('complex')
    master = cloud.servers(stack_id)[0]
    cloud.mark_unhealthy(master['stack_id'], master['resource_name'])
    assert cloud.resource(master['stack_id'],
                          master['resource_name'])[1]['status'] == \
        'CHECK_FAILED'
    cloud.update_stack(stack_id, {})
    after = cloud.resource(master['stack_id'], master['resource_name'])[1]
    assert after['physical_id'] != master['server_id']
    assert after['status'] == 'CREATE_COMPLETE'


def test_update_desired_capacity_resizes_group(make_cloud, package_dir):
    cloud, stack_id = make_cloud('complex', workers=1)
    params = nfv_params.sample_parameters(package_dir, 'complex', workers=3)
    results = cloud.update_stack(stack_id, params)
    assert [len(r.stack_ids) for r in results] == [2]
    assert _roles(cloud, stack_id)['workerNode'] == 3


def test_recreate_gives_new_stack(make_cloud, provisioner):
    cloud, stack_id = make_cloud('complex')
    old_servers = {s['server_id'] for s in cloud.servers(stack_id)}
    name = cloud.stack(stack_id)['name']
    new_id = cloud.recreate_stack(stack_id)
    assert new_id != stack_id and cloud.stack(new_id)['name'] == name
    assert set(provisioner.deleted) == old_servers
    assert not ({s['server_id'] for s in cloud.servers(new_id)} & old_servers)
    # As in Heat: the old stack reads DELETE_COMPLETE by id, and its name
    # finds the new one.
    assert cloud.stack(stack_id)['status'] == 'DELETE_COMPLETE'
    assert cloud.stack(name)['id'] == new_id
    assert [s['id'] for s in cloud.top_stacks()] == [new_id]


def test_delete_releases_everything(make_cloud):
    cloud, stack_id = make_cloud('complex')
    name = cloud.stack(stack_id)['name']
    cloud.delete_stack(stack_id)
    # Only the deleted stack's record stays (Heat answers it by id), with
    # no resources; no nested stack, address or name lookup is left.
    assert list(cloud.state['stacks']) == [stack_id]
    assert cloud.stack(stack_id)['status'] == 'DELETE_COMPLETE'
    assert cloud.stack(stack_id)['resources'] == {}
    assert cloud.state['addresses'] == {} and cloud.all_stacks() == []
    with pytest.raises(lab_errors.LabCloudError):
        cloud.stack(name)
    assert set(cloud.state['events']) == {stack_id}


def test_state_file_round_trip(make_cloud, tmp_path):
    cloud, stack_id = make_cloud('podaffinity', workers=2)
    cloud.scale(stack_id, 'worker_instance', 'SCALE_OUT')
    again = lab_cloud.LabCloud.load(str(tmp_path / 'state.json'))
    assert again.servers(stack_id) == cloud.servers(stack_id)
    # the loaded cloud keeps working: member order (oldest first) survived
    oldest = [s for s in cloud.servers(stack_id)
              if s['resource_name'] == 'workerNode'][0]
    removed = again.scale(stack_id, 'worker_instance', 'SCALE_IN')
    assert removed.server_ids == [oldest['server_id']]


def test_volume_attached_by_block_device_mapping(tmp_path):
    folder = tmp_path / 'BaseHOT' / 'storage'
    folder.mkdir(parents=True)
    (folder / 'top.yaml').write_text('''
heat_template_version: 2016-10-14
parameters:
  size: {type: number, default: 2}
resources:
  storage_server_volume:
    type: OS::Cinder::Volume
    properties: {size: {get_param: size}}
  storage_server_CP:
    type: OS::Neutron::Port
    properties: {network: lab-net}
  storage_server:
    type: OS::Nova::Server
    properties:
      name: {list_join: ['-', [storage, {get_param: size}]]}
      block_device_mapping_v2:
        - {device_name: vdb, volume_id: {get_resource: storage_server_volume},
           boot_index: -1}
      networks: [{port: {get_resource: storage_server_CP}}]
''')
    cloud = lab_cloud.LabCloud(str(tmp_path))
    stack_id = cloud.create_stack('storage', {})
    server = cloud.resource(stack_id, 'storage_server')[2]
    volume = cloud.resource(stack_id, 'storage_server_volume')[2]
    assert server['name'] == 'storage-2'
    assert volume['attachments'][0]['server_id'] == server['id']
    assert volume['attachments'][0]['device'] == '/dev/vdb'
    assert volume['size'] == 2 and volume['status'] == 'in-use'


def test_unknown_resource_type_is_a_clear_error(tmp_path):
    path = tmp_path / 'bad.yaml'
    path.write_text('heat_template_version: 2016-10-14\nresources:\n'
                    '  lb: {type: OS::Octavia::LoadBalancer}\n')
    with pytest.raises(hot.HotError, match="lb has type 'OS::Octavia"):
        hot.load_template(str(path))


def test_functions():
    template = hot.Template('t.yaml', {}, {})
    ev = hot.Evaluator(template, {'nfv': {'CP': {'a': {'n': 'net'}}}},
                       lambda n: 'id-' + n,
                       lambda n, a: {'fixed_ips': [{'ip_address': '1.2.3.4'}]
                                     }[a])
    assert ev.evaluate({'get_param': ['nfv', 'CP', 'a', 'n']}) == 'net'
    assert ev.evaluate({'get_attr': ['p', 'fixed_ips', 0, 'ip_address']}) \
        == '1.2.3.4'
    replace = {'str_replace': {'template': 'x=$v',
                               'params': {'$v': {'get_resource': 'r'}}}}
    assert ev.evaluate(replace) == 'x=id-r'
    assert ev.evaluate({'list_join': [',', ['a', 'b'], ['c']]}) == 'a,b,c'
    with pytest.raises(hot.HotError, match='no .x.'):
        ev.evaluate({'get_param': ['nfv', 'x']})
