"""The lab's side of Heat without Heat: servers read from a nested
resource listing in Heat's shape, the package's templates as Tacker reads
them, and a wait that ends in one error naming the stack, its status and
Heat's reason (a session that answers from a script)."""

import pytest

from k8s_mgmt import shipped
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.openstack import stack_servers
from k8s_mgmt_lab.openstack import stacks

HEAT = 'http://127.0.0.1:18004/v1/p/stacks/'
TOP = ('vnflcm_x', 'top-id')
GROUP = ('vnflcm_x-worker_instance-a1', 'group-id')
MEMBER = ('vnflcm_x-worker_instance-a1-m1-b2', 'member-id')


def _res(stack, name, rtype, physical, parent=None, nested=None):
    links = [{'rel': 'self', 'href': HEAT + '%s/%s/resources/%s' % (
        stack + (name,))}, {'rel': 'stack', 'href': HEAT + '%s/%s' % stack}]
    if nested:
        links.append({'rel': 'nested', 'href': HEAT + '%s/%s' % nested})
    found = {'resource_name': name, 'resource_type': rtype,
             'physical_resource_id': physical, 'links': links}
    if parent:
        found['parent_resource'] = parent
    return found


LISTING = [
    _res(TOP, 'worker_instance', 'OS::Heat::AutoScalingGroup', 'group-id',
         nested=GROUP),
    _res(TOP, 'storage_server_CP', 'OS::Neutron::Port', 'port-s'),
    _res(TOP, 'storage_server', 'OS::Nova::Server', 'server-s'),
    _res(GROUP, 'm1', 'OS::Heat::Stack', 'member-id',
         parent='worker_instance', nested=MEMBER),
    _res(MEMBER, 'workerNode_CP2', 'OS::Neutron::Port', 'port-w',
         parent='m1'),
    _res(MEMBER, 'workerNode', 'OS::Nova::Server', 'server-w', parent='m1'),
    _res(MEMBER, 'spare', 'OS::Nova::Server', '', parent='m1'),
]
PORTS = [
    {'id': 'port-s', 'device_id': 'server-s',
     'fixed_ips': [{'ip_address': '10.254.0.12'}]},
    {'id': 'port-w', 'device_id': 'server-w',
     'fixed_ips': [{'ip_address': '10.254.0.11'}]},
    {'id': 'port-free', 'device_id': '',
     'fixed_ips': [{'ip_address': '10.254.0.13'}]},
]


def test_servers_know_their_group_member_stack_and_port():
    found = stack_servers.servers_of(LISTING, PORTS)
    assert found == [
        stack_servers.StackServer(
            vdu='storage_server', server_id='server-s',
            stack='vnflcm_x/top-id',
            ports=(('storage_server_CP', 'port-s', '10.254.0.12'),)),
        stack_servers.StackServer(
            vdu='workerNode', server_id='server-w',
            stack='%s/%s' % MEMBER, group='worker_instance', member='m1',
            ports=(('workerNode_CP2', 'port-w', '10.254.0.11'),)),
    ]
    assert [s.ip for s in found] == ['10.254.0.12', '10.254.0.11']
    assert stack_servers.nested_ref(LISTING[0]) == '%s/%s' % GROUP


def test_the_package_templates_are_the_top_and_its_nested_files(tmp_path):
    top, files = stacks.package_templates(
        str(shipped.sample_package()), 'complex')
    assert 'type: complex_nested_master.yaml' in top
    assert sorted(files) == ['complex_nested_master.yaml',
                             'complex_nested_worker.yaml']
    (tmp_path / 'BaseHOT' / 'two').mkdir(parents=True)
    for name in ('a.yaml', 'b.yaml'):
        (tmp_path / 'BaseHOT' / 'two' / name).write_text('{}')
    with pytest.raises(LabError) as caught:
        stacks.package_templates(str(tmp_path), 'two')
    assert 'exactly one top template, found a.yaml, b.yaml' in str(
        caught.value)


class _Answer(object):
    def __init__(self, status, body=None):
        self.status_code, self.body = status, body

    def json(self):
        return self.body

    def raise_for_status(self):
        assert self.status_code < 400


class _ScriptedSession(object):
    """Answers each GET with the next stack status of a script."""

    def __init__(self, statuses):
        self.statuses = list(statuses)
        self.calls = []

    def request(self, url, method, endpoint_filter=None, **kwargs):
        self.calls.append((method, url, endpoint_filter['service_type']))
        status = self.statuses.pop(0)
        if status is None:
            return _Answer(404)
        return _Answer(200, {'stack': {
            'stack_status': status, 'stack_status_reason': 'Resource '
            'CREATE failed: Conflict: resources.workerNode: no host'}})


def _fast(session):
    return stacks.Stacks(session, timeout=5.0, sleep=lambda seconds: None)


def test_a_wait_returns_at_complete_and_names_a_failure():
    session = _ScriptedSession(['CREATE_IN_PROGRESS', 'CREATE_COMPLETE'])
    assert _fast(session).wait('s/1', 'CREATE')['stack_status'] == \
        'CREATE_COMPLETE'
    assert session.calls == [('GET', '/stacks/s/1', 'orchestration')] * 2
    with pytest.raises(stacks.StackFailed) as failed:
        _fast(_ScriptedSession(['CREATE_FAILED'])).wait('s/1', 'CREATE')
    assert str(failed.value) == (
        'stack s/1: CREATE_FAILED: Resource CREATE failed: Conflict: '
        'resources.workerNode: no host')


def test_a_stack_gone_is_deleted_and_gone_early_is_a_failure():
    gone = _ScriptedSession(['DELETE_IN_PROGRESS', None])
    assert _fast(gone).wait('s/1', 'DELETE') is None
    with pytest.raises(stacks.StackFailed) as failed:
        _fast(_ScriptedSession([None])).wait('s/1', 'UPDATE')
    assert str(failed.value) == \
        'stack s/1: gone while waiting for UPDATE_COMPLETE'


class _GoneGroupSession(object):
    """A top stack whose group's stack Heat no longer knows."""

    def request(self, url, method, endpoint_filter=None, **kwargs):
        if url == '/stacks/s/1/resources/workers':
            return _Answer(200, {'resource': {'links': [
                {'rel': 'nested', 'href': 'http://heat/v1/p/stacks/g/2'}]}})
        if url.startswith('/stacks/g/2/resources'):
            return _Answer(200, {'resources': []})
        return _Answer(404)


def test_a_group_stack_gone_while_waiting_is_named():
    with pytest.raises(stacks.StackFailed) as failed:
        _fast(_GoneGroupSession()).wait_group('s/1', 'workers', 2)
    assert str(failed.value) == (
        'group workers of stack s/1: its stack g/2 is gone')


class _NoNestedSession(object):
    """A resource with no link to a nested stack."""

    def request(self, url, method, endpoint_filter=None, **kwargs):
        return _Answer(200, {'resource': {'links': [
            {'rel': 'self', 'href': 'http://heat/v1/p/stacks/s/1/x'}]}})


def test_a_group_without_a_stack_is_named_not_polled_as_none():
    with pytest.raises(stacks.StackFailed) as failed:
        _fast(_NoNestedSession()).group_stack('s/1', 'workers')
    assert str(failed.value) == (
        'group workers of stack s/1: Heat shows no stack of its members')


class _ScalingGroupSession(object):
    """A group whose stack completes before Heat clears its
    ``scaling_in_progress`` metadata (two polls later)."""

    def __init__(self):
        self.metadata_reads = 0

    def request(self, url, method, endpoint_filter=None, **kwargs):
        if url == '/stacks/s/1/resources/workers':
            return _Answer(200, {'resource': {'links': [
                {'rel': 'nested', 'href': 'http://heat/v1/p/stacks/g/2'}]}})
        if url == '/stacks/s/1/resources/workers/metadata':
            self.metadata_reads += 1
            return _Answer(200, {'metadata': {
                'scaling_in_progress': self.metadata_reads < 3}})
        if url.startswith('/stacks/g/2/resources'):
            return _Answer(200, {'resources': [{'resource_name': 'a'},
                                               {'resource_name': 'b'}]})
        return _Answer(200, {'stack': {'stack_status': 'UPDATE_COMPLETE'}})


def test_a_group_wait_ends_when_heat_no_longer_counts_it_scaling():
    """Else the next signal is dropped as 'already in scaling' and the
    wait for it runs to its deadline."""
    session = _ScalingGroupSession()
    assert _fast(session).wait_group('s/1', 'workers', 2) == ['a', 'b']
    assert session.metadata_reads == 3
