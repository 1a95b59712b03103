"""The hook trace: shapes of hook calls, recorded around a driver."""

from k8s_mgmt_lab.conductor import hook_trace


class Driver(object):
    def __init__(self):
        self.calls = []

    def get_type(self):
        return 'fake'

    def heal_end(self, **kwargs):
        self.calls.append(kwargs)
        return 'healed'


def _instance(vnfcs):
    return {'id': 'i', 'instantiation_state': 'INSTANTIATED',
            'vim_connection_info': [
                {'id': 'v', 'vim_type': 'openstack'},
                {'id': 'k', 'vim_type': 'kubernetes'}],
            'instantiated_vnf_info': {
                'instance_id': 'stack', 'additional_params': {'b': 1, 'a': 2},
                'vnfc_resource_info': [
                    {'id': str(n), 'compute_resource': {
                        'resource_id': 'srv%d' % n if n else ''}}
                    for n in range(vnfcs)]}}


def test_describe_keeps_shapes_not_values():
    shape = hook_trace.describe('heal_end', {
        'context': None, 'vnf_instance': _instance(3),
        'heal_vnf_request': {'vnfc_instance_id': ['x'], 'cause': 'secret'},
        'grant': None, 'grant_request': None, 'vnf': {'id': 'i'},
        'vnf_package_path': '/p', 'vim_info': {'password': 'pw'}})
    assert shape == {
        'hook': 'heal_end',
        'kwargs': ['context', 'grant', 'grant_request', 'heal_vnf_request',
                   'vnf', 'vnf_instance'],
        'instance': {'instantiation_state': 'INSTANTIATED',
                     'vim_types': ['openstack'], 'stack_id': True,
                     'vnfcs': 3,
                     'vnfcs_with_server': 2,
                     'additional_params': ['a', 'b']},
        'request': {'vnfc_instance_id': 1}, 'vnf': True}
    assert 'pw' not in repr(shape) and 'secret' not in repr(shape)


def test_recorder_and_wrap_in_place_record_then_call(tmp_path):
    trace = str(tmp_path / 'trace.jsonl')
    driver = Driver()
    recorder = hook_trace.Recorder(driver, trace)
    assert recorder.get_type() == 'fake'
    assert recorder.heal_end(vnf_instance=_instance(1)) == 'healed'
    held = Driver()
    hook_trace.wrap_in_place(held, trace)
    assert held.heal_end(vnf_instance=_instance(2), vnf=None) == 'healed'
    calls = hook_trace.read(trace)
    assert [c['instance']['vnfcs'] for c in calls] == [1, 2]
    assert len(driver.calls) == 1 and len(held.calls) == 1
    assert hook_trace.differences(calls[:1], calls[:1]) == []
    diff = hook_trace.differences(calls[:1], calls[1:])
    assert any('vnfcs' in d for d in diff)
    assert any("kwargs" in d for d in diff)
    assert hook_trace.differences(calls, calls[:1])[0].startswith('hooks:')
