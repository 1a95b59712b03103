"""The real python-heatclient, through a keystoneauth1 session, against the
lab's Keystone and Heat APIs on loopback."""

import json
import urllib.error
import urllib.request

from heatclient import client as heat_client
from heatclient import exc as heat_exc
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session
import pytest

from k8s_mgmt_lab import api
from k8s_mgmt_lab import heat_wait

PASSWORD = 'lab-secret-pw'


@pytest.fixture
def served(make_cloud):
    cloud, stack_id = make_cloud('complex', workers=2)
    server, base_url = api.serve(cloud, password=PASSWORD)
    yield cloud, stack_id, server, base_url
    server.stop()


def _session(base_url, password=PASSWORD):
    auth = v3.Password(auth_url=base_url + '/v3', username='admin',
                       password=password, project_name='admin',
                       user_domain_name='Default',
                       project_domain_name='Default')
    return ks_session.Session(auth=auth)


def _heat(base_url, password=PASSWORD):
    return heat_client.Client('1', session=_session(base_url, password))


def test_stack_get_by_id_and_name(served):
    cloud, stack_id, _, base_url = served
    heat = _heat(base_url)
    by_id = heat.stacks.get(stack_id)
    by_name = heat.stacks.get(cloud.stack(stack_id)['name'])
    assert by_id.id == by_name.id == stack_id
    assert by_id.stack_status == 'CREATE_COMPLETE'
    assert json.loads(by_id.parameters['nfv'])['VDU']['workerNode'][
        'desired_capacity'] == 2


def test_stack_list_honours_heats_filters(served):
    """Top-level stacks by default; nested ones with show_nested, found
    by owner_id; name and status filters; an unknown filter is a 400."""
    cloud, stack_id, _, base_url = served
    heat = _heat(base_url)
    assert [s.id for s in heat.stacks.list()] == [stack_id]
    nested = [s for s in heat.stacks.list(show_nested=True)
              if s.id != stack_id]
    assert nested
    children = heat.stacks.list(show_nested=True,
                                filters={'owner_id': stack_id})
    direct = {s['id'] for s in cloud.all_stacks()
              if s['parent'] == stack_id}
    assert {s.id for s in children} == direct and direct
    # Without show_nested, Heat lists no nested stack, filter or not.
    assert list(heat.stacks.list(filters={'owner_id': stack_id})) == []
    name = cloud.stack(stack_id)['name']
    assert [s.id for s in heat.stacks.list(filters={'name': name})] == [
        stack_id]
    assert list(heat.stacks.list(filters={'name': 'no-such-stack'})) == []
    assert [s.id for s in heat.stacks.list(
        filters={'status': 'COMPLETE', 'action': 'CREATE'})] == [stack_id]
    assert list(heat.stacks.list(filters={'status': 'FAILED'})) == []
    with pytest.raises(heat_exc.HTTPBadRequest):
        list(heat.stacks.list(filters={'tags_any': 'x'}))


def test_lookup_answers_302_with_full_path(served):
    cloud, stack_id, server, base_url = served
    token = _session(base_url).get_token()
    name = cloud.stack(stack_id)['name']
    request = urllib.request.Request(
        '%s/stacks/%s/resources?nested_depth=2' % (server.heat_url, name),
        headers={'X-Auth-Token': token})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args):
            return None
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.build_opener(NoRedirect).open(request)
    assert caught.value.code == 302
    assert caught.value.headers['Location'] == (
        '%s/stacks/%s/%s/resources?nested_depth=2'
        % (server.heat_url, name, stack_id))


def test_nested_resource_listing(served):
    cloud, stack_id, _, base_url = served
    resources = _heat(base_url).resources.list(stack_id, nested_depth=2)
    by_type = {}
    for res in resources:
        by_type.setdefault(res.resource_type, []).append(res)
    assert len(by_type['OS::Nova::Server']) == 5
    assert len(by_type['OS::Neutron::Port']) == 6      # 5 nodes + VIP
    assert len(by_type['complex_nested_worker.yaml']) == 2
    group = by_type['OS::Heat::AutoScalingGroup'][0]
    assert not hasattr(group, 'parent_resource')
    rels = {link['rel'] for link in group.links}
    assert rels == {'self', 'stack', 'nested'}
    members = {m.resource_name: m.physical_resource_id
               for m in by_type['complex_nested_worker.yaml']}
    assert all(m.parent_resource == 'worker_instance'
               for m in by_type['complex_nested_worker.yaml'])
    workers = [s for s in by_type['OS::Nova::Server']
               if s.resource_name == 'workerNode']
    assert len(workers) == 2
    for server in workers:
        stack_link = [link['href'] for link in server.links
                      if link['rel'] == 'stack']
        assert stack_link[0].endswith(members[server.parent_resource])
        assert server.resource_status == 'CREATE_COMPLETE'
        assert server.creation_time and server.logical_resource_id


def test_resource_show_attributes(served):
    cloud, stack_id, _, base_url = served
    heat = _heat(base_url)
    expected = {s['server_id']: s for s in cloud.servers(stack_id)}
    servers = [r for r in heat.resources.list(stack_id, nested_depth=2)
               if r.resource_type == 'OS::Nova::Server']
    assert len(expected) == 5   # 3 masters + 2 workers
    assert {r.physical_resource_id for r in servers} == set(expected)
    for res in servers:
        stack_ref = [link['href'] for link in res.links
                     if link['rel'] == 'stack'][0].split('/stacks/')[1]
        shown = heat.resources.get(stack_ref, res.resource_name)
        attrs = shown.attributes
        want = expected[res.physical_resource_id]
        assert attrs['OS-EXT-SRV-ATTR:host'] == want['compute_host']
        assert attrs['addresses']['lab-net'][0]['addr'] == want['ip']
        assert attrs['show']['id'] == res.physical_resource_id
        port = heat.resources.get(stack_ref, res.resource_name + '_CP1'
                                  if res.resource_name == 'masterNode'
                                  else 'workerNode_CP2').attributes
        assert port['fixed_ips'][0]['ip_address'] == want['ip']
        assert port['device_id'] == res.physical_resource_id


def test_template_update_and_mark_unhealthy(served):
    cloud, stack_id, _, base_url = served
    heat = _heat(base_url)
    template = heat.stacks.template(stack_id)
    assert template['resources']['vip_CP']['type'] == 'OS::Neutron::Port'
    master = cloud.servers(stack_id)[0]
    heat.resources.mark_unhealthy(master['stack_id'], 'masterNode', True,
                                  'heal test')
    assert heat.resources.get(master['stack_id'], 'masterNode') \
        .resource_status == 'CHECK_FAILED'
    nfv = json.loads(heat.stacks.get(stack_id).parameters['nfv'])
    nfv['VDU']['workerNode']['desired_capacity'] = 3
    heat.stacks.update(stack_id, existing=True, parameters={'nfv': nfv})
    heat_wait.stack_done(heat, stack_id, 'UPDATE', timeout=30)
    healed = heat.resources.get(master['stack_id'], 'masterNode')
    assert healed.physical_resource_id != master['server_id']
    assert healed.attributes['addresses']['lab-net'][0]['addr'] == \
        master['ip']
    workers = [r for r in heat.resources.list(stack_id, nested_depth=2)
               if r.resource_name == 'workerNode']
    assert len(workers) == 3


def test_missing_things_are_heat_shaped_404(served):
    _, stack_id, _, base_url = served
    heat = _heat(base_url)
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.stacks.get('no-such-stack')
    with pytest.raises(heat_exc.HTTPNotFound) as caught:
        heat.resources.get(stack_id, 'no_such_resource')
    assert 'no_such_resource' in str(caught.value)


def test_wrong_password_is_401(served):
    *_, base_url = served
    with pytest.raises(ks_exc.Unauthorized):
        _session(base_url, password='wrong').get_token()


def test_heat_needs_a_valid_token(served):
    _, stack_id, server, _ = served
    for headers in ({}, {'X-Auth-Token': 'forged'}):
        request = urllib.request.Request(
            '%s/stacks/x/%s' % (server.heat_url, stack_id), headers=headers)
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request)
        assert caught.value.code == 401


def test_topology_reader_reads_complex_stack(served):
    topology_heat = pytest.importorskip('k8s_mgmt.topology.heat')
    model = pytest.importorskip('k8s_mgmt.topology.model')
    cloud, stack_id, _, base_url = served
    spec = model.TopologySpec(
        groups=(model.GroupSpec('master', 'masterNode_CP1',
                                aspect_id='master_instance'),
                model.GroupSpec('worker', 'workerNode_CP2',
                                aspect_id='worker_instance')),
        cluster_cp_name='vip_CP')
    reader = topology_heat.HeatReader(_session(base_url))
    topology = reader.read_topology(spec, stack_id)
    expected = {s['server_id']: s for s in cloud.servers(stack_id)}
    assert len(topology.masters) == 3 and len(topology.workers) == 2
    for node in topology.masters + topology.workers:
        want = expected[node.server_id]
        assert (node.ssh_ip, node.nic_ip, node.compute_host) == (
            want['ip'], want['ip'], want['compute_host'])
        assert node.role == ('master' if want['resource_name'] ==
                             'masterNode' else 'worker')
    assert topology.vip == cloud.resource(stack_id, 'vip_CP')[2][
        'fixed_ips'][0]['ip_address']
