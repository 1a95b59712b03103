"""build_topology / needed_details from captured Heat response shapes."""

import re

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt.topology import builder
from k8s_mgmt.topology import model
from k8s_mgmt.topology import naming
from tests.unit.topology import heat_fixtures as hf

DNS_LABEL = re.compile(r'^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')


def build(name, spec, **kwargs):
    fx = hf.load(name)
    return builder.build_topology(spec, fx['stack_id'], fx['resources'],
                                  hf.details_of(fx), **kwargs)


def servers_by_name(fx, name):
    return [r['physical_resource_id'] for r in
            hf.resources_where(fx, resource_type='OS::Nova::Server',
                               resource_name=name)]


def assert_names_valid(topo):
    names = [n.name for n in topo.all_nodes()]
    assert len(set(names)) == len(names), names
    for name in names:
        assert DNS_LABEL.match(name), name


def test_simple_one_master_two_workers():
    fx = hf.load('simple')
    topo = build('simple', hf.k8s_spec(cluster_cp='masterNode_CP1'))
    assert len(topo.masters) == 1 and len(topo.workers) == 2
    assert topo.stack_id == fx['stack_id']
    master = topo.masters[0]
    assert master.role == 'master'
    assert master.server_id in servers_by_name(fx, 'masterNode')
    assert master.ssh_ip == master.nic_ip == '10.10.0.21'
    assert master.compute_host == 'compute-1'
    assert master.status == 'CREATE_COMPLETE'
    assert master.resource_name == 'masterNode'
    # The node lives in its member stack, whose owner is the member resource.
    member = hf.resources_where(fx, physical_resource_id=master.stack_id)
    assert member and member[0]['resource_name'] == master.parent_resource
    assert member[0]['parent_resource'] == 'master_instance'
    # Simple flavour: cluster_cp_name is the master's own port (nested).
    assert topo.vip == '10.10.0.21' and topo.vip_fip is None
    assert sorted(w.nic_ip for w in topo.workers) == ['10.10.0.31',
                                                      '10.10.1.31']
    assert_names_valid(topo)


def test_names_come_from_server_ids_not_ip_octets():
    topo = build('simple', hf.k8s_spec(cluster_cp='masterNode_CP1'))
    for node in topo.all_nodes():
        assert node.name == '%s-%s' % (node.role,
                                       node.server_id.replace('-', '')[:8])
    # Both workers end in .31; the reference driver would name both "31".
    assert len({w.name for w in topo.workers}) == 2


def test_names_are_stable_across_calls_and_listing_order():
    fx = hf.load('complex')
    spec = hf.k8s_spec()
    first = builder.build_topology(spec, fx['stack_id'], fx['resources'],
                                   hf.details_of(fx))
    again = builder.build_topology(spec, fx['stack_id'],
                                   list(reversed(fx['resources'])),
                                   hf.details_of(fx))
    assert first == again
    assert [n.name for n in first.masters] == [n.name for n in again.masters]


def test_nodes_ordered_by_member_creation_time():
    fx = hf.load('complex')
    topo = build('complex', hf.k8s_spec())
    members = {r['resource_name']: r['creation_time'] for r in
               hf.resources_where(fx, parent_resource='master_instance')}
    times = [members[n.parent_resource] for n in topo.masters]
    assert times == sorted(times) and len(set(times)) == 3
    assert [n.creation_time for n in topo.masters] == times


def test_complex_ha_vip_port_in_top_stack():
    topo = build('complex', hf.k8s_spec())
    assert len(topo.masters) == 3 and len(topo.workers) == 2
    assert topo.vip == '10.10.0.100'
    assert {m.nic_ip for m in topo.masters} == {'10.10.0.21', '10.10.0.22',
                                                '10.10.0.23'}
    assert len({m.stack_id for m in topo.masters}) == 3
    assert len({m.group_stack_id for m in topo.masters}) == 1
    assert_names_valid(topo)


def test_lookups_by_server_vnfc_and_stack():
    fx = hf.load('complex')
    sids = servers_by_name(fx, 'workerNode')
    vnfc = {sid: 'vnfc-%d' % i for i, sid in enumerate(sids)}
    topo = build('complex', hf.k8s_spec(), vnfc_ids=vnfc)
    for sid, vid in vnfc.items():
        node = topo.by_server_id(sid)
        assert node.vnfc_id == vid and topo.by_vnfc_id(vid) is node
        assert topo.by_stack_id(node.stack_id) is node
    assert all(m.vnfc_id is None for m in topo.masters)
    assert topo.by_server_id('nope') is None and topo.by_vnfc_id(None) is None
    assert len(topo.all_nodes()) == 5


def test_podaffinity_server_group_and_hosts():
    fx = hf.load('podaffinity')
    topo = build('podaffinity', hf.k8s_spec())
    sg = fx['expect']['server_group']
    assert len(topo.workers) == 3
    assert all(w.server_groups == (sg,) for w in topo.workers)
    assert all(m.server_groups == () for m in topo.masters)
    assert len({w.compute_host for w in topo.workers}) == 3
    (group,) = topo.server_groups
    assert group.policies == ('anti-affinity',) and group.group_id == sg
    assert set(group.members) == {w.server_id for w in topo.workers}


def test_server_groups_from_group_members_on_old_nova():
    fx = hf.load('podaffinity')
    details = hf.details_of(fx)
    for detail in details.values():
        detail['attributes'].pop('server_groups', None)
    topo = builder.build_topology(hf.k8s_spec(), fx['stack_id'],
                                  fx['resources'], details)
    sg = fx['expect']['server_group']
    assert [w.server_groups for w in topo.workers] == [(sg,)] * 3


def test_floating_ips_win_for_ssh_and_vip_fip():
    topo = build('floating', hf.k8s_spec(cluster_fip='vip_FloatingIP'))
    assert topo.vip == '10.10.0.100' and topo.vip_fip == '203.0.113.100'
    for node in topo.all_nodes():
        assert node.ssh_ip.startswith('203.0.113.')
        assert node.nic_ip.startswith('10.10.0.')
        assert node.ssh_ip.split('.')[-1] == node.nic_ip.split('.')[-1]
    # The floating fixture uses the older attributes['show'] shape.
    assert topo.masters[0].compute_host.startswith('compute-')


def test_storage_server_single_vdu_with_volume():
    fx = hf.load('storage')
    spec = hf.k8s_spec(cluster_cp='masterNode_CP1',
                       volumes=('storage_server_volume',),
                       storage_cp='storage_server_CP')
    topo = build('storage', spec)
    (store,) = topo.storage
    assert store.ssh_ip == '10.10.0.50' and store.parent_resource is None
    assert store.stack_id == fx['stack_id']
    assert store.resource_name == 'storage_server'
    assert store.name.startswith('storage-')
    (volume,) = topo.volumes
    assert volume.device == '/dev/vdb' and volume.server_id == store.server_id
    assert volume.resource_name == 'storage_server_volume'


def test_volume_attachments_as_heat_string_attribute():
    fx = hf.load('storage')
    details = hf.details_of(fx)
    vol = details[(fx['stack_id'], 'storage_server_volume')]['attributes']
    # Heat's deprecated 'attachments' attribute is str() of a Python list.
    vol['attachments'] = str(vol['attachments'])
    spec = hf.k8s_spec(cluster_cp='masterNode_CP1',
                       volumes=('storage_server_volume',),
                       storage_cp='storage_server_CP')
    topo = builder.build_topology(spec, fx['stack_id'], fx['resources'],
                                  details)
    assert topo.volumes[0].device == '/dev/vdb'


def test_zero_workers():
    topo = build('zero_workers', hf.k8s_spec(cluster_cp='masterNode_CP1'))
    assert len(topo.masters) == 1 and topo.workers == ()


@pytest.mark.parametrize('name', ['simple', 'complex', 'podaffinity',
                                  'floating', 'storage', 'zero_workers'])
def test_needed_details_are_only_the_few(name):
    fx = hf.load(name)
    spec = hf.k8s_spec(
        cluster_cp='vip_CP' if name in ('complex', 'podaffinity',
                                        'floating') else 'masterNode_CP1',
        cluster_fip='vip_FloatingIP' if name == 'floating' else None,
        volumes=('storage_server_volume',) if name == 'storage' else (),
        storage_cp='storage_server_CP' if name == 'storage' else None)
    keys = builder.needed_details(spec, fx['stack_id'], fx['resources'])
    assert len(keys) == len(set(keys))
    listed = {(r['links'][1]['href'].rsplit('/', 1)[-1], r['resource_name']):
              r['resource_type'] for r in fx['resources']}
    types = {listed[k] for k in keys}
    assert not types & {'OS::Heat::AutoScalingGroup',
                        'OS::Heat::ScalingPolicy',
                        'masterNode.yaml', 'workerNode.yaml'}
    nodes = fx['expect']['masters'] + fx['expect']['workers']
    fips = 1 if name == 'floating' else 0
    assert sum(1 for k in keys if listed[k] == 'OS::Nova::Server') == (
        nodes + (name == 'storage'))
    # What it names is exactly what build_topology needs: nothing more.
    details = {k: v for k, v in hf.details_of(fx).items() if k in keys}
    topo = builder.build_topology(spec, fx['stack_id'], fx['resources'],
                                  details)
    assert len(topo.all_nodes()) == nodes + (name == 'storage')
    assert (topo.vip_fip is not None) == bool(fips)
    for key in keys:
        fewer = dict(details)
        del fewer[key]
        with pytest.raises(exceptions.TopologyError):
            builder.build_topology(spec, fx['stack_id'], fx['resources'],
                                   fewer)


def test_stack_refs_give_name_and_id():
    fx = hf.load('simple')
    refs = builder.stack_refs(fx['resources'])
    assert refs[fx['stack_id']] == '%s/%s' % (fx['stack_name'],
                                              fx['stack_id'])
    assert len(refs) == 1 + 2 + 3  # top, two group stacks, three members


def test_name_collisions_extend_later_names_only():
    items = [{'role': 'worker', 'server_id': 'abcdef12-0000-aaaa'},
             {'role': 'worker', 'server_id': 'abcdef12-0000-bbbb'},
             {'role': 'worker', 'server_id': 'abcdef12-1111-cccc'},
             {'role': 'worker', 'server_id': 'ABCDEF12'},
             {'role': 'worker', 'server_id': ''}]
    naming.assign_names(items)
    names = [i['name'] for i in items]
    assert names[0] == 'worker-abcdef12'
    assert names[1] == 'worker-abcdef120'
    assert names[2] == 'worker-abcdef121'
    assert names[3] == 'worker-abcdef12-2'
    assert names[4] == 'worker-node'
    assert len(set(names)) == 5 and all(DNS_LABEL.match(n) for n in names)


def test_topology_to_dict_is_plain_data():
    topo = build('complex', hf.k8s_spec())
    data = topo.to_dict()
    assert data['vip'] == '10.10.0.100'
    assert data['masters'][0]['name'] == topo.masters[0].name
    assert topo.cluster_endpoint_ip() == '10.10.0.100'
    assert model.Topology('s', (), ()).cluster_endpoint_ip() is None
