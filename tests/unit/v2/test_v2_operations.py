"""The driver's operations from v2 hooks: the v2 dicts in the shapes the
driver reads, which VMs a scale or a heal concerns, and the cluster
parameters kept sealed in the instance's metadata, so that no later
request resends a password."""

import copy
import json

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import shared_state
from k8s_mgmt import state as state_mod
from k8s_mgmt.v2 import modify
from k8s_mgmt.v2 import operations
from tests.helpers.driver_paths import driver_paths
from tests.unit.v2.test_v2_instance import INSTANCE

ROOT = operations.ROOT
PARAMS = {ROOT: {'master_node': {'username': 'ubuntu',
                                 'password': 'Pa55-not-to-show'}}}


@pytest.fixture
def paths(tmp_path):
    with driver_paths(tmp_path / 'state', tmp_path / 'state.key'):
        yield tmp_path


def test_the_v2_request_and_instance_in_the_shapes_the_driver_reads():
    assert operations.v1_request({
        'type': 'SCALE_IN', 'aspectId': 'worker_instance',
        'numberOfSteps': 1, 'additionalParams': {'force_drain': True},
        'somethingNew': 1}) == {
        'type': 'SCALE_IN', 'aspect_id': 'worker_instance',
        'number_of_steps': 1, 'additional_params': {'force_drain': True}}
    shaped = operations.v1_instance(INSTANCE, {'stored': True})
    info = shaped['instantiated_vnf_info']
    assert shaped['id'] == INSTANCE['id'] and shaped[
        'vim_connection_info'] == []
    assert info['instance_id'] == 'a1b2c3' and info['flavour_id'] == \
        'complex'
    assert info['additional_params'] == {'stored': True}
    assert info['vnfc_resource_info'][0] == {
        'id': 'workerNode-srv-new', 'vdu_id': 'workerNode',
        'compute_resource': {'resource_id': 'srv-new'}}


def test_scale_in_removes_the_grants_servers_scale_out_joins_the_newest():
    script_dict = {'vnf_instance': INSTANCE, 'grant_request': {
        'removeResources': [{'type': 'COMPUTE', 'resource': {
            'resourceId': 'srv-new'}}],
        'addResources': [{'type': 'COMPUTE',
                          'resourceTemplateId': 'workerNode'}]}}
    assert operations.scale_in_keys(script_dict) == ['srv-new']
    # Newest first: the one added is the first worker VNFC, its member
    # stack named by its id.
    assert operations.scale_out_stacks(script_dict) == ['11']


def test_a_vnfc_heal_follows_the_vnfc_into_its_new_server():
    request = {'vnfcInstanceId': ['workerNode-srv-new']}
    before = {'vnf_instance': INSTANCE, 'request': request}
    assert operations._heal_operation(before) == 'heal_vnfc'
    stacks = operations.healed_stacks(before)
    assert stacks == ['vnf-x-worker-b/11']
    after = copy.deepcopy(INSTANCE)
    vnfc = after['instantiatedVnfInfo']['vnfcResourceInfo'][0]
    vnfc['id'] = vnfc['computeResource']['resourceId'] = 'srv-healed'
    after['instantiatedVnfInfo']['vnfcInfo'] = [{
        'id': 'workerNode-srv-healed', 'vnfcResourceInfoId': 'srv-healed'}]
    assert operations.vnfcs_in_stacks({'vnf_instance': after}, stacks) == [
        'workerNode-srv-healed']
    # No VNFC named, or "all": the whole VNF.
    assert operations._heal_operation({'request': {}}) == 'heal_vnf'
    assert operations._heal_operation({'request': dict(
        request, additionalParams={'all': True})}) == 'heal_vnf'


def test_the_cluster_parameters_are_kept_sealed_in_the_metadata(paths):
    instance = copy.deepcopy(INSTANCE)
    hook = operations.V2Hook({'vnf_instance': instance, 'request': {}})
    hook.sync.pull()
    with pytest.raises(exceptions.ValidationError) as caught:
        hook.stored_params()
    assert 'holds no cluster parameters' in str(caught.value)
    hook.keep_params(PARAMS)
    hook.sync.push()
    sealed = instance['metadata'][shared_state.METADATA_KEY]
    assert 'Pa55-not-to-show' not in json.dumps(instance)
    assert sealed.startswith(shared_state.FORMAT + '.')
    # Another conductor (an empty state directory) opens them again.
    local = state_mod.InstanceState(instance['id'])
    local.remove(state_mod.REQUEST_PARAMS)
    later = operations.V2Hook({'vnf_instance': copy.deepcopy(instance),
                               'request': {}})
    later.sync.pull()
    assert later.stored_params() == PARAMS


def test_parameters_sent_again_are_used_and_kept(paths):
    # What the refusal asks for: the instantiate request's parameters in
    # the request's additionalParams (a conductor that lost them).
    instance = copy.deepcopy(INSTANCE)
    hook = operations.V2Hook({'vnf_instance': instance,
                              'request': {'additionalParams': PARAMS}})
    hook.sync.pull()
    assert hook.stored_params() == PARAMS
    hook.sync.push()
    later = operations.V2Hook({'vnf_instance': copy.deepcopy(instance),
                               'request': {}})
    later.sync.pull()
    assert later.stored_params() == PARAMS


@pytest.mark.parametrize('operation, kept', [('heal_vnf', True),
                                             ('terminate', False)])
def test_forgetting_the_cluster_keeps_its_parameters_until_terminate(
        paths, monkeypatch, operation, kept):
    # A whole-VNF heal_start forgets the old cluster's state (its state
    # directory goes); its heal_end needs the parameters again.
    instance = copy.deepcopy(INSTANCE)
    first = operations.V2Hook({'vnf_instance': instance, 'request': {}})
    first.keep_params(PARAMS)
    first.sync.pull()
    first.sync.push()
    forgotten = []

    def forget(ctx):
        forgotten.append(ctx)
        first.local.remove(state_mod.REQUEST_PARAMS)
    monkeypatch.setattr(operations.catalog, 'run', forget)
    monkeypatch.setattr(operations.V2Hook, 'context',
                        lambda self, *args, **kwargs: 'ctx')
    hook = operations.V2Hook({'vnf_instance': instance, 'request': {}})
    hook.run(operation, 'heal_start')
    assert forgotten == ['ctx']
    after = operations.V2Hook({'vnf_instance': copy.deepcopy(instance),
                               'request': {}})
    after.local.remove(state_mod.REQUEST_PARAMS)
    after.sync.pull()
    if kept:
        assert after.stored_params() == PARAMS
    else:
        assert shared_state.METADATA_KEY not in instance['metadata']


def test_a_scale_with_the_parameters_sent_again_runs_on_them(paths):
    # The whole instantiate root in a scale request: what is stored once
    # kept, not a change of what may not change.
    from k8s_mgmt import shipped
    root = {ROOT: shipped.sample_request('complex')['additionalParams'][
        ROOT]}
    request = {'type': 'SCALE_OUT', 'aspectId': 'worker_instance',
               'additionalParams': root}
    hook = operations.V2Hook({'vnf_instance': copy.deepcopy(INSTANCE),
                              'request': request})
    hook.sync.pull()
    ctx = hook.context('scale_out', 'scale_end')
    assert ctx.api == 'v2' and ctx.params.master_node.username == 'ubuntu'
    assert hook.stored_params() == root
    # Sent again with a change it may not make: refused, naming it.
    changed = copy.deepcopy(root)
    changed[ROOT]['master_node']['pod_cidr'] = '10.244.0.0/16'
    hook.script_dict['request'] = dict(request, additionalParams=changed)
    with pytest.raises(exceptions.ValidationError) as caught:
        hook.context('scale_out', 'scale_end')
    assert 'pod_cidr' in str(caught.value)


def _package(tmp_path, version=None):
    where = tmp_path / 'csar'
    (where / 'Files' / 'k8s-mgmt').mkdir(parents=True, exist_ok=True)
    if version is not None:
        (where / 'Files' / 'k8s-mgmt' / 'kubernetes_version').write_text(
            version + '\n')
    return str(where)


def _change(tmp_path, operation, version=None, **additional):
    return {'operation': operation, 'vnf_instance': copy.deepcopy(INSTANCE),
            'tmp_csar_dir': _package(tmp_path, version),
            'request': {'vnfdId': 'new-vnfd', 'additionalParams': dict(
                {'upgrade_type': 'RollingUpdate', 'vdu_params': []},
                **additional)}}


def test_a_change_of_package_upgrades_to_the_version_it_names(
        paths, monkeypatch):
    ran = []
    monkeypatch.setattr(operations.V2Hook, 'run', lambda self, *a, **k: (
        ran.append((a, k, self.script_dict['request']))))
    modify.change_current_package_start(_change(
        paths, 'change_current_package_start', '1.36'))
    # The package's version; the request's own wins; Tacker's keys and
    # ours are not cluster parameters.
    modify.change_current_package_start(_change(
        paths / 'b', 'change_current_package_start', '1.36',
        kubernetes_version='1.36.1', max_unavailable=2, force_drain=True))
    assert [(a, k) for a, k, _ in ran] == [
        (('upgrade', 'change_current_package_start'),
         {'kwargs': {'upgrade_target': '1.36', 'max_unavailable': 0}}),
        (('upgrade', 'change_current_package_start'),
         {'kwargs': {'upgrade_target': '1.36.1', 'max_unavailable': 2}})]
    assert ran[1][2]['additionalParams'] == {'force_drain': True}
    # Naming no version is no upgrade.
    ran.clear()
    assert modify.change_current_package_start(_change(
        paths / 'c', 'change_current_package_start')) is None
    assert ran == []


def test_a_package_naming_no_version_clearly_is_refused(paths):
    with pytest.raises(exceptions.ValidationError) as err:
        modify.change_current_package_start(_change(
            paths, 'change_current_package_start', 'newest'))
    assert err.value.problems == [(
        'Files/k8s-mgmt/kubernetes_version', 'not a Kubernetes version such '
        'as 1.36 or 1.36.1: \'newest\'')]


def test_the_change_of_package_must_keep_every_vm(paths):
    start = _change(paths, 'change_current_package_start')
    modify.change_current_package_start(start)
    # Heat kept the servers: nothing to say.
    assert modify.change_current_package_end(_change(
        paths, 'change_current_package_end')) is None
    modify.change_current_package_start(start)
    replaced = _change(paths, 'change_current_package_end')
    replaced['vnf_instance']['instantiatedVnfInfo']['vnfcResourceInfo'][
        0]['computeResource']['resourceId'] = 'srv-rebuilt'
    with pytest.raises(modify.ServersReplaced) as err:
        modify.change_current_package_end(replaced)
    assert 'Heat replaced servers srv-new while changing the package' in \
        str(err.value)
