"""Heat's asynchronous stack actions on the lab's API, through the real
python-heatclient: create from a POSTed template and files, updates that
take a template, policy signals, delete, and the events each leaves.

The provisioner here holds every server's boot until the test lets it go,
so the *_IN_PROGRESS states are seen for certain, not by timing.
"""

import threading

from heatclient import exc as heat_exc
import pytest

from k8s_mgmt_lab import api
from k8s_mgmt_lab import cloud as lab_cloud
from k8s_mgmt_lab import heat_wait
from k8s_mgmt_lab import hot
from tests.lab_cloud import nfv_params
from tests.lab_cloud.test_api import PASSWORD
from tests.lab_cloud.test_api import _heat

WAIT = 30


class GatedProvisioner:
    """Servers boot only while the gate is open."""

    def __init__(self):
        self.gate = threading.Event()
        self.created, self.deleted = [], []

    def create_servers(self, specs):
        assert self.gate.wait(WAIT), 'the test never opened the gate'
        self.created.extend(specs)

    def delete_servers(self, server_ids):
        assert self.gate.wait(WAIT), 'the test never opened the gate'
        self.deleted.extend(server_ids)


@pytest.fixture
def lab(package_dir, tmp_path):
    gated = GatedProvisioner()
    cloud = lab_cloud.LabCloud(package_dir, provisioner=gated,
                               state_file=str(tmp_path / 'state.json'))
    server, base_url = api.serve(cloud, password=PASSWORD)
    yield cloud, gated, _heat(base_url)
    gated.gate.set()
    server.stop()


def _body(package_dir, flavour='complex', workers=1, name='vnflcm_test'):
    """What Tacker's infra driver POSTs for a BaseHOT: the top template as
    YAML text, the nested ones as files by file name, the parameters its
    UserData made."""
    text, files = hot.read_dir_template(
        lab_cloud.top_template(package_dir, flavour))
    return {'stack_name': name, 'template': text, 'files': files,
            'parameters': nfv_params.sample_parameters(
                package_dir, flavour, workers=workers),
            'timeout_mins': 10, 'disable_rollback': True}


def _created(lab, package_dir, **kwargs):
    cloud, gated, heat = lab
    gated.gate.set()
    stack_id = heat.stacks.create(**_body(package_dir, **kwargs))['stack'][
        'id']
    heat_wait.stack_done(heat, stack_id, 'CREATE', WAIT)
    gated.gate.clear()
    return stack_id


def _events(heat, stack_id, **kwargs):
    return [(e.resource_name, e.resource_status)
            for e in heat.events.list(stack_id, **kwargs)]


def test_create_is_in_progress_until_the_servers_boot(lab, package_dir):
    cloud, gated, heat = lab
    created = heat.stacks.create(**_body(package_dir))
    stack_id = created['stack']['id']
    assert created['stack']['links'][0]['rel'] == 'self'
    stack = heat.stacks.get(stack_id)
    assert stack.stack_status == 'CREATE_IN_PROGRESS'
    assert stack.stack_name == 'vnflcm_test' and not gated.created
    gated.gate.set()
    done = heat_wait.stack_done(heat, stack_id, 'CREATE', WAIT)
    assert done.stack_status_reason == 'Stack CREATE completed successfully'
    assert {s.server_id for s in gated.created} == {
        s['server_id'] for s in cloud.servers(stack_id)}
    assert len(gated.created) == 4          # 3 masters, 1 worker
    # The nested templates came from the files, by the name the parent's
    # resource type gives.
    group = heat.resources.get(stack_id, 'master_instance')
    members = heat.resources.list(group.physical_resource_id)
    assert {m.resource_type for m in members} == {
        'complex_nested_master.yaml'}
    events = _events(heat, stack_id)
    assert events[0] == ('vnflcm_test', 'CREATE_IN_PROGRESS')
    assert events[-1] == ('vnflcm_test', 'CREATE_COMPLETE')
    assert ('vip_CP', 'CREATE_COMPLETE') in events


def test_a_taken_name_is_409_and_bad_bodies_400(lab, package_dir):
    cloud, gated, heat = lab
    _created(lab, package_dir)
    with pytest.raises(heat_exc.HTTPConflict):
        heat.stacks.create(**_body(package_dir))
    body = _body(package_dir, name='other')
    del body['files']['complex_nested_worker.yaml']
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(**body)
    assert 'complex_nested_worker.yaml' in str(caught.value)
    body = _body(package_dir, name='other')
    del body['parameters']['nfv']
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.create(**body)
    assert 'nfv' in str(caught.value)
    with pytest.raises(heat_exc.HTTPBadRequest):
        heat.stacks.create(stack_name='other', parameters={})
    # Nothing of the refused stacks was left.
    assert [s['name'] for s in cloud.top_stacks()] == ['vnflcm_test']


def test_update_replacing_a_server_goes_through_update_in_progress(
        lab, package_dir):
    cloud, gated, heat = lab
    stack_id = _created(lab, package_dir)
    worker = [s for s in cloud.servers(stack_id)
              if s['resource_name'] == 'workerNode'][0]
    heat.resources.mark_unhealthy(worker['stack_id'], 'workerNode', True,
                                  'Healing')
    body = _body(package_dir)
    heat.stacks.update(stack_id, existing=True, template=body['template'],
                       files=body['files'],
                       parameters=body['parameters'])
    assert heat.stacks.get(stack_id).stack_status == 'UPDATE_IN_PROGRESS'
    with pytest.raises(heat_exc.HTTPConflict):   # one action at a time
        heat.stacks.update(stack_id, existing=True)
    gated.gate.set()
    heat_wait.stack_done(heat, stack_id, 'UPDATE', WAIT)
    healed = heat.resources.get(worker['stack_id'], 'workerNode')
    assert healed.physical_resource_id != worker['server_id']
    assert gated.deleted == [worker['server_id']]
    assert [s.server_id for s in gated.created[-1:]] == [
        healed.physical_resource_id]
    assert _events(heat, worker['stack_id'], resource_name='workerNode')[
        -2:] == [('workerNode', 'CHECK_FAILED'),
                 ('workerNode', 'CREATE_COMPLETE')]


def test_an_update_with_a_bad_template_changes_nothing(lab, package_dir):
    cloud, gated, heat = lab
    stack_id = _created(lab, package_dir)
    before = cloud.stack(stack_id)
    body = _body(package_dir)
    with pytest.raises(heat_exc.HTTPBadRequest) as caught:
        heat.stacks.update(stack_id, existing=True, template=body['template'],
                           files={})
    assert 'complex_nested_master.yaml' in str(caught.value)
    with pytest.raises(heat_exc.HTTPBadRequest):
        heat.stacks.update(stack_id, existing=False, parameters={})
    assert cloud.stack(stack_id) == before
    assert heat.stacks.get(stack_id).stack_status == 'CREATE_COMPLETE'


def test_mark_unhealthy_needs_a_boolean(lab, package_dir):
    cloud, gated, heat = lab
    stack_id = _created(lab, package_dir)
    worker = [s for s in cloud.servers(stack_id)
              if s['resource_name'] == 'workerNode'][0]
    url = '/stacks/%s/resources/workerNode' % worker['stack_id']
    for body in ({'resource_status_reason': 'no flag'},
                 {'mark_unhealthy': 'yes'}, ['mark_unhealthy']):
        with pytest.raises(heat_exc.HTTPBadRequest):
            heat.http_client.patch(
                '/stacks/%s/%s/resources/workerNode' % (
                    heat.stacks.get(worker['stack_id']).stack_name,
                    worker['stack_id']), data=body)
    assert heat.resources.get(worker['stack_id'], 'workerNode') \
        .resource_status == 'CREATE_COMPLETE', url


def test_a_policy_signal_updates_the_group_in_the_background(
        lab, package_dir):
    cloud, gated, heat = lab
    stack_id = _created(lab, package_dir)
    policy = 'worker_instance_scale_out'
    # What Tacker reads before it signals: the policy's newest event.
    [before] = heat.events.list(stack_id, resource_name=policy, limit=1,
                                sort_dir='desc', sort_keys='event_time')
    assert before.resource_status == 'CREATE_COMPLETE'
    heat.resources.signal(stack_id, policy)
    group = heat.resources.get(stack_id, 'worker_instance')
    assert group.resource_status == 'UPDATE_IN_PROGRESS'
    assert heat.stacks.get(group.physical_resource_id).stack_status == \
        'UPDATE_IN_PROGRESS'
    members = heat.resources.list(group.physical_resource_id)
    assert sorted(m.resource_status for m in members) == [
        'CREATE_IN_PROGRESS', 'UPDATE_COMPLETE']
    with pytest.raises(heat_exc.HTTPConflict):
        heat.resources.signal(stack_id, policy)
    # A signal changes the group, not the top stack's state.
    assert heat.stacks.get(stack_id).stack_status == 'CREATE_COMPLETE'
    gated.gate.set()
    heat_wait.group_done(heat, stack_id, 'worker_instance', WAIT)
    members = heat.resources.list(group.physical_resource_id)
    assert sorted(m.resource_status for m in members) == [
        'CREATE_COMPLETE', 'UPDATE_COMPLETE']
    assert heat.resources.get(stack_id, 'worker_instance') \
        .resource_status == 'UPDATE_COMPLETE'
    [after] = heat.events.list(stack_id, resource_name=policy, limit=1,
                               sort_dir='desc', sort_keys='event_time')
    assert after.id != before.id and after.resource_status == \
        'SIGNAL_COMPLETE'


def test_a_deleted_stack_reads_delete_complete_by_id(lab, package_dir):
    cloud, gated, heat = lab
    stack_id = _created(lab, package_dir)
    servers = {s['server_id'] for s in cloud.servers(stack_id)}
    heat.stacks.delete(stack_id)
    assert heat.stacks.get(stack_id).stack_status == 'DELETE_IN_PROGRESS'
    gated.gate.set()
    heat_wait.stack_done(heat, stack_id, 'DELETE', WAIT)
    assert set(gated.deleted) == servers
    assert list(heat.stacks.list()) == []
    assert list(heat.stacks.list(filters={'name': 'vnflcm_test'})) == []
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.stacks.delete(stack_id)
    with pytest.raises(heat_exc.HTTPNotFound):
        heat.stacks.get('vnflcm_test')
    # The name is free again: a whole-VNF heal creates it anew.
    again = heat.stacks.create(**_body(package_dir))['stack']['id']
    heat_wait.stack_done(heat, again, 'CREATE', WAIT)
    assert heat.stacks.get('vnflcm_test').id == again != stack_id
    assert heat.stacks.get(stack_id).stack_status == 'DELETE_COMPLETE'


def test_an_unknown_stack_action_is_refused(lab, package_dir):
    cloud, gated, heat = lab
    stack_id = _created(lab, package_dir)
    with pytest.raises(heat_exc.HTTPBadRequest):
        heat.actions.suspend(stack_id)
    assert heat.stacks.get(stack_id).stack_status == 'CREATE_COMPLETE'
