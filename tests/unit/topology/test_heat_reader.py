"""HeatReader through real python-heatclient + keystoneauth over loopback HTTP.

The server is a small Keystone v3 + Heat v1 double (fake_heat.py) serving the
captured fixtures; everything on the client side is the real library code.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.topology import builder
from k8s_mgmt.topology import heat
from k8s_mgmt.topology import model
from tests.unit.topology import fake_heat
from tests.unit.topology import heat_fixtures as hf

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir,
                                    os.pardir, os.pardir))


def reader_for(fake, password='devstack', **kwargs):
    session = heat.session_from_settings(
        auth_url=fake.auth_url, username='nfv_user',
        password=secrets.Secret(password), project_name='nfv')
    return heat.HeatReader(session, region_name='RegionOne', **kwargs)


def count(requests, path_part):
    return sum(1 for _, path, _ in requests if path_part in path)


@pytest.mark.parametrize('name,spec', [
    ('complex', hf.k8s_spec()),
    ('floating', hf.k8s_spec(cluster_fip='vip_FloatingIP')),
    ('storage', hf.k8s_spec(cluster_cp='masterNode_CP1',
                            volumes=('storage_server_volume',),
                            storage_cp='storage_server_CP')),
])
def test_one_listing_then_only_needed_shows(name, spec):
    fx = hf.load(name)
    with fake_heat.FakeHeat(fx) as fake:
        topo = reader_for(fake).read_topology(spec, fx['stack_id'])
    expected = builder.build_topology(spec, fx['stack_id'], fx['resources'],
                                      hf.details_of(fx))
    assert topo == expected
    needed = builder.needed_details(spec, fx['stack_id'], fx['resources'])
    heat_calls = fake.heat_requests()
    # Bare stack id (as Tacker stores it): Heat's lookup redirect, then the
    # listing; then one show per needed resource, each by name/id.
    lists = [r for r in heat_calls if r[1].endswith('/resources')]
    assert len(lists) == 2 and lists[0][1].endswith(
        '/stacks/%s/resources' % fx['stack_id'])
    assert all(q == {'nested_depth': '2'} for _, _, q in lists)
    shows = [r for r in heat_calls if '/resources/' in r[1]]
    assert len(shows) == len(needed) and len(heat_calls) == 2 + len(needed)
    assert len(shows) < len(fx['resources'])
    assert count(fake.requests, '/auth/tokens') == 1
    for _, path, _ in shows:
        # name/id form: no lookup redirect per show.
        assert path.split('/stacks/')[1].count('/') == 3


def test_name_and_id_ref_skips_the_redirect():
    fx = hf.load('simple')
    spec = hf.k8s_spec(cluster_cp='masterNode_CP1')
    with fake_heat.FakeHeat(fx) as fake:
        topo = reader_for(fake).read_topology(
            spec, '%s/%s' % (fx['stack_name'], fx['stack_id']))
    assert topo.stack_id == fx['stack_id'] and len(topo.workers) == 2
    needed = builder.needed_details(spec, fx['stack_id'], fx['resources'])
    assert len(fake.heat_requests()) == 1 + len(needed)


def test_shows_run_concurrently():
    fx = hf.load('complex')
    spec = hf.k8s_spec()
    needed = builder.needed_details(spec, fx['stack_id'], fx['resources'])
    with fake_heat.FakeHeat(fx, hold_shows=3) as fake:
        fake.expected_shows = len(needed)
        reader_for(fake, max_concurrency=4).read_topology(spec,
                                                          fx['stack_id'])
    assert 3 <= fake.max_in_flight <= 4


def test_bounded_concurrency_of_one_is_serial():
    fx = hf.load('simple')
    with fake_heat.FakeHeat(fx) as fake:
        reader_for(fake, max_concurrency=1).read_topology(
            hf.k8s_spec(cluster_cp='masterNode_CP1'), fx['stack_id'])
    assert fake.max_in_flight == 1


def test_unknown_stack_is_a_topology_error_naming_it():
    fx = hf.load('simple')
    with fake_heat.FakeHeat(fx) as fake:
        with pytest.raises(exceptions.TopologyError) as info:
            reader_for(fake).read_topology(hf.k8s_spec(), 'no-such-stack')
    assert 'no-such-stack' in str(info.value)
    assert 'HTTPNotFound' in str(info.value)


def test_missing_resource_show_is_a_topology_error():
    fx = hf.load('complex')
    fx['shown'] = [s for s in fx['shown']
                   if s['resource']['resource_name'] != 'vip_CP']
    with fake_heat.FakeHeat(fx) as fake:
        with pytest.raises(exceptions.TopologyError) as info:
            reader_for(fake).read_topology(hf.k8s_spec(), fx['stack_id'])
    assert 'vip_CP in stack %s: HTTPNotFound' % fx['stack_id'] in str(
        info.value)


def test_wrong_password_fails_without_leaking_it():
    fx = hf.load('simple')
    with fake_heat.FakeHeat(fx) as fake:
        with pytest.raises(exceptions.TopologyError) as info:
            reader_for(fake, password='Wr0ng-Passw0rd').read_topology(
                hf.k8s_spec(), fx['stack_id'])
    assert 'Unauthorized' in str(info.value)
    assert 'Wr0ng-Passw0rd' not in str(info.value)
    assert fake.heat_requests() == []


def test_shallow_listing_is_reported():
    fx = hf.load('simple')
    with fake_heat.FakeHeat(fx) as fake:
        with pytest.raises(exceptions.TopologyError) as info:
            reader_for(fake, nested_depth=1).read_topology(
                hf.k8s_spec(cluster_cp='masterNode_CP1'), fx['stack_id'])
    assert 'not nested deep enough' in str(info.value)


def test_session_for_vim_with_tacker_get_vim_shape():
    fx = hf.load('zero_workers')
    with fake_heat.FakeHeat(fx, password='s3cret-vim') as fake:
        # vnflcm_utils._get_vim() output for an OpenStack VIM.
        vim_info = {
            'id': 'vim-1', 'vim_id': 'vim-1', 'vim_type': 'openstack',
            'tenant_id': fake_heat.PROJECT_ID, 'extra': {},
            'access_info': {
                'auth_url': fake.auth_url, 'username': 'nfv_user',
                'password': 's3cret-vim', 'project_id': fake_heat.PROJECT_ID,
                'project_name': 'nfv', 'user_domain_name': 'Default',
                'project_domain_name': 'Default', 'cert_verify': 'False',
                'region': 'RegionOne'}}
        session, region = heat.session_for_vim(vim_info)
        assert region == 'RegionOne' and session.verify is False
        topo = heat.HeatReader(session, region_name=region).read_topology(
            hf.k8s_spec(cluster_cp='masterNode_CP1'), fx['stack_id'])
    assert len(topo.masters) == 1 and topo.workers == ()
    scope = fake.auth_bodies[0]['auth']['scope']['project']
    assert scope == {'id': fake_heat.PROJECT_ID}
    user = fake.auth_bodies[0]['auth']['identity']['password']['user']
    assert user['domain'] == {'name': 'Default'}


def test_session_for_vim_other_shapes_and_errors():
    auth = {'auth_url': 'http://127.0.0.1:1/v3', 'username': 'u',
            'password': 'p4ssw0rd', 'project_name': 'nfv',
            'cert_verify': 'True'}
    for shape in (auth, {'vim_auth': auth}, {'access_info': auth}):
        session, region = heat.session_for_vim(shape)
        assert session.verify is True and region is None
        assert session.auth.auth_methods[0].password == 'p4ssw0rd'
    with pytest.raises(exceptions.TopologyError) as info:
        heat.session_for_vim({'access_info': {'auth_url': 'x',
                                              'password': 'p4ssw0rd'}})
    assert 'username' in str(info.value) and 'project_id' in str(info.value)
    assert 'p4ssw0rd' not in str(info.value)


class _Obj(object):
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


def test_vnfc_ids_and_stack_id_from_instance_objects_and_dicts():
    vnfcs = [_Obj(id='vnfc-a', compute_resource=_Obj(resource_id='srv-a')),
             _Obj(id='vnfc-b', compute_resource=_Obj(resource_id='srv-b'))]
    inst = _Obj(instantiated_vnf_info=_Obj(instance_id='stack-1',
                                           vnfc_resource_info=vnfcs))
    assert heat.vnfc_ids_from_instance(inst) == {'srv-a': 'vnfc-a',
                                                 'srv-b': 'vnfc-b'}
    assert heat.top_stack_id(inst) == 'stack-1'
    camel = {'instantiatedVnfInfo': {'instanceId': 'stack-2',
             'vnfcResourceInfo': [{'id': 'v1', 'computeResource': {
                 'resourceId': 's1', 'vimLevelResourceType':
                     'OS::Nova::Server'}}]}}
    assert heat.vnfc_ids_from_instance(camel) == {'s1': 'v1'}
    assert heat.top_stack_id(camel) == 'stack-2'
    assert heat.vnfc_ids_from_instance(_Obj(instantiated_vnf_info=None)) == {}


def test_vnfc_ids_from_real_tacker_objects():
    objects = pytest.importorskip('tacker.objects')
    objects.register_all()
    vnfc = objects.VnfcResourceInfo(
        id='vnfc-1', vdu_id='masterNode',
        compute_resource=objects.ResourceHandle(
            resource_id='server-1',
            vim_level_resource_type='OS::Nova::Server'))
    info = objects.InstantiatedVnfInfo(flavour_id='simple',
                                       instance_id='stack-1',
                                       vnfc_resource_info=[vnfc])
    inst = objects.VnfInstance(instantiated_vnf_info=info)
    assert heat.vnfc_ids_from_instance(inst) == {'server-1': 'vnfc-1'}
    assert heat.top_stack_id(inst) == 'stack-1'


def test_run_bounded_returns_errors_in_order():
    def work(item):
        if item == 3:
            raise ValueError('three')
        return item * 2
    results = heat.run_bounded(work, range(6), limit=2)
    assert results[:3] == [0, 2, 4] and results[4:] == [8, 10]
    assert isinstance(results[3], ValueError)
    assert heat.run_bounded(work, [], limit=4) == []


EVENTLET_SCRIPT = textwrap.dedent('''
    import eventlet
    eventlet.monkey_patch()
    import json, sys
    from eventlet import patcher
    from k8s_mgmt import secrets
    from k8s_mgmt.topology import builder, heat
    from tests.unit.topology import fake_heat
    from tests.unit.topology import heat_fixtures as hf
    fx = hf.load('podaffinity')
    spec = hf.k8s_spec()
    needed = builder.needed_details(spec, fx['stack_id'], fx['resources'])
    with fake_heat.FakeHeat(fx, hold_shows=3) as fake:
        fake.expected_shows = len(needed)
        session = heat.session_from_settings(
            fake.auth_url, 'nfv_user', secrets.Secret('devstack'), 'nfv')
        topo = heat.HeatReader(session, max_concurrency=4).read_topology(
            spec, fx['stack_id'])
    print(json.dumps({'patched': patcher.is_monkey_patched('thread'),
                      'workers': len(topo.workers),
                      'hosts': sorted(w.compute_host for w in topo.workers),
                      'shows': sum(1 for r in fake.heat_requests()
                                   if '/resources/' in r[1]),
                      'needed': len(needed),
                      'max_in_flight': fake.max_in_flight}))
''')


def test_reader_under_eventlet_monkey_patching():
    pytest.importorskip('eventlet')
    proc = subprocess.run([sys.executable, '-c', EVENTLET_SCRIPT], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result['patched'] is True
    assert result['workers'] == 3 and len(set(result['hosts'])) == 3
    assert result['shows'] == result['needed']
    assert 3 <= result['max_in_flight'] <= 4


def test_model_spec_helpers():
    spec = hf.k8s_spec(storage_cp='storage_server_CP')
    assert [g.role for g in spec.groups_of('storage')] == ['storage']
    assert model.GroupSpec('worker', 'a_CP').nic_port_name == 'a_CP'
    assert model.GroupSpec('worker', 'a_CP', 'b_CP').nic_port_name == 'b_CP'


def test_read_instance_topology_fills_vnfc_ids():
    fx = hf.load('complex')
    servers = [r['physical_resource_id'] for r in fx['resources']
               if r['resource_type'] == 'OS::Nova::Server']
    instance = {'instantiatedVnfInfo': {
        'instanceId': fx['stack_id'],
        'vnfcResourceInfo': [{'id': 'vnfc-%d' % i,
                              'computeResource': {'resourceId': sid}}
                             for i, sid in enumerate(servers)]}}
    with fake_heat.FakeHeat(fx) as fake:
        vim_info = {'vim_auth': {
            'auth_url': fake.auth_url, 'username': 'nfv_user',
            'password': 'devstack', 'project_name': 'nfv'}}
        topo = heat.read_instance_topology(None, instance, hf.k8s_spec(),
                                           vim_info=vim_info)
    assert sorted(n.vnfc_id for n in topo.all_nodes()) == sorted(
        'vnfc-%d' % i for i in range(5))
    with pytest.raises(exceptions.TopologyError) as info:
        heat.read_instance_topology(None, {'instantiatedVnfInfo': {}},
                                    hf.k8s_spec(), vim_info=vim_info)
    assert 'has no Heat stack' in str(info.value)
