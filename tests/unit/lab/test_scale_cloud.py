"""The cloud's part of the lab's scale, decided from data: the aspects of
the shipped BaseHOT, Tacker's guess of the members a scale-in removes, and
the Heat calls each flavour's scale makes (a recording Stacks, no Heat)."""

import pytest
import yaml

from k8s_mgmt import shipped
from k8s_mgmt_lab.conductor import scale_cloud
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.openstack import stacks as stacks_mod

RECORD = {'stack_name': 'vnf', 'stack_id': 'top', 'flavour': 'simple',
          'heat': {'auth_url': 'http://127.0.0.1:5000/v3', 'username': 'u',
                   'password': 'p', 'project_name': 'lab',
                   'user_domain_name': 'Default',
                   'project_domain_name': 'Default', 'region_name': 'r1'}}
WORKERS = scale_cloud.Aspect(name='worker_instance', vdu='workerNode',
                             min_size=1, max_size=5, step_out=1, step_in=1)


def _template(flavour):
    text, _files = stacks_mod.package_templates(
        str(shipped.sample_package()), flavour)
    return yaml.safe_load(text)


def _member(name, created, status='CREATE_COMPLETE'):
    return {'resource_name': name, 'physical_resource_id': 'stack-' + name,
            'resource_status': status, 'creation_time': created}


def test_the_shipped_groups_are_aspects_with_their_vdu_and_sizes():
    assert scale_cloud.aspect_of(_template('complex'), 'worker_instance') \
        == WORKERS
    masters = scale_cloud.aspect_of(_template('complex'), 'master_instance')
    assert (masters.vdu, masters.min_size, masters.max_size) == (
        'masterNode', 3, 5)


def test_an_aspect_without_policies_or_group_is_refused_by_name():
    with pytest.raises(LabError, match='not scalable.*master_instance'):
        scale_cloud.aspect_of(_template('kubespray'), 'master_instance')
    with pytest.raises(LabError, match='no scaling aspect nope.*'
                       'master_instance, worker_instance'):
        scale_cloud.aspect_of(_template('simple'), 'nope')


def test_the_target_stays_within_min_and_max_size():
    assert WORKERS.target(4, 'SCALE_OUT', 3) == 5
    assert WORKERS.target(2, 'SCALE_IN', 5) == 1
    assert WORKERS.target(2, 'SCALE_OUT', 1) == 3


def test_members_are_in_tackers_order_creation_time_then_name():
    members = scale_cloud.members_of([
        _member('zz', '2026-01-01T00:00:02Z'),
        _member('bb', '2026-01-01T00:00:01Z'),
        _member('aa', '2026-01-01T00:00:01Z')])
    assert [m['name'] for m in members] == ['aa', 'bb', 'zz']
    assert members[0] == {'name': 'aa', 'stack_id': 'stack-aa',
                          'status': 'CREATE_COMPLETE',
                          'created': '2026-01-01T00:00:01Z'}


def test_tacker_names_the_oldest_complete_members_never_below_min_size():
    members = scale_cloud.members_of([
        _member('old', '1'), _member('mid', '2'), _member('new', '3'),
        _member('broken', '0', 'CREATE_FAILED')])
    victims = scale_cloud.tacker_scale_in_victims(members, WORKERS, 1)
    assert [m['name'] for m in victims] == ['old']
    victims = scale_cloud.tacker_scale_in_victims(members, WORKERS, 9)
    assert [m['name'] for m in victims] == ['old', 'mid']
    one = scale_cloud.members_of([_member('only', '1')])
    assert scale_cloud.tacker_scale_in_victims(one, WORKERS, 1) == []


def test_changed_members_are_added_and_removed_by_name():
    before = [{'name': 'a'}, {'name': 'b'}]
    after = [{'name': 'b'}, {'name': 'c'}]
    assert scale_cloud.changed_members(before, after) == (
        [{'name': 'c'}], [{'name': 'a'}])


class RecordingStacks(object):
    """The Stacks calls a scale makes, recorded; members as set."""

    def __init__(self):
        self.calls = []

    def group_stack(self, path, group):
        return 'group/%s' % group

    def signal(self, path, policy):
        self.calls.append(('signal', path, policy))

    def wait_group(self, path, group, members):
        self.calls.append(('wait_group', group, members))

    def mark_unhealthy(self, stack, name, reason):
        self.calls.append(('mark_unhealthy', stack, name, reason))

    def resize(self, path, vdu, desired_capacity, remove=()):
        self.calls.append(('resize', path, vdu, desired_capacity))

    def delete_and_wait(self, path):
        self.calls.append(('delete_and_wait', path))


def _cloud(flavour):
    stacks = RecordingStacks()
    record = dict(RECORD, flavour=flavour)
    return scale_cloud.ScaleCloud(record, stacks=stacks,
                                  template=_template(flavour)), stacks


def test_complex_signals_once_a_step_and_waits_for_each_clamped_size():
    cloud, stacks = _cloud('complex')
    aspect = cloud.aspect('worker_instance')
    assert cloud.scale(aspect, 'SCALE_OUT', 2, 4) == 5
    assert stacks.calls == [
        ('signal', 'vnf/top', 'worker_instance_scale_out'),
        ('wait_group', 'worker_instance', 5),
        ('signal', 'vnf/top', 'worker_instance_scale_out'),
        ('wait_group', 'worker_instance', 5)]


def test_the_other_flavours_mark_tackers_victims_then_update_capacity():
    cloud, stacks = _cloud('simple')
    aspect = cloud.aspect('worker_instance')
    assert cloud.scale(aspect, 'SCALE_IN', 1, 3, remove=['m1']) == 2
    assert stacks.calls == [
        ('mark_unhealthy', 'group/worker_instance', 'm1', 'Scale'),
        ('resize', 'vnf/top', 'workerNode', 2)]
    stacks.calls.clear()
    assert cloud.scale(aspect, 'SCALE_IN', 1, 1, remove=[]) == 1
    assert stacks.calls == []          # at min_size: no update at all


def test_a_rollback_marks_the_new_members_then_lowers_the_capacity():
    # Even where scales go by signal: Heat sizes a group without its
    # failed members, so a signal after the marks removes one more.
    for flavour in ('complex', 'storage'):
        cloud, stacks = _cloud(flavour)
        assert cloud.shrink_by(cloud.aspect('worker_instance'),
                               ['n1', 'n2'], 4) == 2
        assert stacks.calls == [
            ('mark_unhealthy', 'group/worker_instance', 'n1', 'Scale'),
            ('mark_unhealthy', 'group/worker_instance', 'n2', 'Scale'),
            ('resize', 'vnf/top', 'workerNode', 2)]


def test_terminate_deletes_the_stack_by_its_path():
    cloud, stacks = _cloud('simple')
    cloud.delete()
    assert stacks.calls == [('delete_and_wait', 'vnf/top')]


class FakeCloud(object):
    """A group whose members Heat changes as ``after`` says."""

    def __init__(self, before, after):
        self.reads = [before, after]
        self.scaled = []

    def aspect(self, aspect_id):
        return WORKERS

    def members(self, aspect_id):
        return self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]

    def scale(self, aspect, scale_type, steps, current, remove=()):
        self.scaled.append((scale_type, steps, current, list(remove)))


class FakeConductor(object):
    def __init__(self, cloud):
        self.heat = cloud
        self.hooks = []

    def hook_call(self, name, request, **kwargs):
        return lambda: self.hooks.append((name, kwargs))

    def vnf(self):
        return {'id': 'vnf'}

    def remember_servers(self):
        pass


def _members(*names):
    return [{'name': n, 'stack_id': 'stack-' + n, 'status': 'CREATE_COMPLETE',
             'created': str(i)} for i, n in enumerate(names)]


def test_scale_in_tells_the_driver_tackers_guess_and_reports_heats_choice(
        caplog):
    from k8s_mgmt_lab.conductor import lcm_scale
    cloud = FakeCloud(_members('a', 'b', 'c'), _members('a', 'c'))
    conductor = FakeConductor(cloud)
    result = lcm_scale._scale_in(conductor, lcm_scale.scale_request(
        'SCALE_IN', 'worker_instance', 1))
    assert conductor.hooks == [('scale_start', {
        'scale_name_list': ['a'], 'scale_out_id_list': ['stack-a'],
        'vnf': {'id': 'vnf'}})]
    assert cloud.scaled == [('SCALE_IN', 1, 3, ['a'])]
    assert (result.member_names, result.member_stack_ids) == (
        ['b'], ['stack-b'])
    assert 'Heat removed b from group worker_instance; the driver was ' \
        'told a' in caplog.text


def test_scale_out_at_max_size_calls_no_hook():
    from k8s_mgmt_lab.conductor import lcm_scale
    five = _members('a', 'b', 'c', 'd', 'e')
    conductor = FakeConductor(FakeCloud(five, five))
    result = lcm_scale._scale_out(conductor, lcm_scale.scale_request(
        'SCALE_OUT', 'worker_instance', 1))
    assert conductor.hooks == [] and result.member_names == []
    conductor = FakeConductor(FakeCloud(five[:3], five))
    result = lcm_scale._scale_out(conductor, lcm_scale.scale_request(
        'SCALE_OUT', 'worker_instance', 2))
    assert result.member_names == ['d', 'e']
    assert conductor.hooks == [('scale_end', {
        'scale_out_id_list': ['stack-d', 'stack-e'], 'vnf': {'id': 'vnf'}})]
