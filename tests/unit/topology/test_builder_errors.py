"""Broken Heat data gives a TopologyError that says what is wrong."""

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt.topology import builder
from k8s_mgmt.topology import model
from tests.unit.topology import heat_fixtures as hf


def build(fx, spec, resources=None, details=None):
    return builder.build_topology(
        spec, fx['stack_id'],
        fx['resources'] if resources is None else resources,
        hf.details_of(fx) if details is None else details)


def error_of(fx, spec, **kwargs):
    with pytest.raises(exceptions.TopologyError) as info:
        build(fx, spec, **kwargs)
    return str(info.value)


def test_missing_aspect_names_the_groups_present():
    fx = hf.load('complex')
    spec = model.TopologySpec(groups=(model.GroupSpec(
        'master', 'masterNode_CP1', aspect_id='master_group'),))
    msg = error_of(fx, spec)
    assert "aspect 'master_group' not found in stack %s" % fx['stack_id'] \
        in msg
    assert "['master_instance', 'worker_instance']" in msg
    with pytest.raises(exceptions.TopologyError):
        builder.needed_details(spec, fx['stack_id'], fx['resources'])


def test_aspect_that_is_not_a_group():
    fx = hf.load('complex')
    spec = model.TopologySpec(groups=(model.GroupSpec(
        'master', 'masterNode_CP1', aspect_id='vip_CP'),))
    assert 'is a OS::Neutron::Port, not a group' in error_of(fx, spec)


def test_missing_port_lists_the_ports_of_the_member():
    fx = hf.load('simple')
    spec = model.TopologySpec(groups=(model.GroupSpec(
        'master', 'masterNode_CP9', aspect_id='master_instance'),))
    msg = error_of(fx, spec)
    assert "port 'masterNode_CP9' not found in member" in msg
    assert "of group 'master_instance'" in msg
    assert "ports there: ['masterNode_CP1']" in msg


def test_port_without_fixed_ip():
    fx = hf.load('simple')
    details = hf.details_of(fx)
    (port,) = hf.resources_where(fx, resource_name='masterNode_CP1')
    stack = port['links'][1]['href'].rsplit('/', 1)[-1]
    details[(stack, 'masterNode_CP1')]['attributes']['fixed_ips'] = []
    msg = error_of(fx, hf.k8s_spec(cluster_cp='masterNode_CP1'),
                   details=details)
    assert "port 'masterNode_CP1' of member %s of group 'master_instance' " \
           "has no fixed IP" % port['parent_resource'] in msg


def test_no_master_found():
    fx = hf.load('simple')
    resources = [r for r in fx['resources']
                 if r.get('parent_resource') != 'master_instance']
    msg = error_of(fx, hf.k8s_spec(cluster_cp=None), resources=resources)
    assert 'no master found in stack %s' % fx['stack_id'] in msg


def test_missing_single_vdu_port():
    fx = hf.load('storage')
    spec = hf.k8s_spec(cluster_cp='masterNode_CP1', storage_cp='storage_CP')
    assert "port 'storage_CP' not found in stack" in error_of(fx, spec)


def test_ambiguous_cluster_cp_with_three_masters():
    fx = hf.load('complex')
    msg = error_of(fx, hf.k8s_spec(cluster_cp='masterNode_CP1'))
    assert "names 3 resources in nested stacks" in msg


def test_member_without_nested_stack():
    fx = hf.load('simple')
    for res in fx['resources']:
        if res.get('parent_resource') == 'worker_instance':
            res['physical_resource_id'] = ''
            res['resource_status'] = 'CREATE_FAILED'
            res['links'] = res['links'][:2]
            break
    msg = error_of(fx, hf.k8s_spec(cluster_cp='masterNode_CP1'))
    assert "has no nested stack (status CREATE_FAILED)" in msg


def test_listing_not_deep_enough():
    fx = hf.load('simple')
    resources = [r for r in fx['resources']
                 if r['resource_type'] not in ('OS::Nova::Server',
                                               'OS::Neutron::Port')]
    msg = error_of(fx, hf.k8s_spec(cluster_cp=None), resources=resources)
    assert 'not in the resource listing' in msg


def test_port_attached_elsewhere():
    fx = hf.load('simple')
    details = hf.details_of(fx)
    for (stack, name), detail in details.items():
        if name == 'workerNode_CP2':
            detail['attributes']['device_id'] = 'ffffffff-0000'
            break
    msg = error_of(fx, hf.k8s_spec(cluster_cp='masterNode_CP1'),
                   details=details)
    assert 'is attached to device ffffffff-0000' in msg


def test_server_without_id():
    fx = hf.load('simple')
    details = hf.details_of(fx)
    for res in fx['resources']:
        if res['resource_name'] == 'masterNode':
            res['physical_resource_id'] = ''
            res['resource_status'] = 'CREATE_FAILED'
    for detail in details.values():
        detail['attributes'].pop('device_id', None)
    msg = error_of(fx, hf.k8s_spec(cluster_cp='masterNode_CP1'),
                   details=details)
    assert "server 'masterNode' of member" in msg
    assert 'has no server id (status CREATE_FAILED)' in msg


def test_unknown_stack_and_bad_links():
    fx = hf.load('simple')
    assert 'has no resources in the listing' in error_of(
        dict(fx, stack_id='0000'), hf.k8s_spec())
    broken = [dict(r, links=[{'rel': 'self', 'href': 'x'}])
              for r in fx['resources']]
    assert 'no usable "stack" link' in error_of(fx, hf.k8s_spec(),
                                                resources=broken)


def test_unknown_role_and_missing_volume():
    fx = hf.load('storage')
    spec = model.TopologySpec(groups=(model.GroupSpec('etcd', 'x'),))
    assert "unknown role 'etcd'" in error_of(fx, spec)
    spec = hf.k8s_spec(cluster_cp='masterNode_CP1', volumes=('data_vol',))
    assert "volume 'data_vol' not found" in error_of(fx, spec)


def test_missing_cluster_floating_ip():
    fx = hf.load('floating')
    spec = hf.k8s_spec(cluster_fip='vip_FIP')
    assert "floating IP 'vip_FIP' not found" in error_of(fx, spec)
