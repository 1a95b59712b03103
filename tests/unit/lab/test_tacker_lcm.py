"""The lab's LCM through Tacker's API (k8s_mgmt_lab.tacker_lcm) against the
fake Tacker: what an operation sends, what the lab record keeps, and how a
FAILED_TEMP operation is reported; and the pieces around it (the VIM's
config file, the CLI's summary, faults for VMs not booted yet)."""

import io
import json
import os
import zipfile

import pytest
import yaml

from k8s_mgmt import shipped
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.cli import lab_tacker
from k8s_mgmt_lab.machines import vm_faults
from k8s_mgmt_lab.tacker_lcm import logs
from k8s_mgmt_lab.tacker_lcm import operations
from k8s_mgmt_lab.tacker_lcm import progress
from k8s_mgmt_lab.tacker_lcm import record as record_mod
from k8s_mgmt_lab.tacker_lcm import vim
from tests.unit.lab.fake_tacker import DRIVER_ERROR
from tests.unit.lab.test_tacker_api import tacker_of

REQUEST = {'flavourId': 'simple',
           'vimConnectionInfo': [{'id': 'c1', 'vimId': 'placeholder',
                                  'vimType': 'openstack'}],
           'additionalParams': {'k': 'v'}}


@pytest.fixture
def followed():
    return []


@pytest.fixture
def lab(fake, followed, tmp_path, monkeypatch):
    """A lab record with a Tacker, the fake as its Tacker; what the
    record would follow is collected in ``followed``."""
    settings = manager.LabSettings(state_dir=str(tmp_path))
    with zipfile.ZipFile(settings.package_zip, 'w') as archive:
        archive.writestr('TOSCA-Metadata/TOSCA.meta', '')
    manager.write_record(settings.lab_file, {
        'flavour': 'simple', 'request': REQUEST, 'stack_id': None,
        'tacker': {'vim_id': 'lab-vim', 'vim_name': 'lab-vim-x'}})
    tacker = tacker_of(fake)
    conductor_logs = [str(tmp_path / ('tacker-conductor-%d.log' % n))
                      for n in (1, 2)]
    monkeypatch.setattr(logs, 'conductor_logs', lambda d: conductor_logs)
    monkeypatch.setattr(operations, 'tacker_record',
                        lambda s: manager.read_record(s))
    monkeypatch.setattr(operations, 'client', lambda record: tacker)

    def follow(s, instance):
        followed.append(instance)
        return operations._save(s, vnf_instance_id=instance['id'])
    monkeypatch.setattr(record_mod, 'follow', follow)
    return settings


def _record(settings):
    return manager.read_record(settings)


def _second_lab(lab):
    """A lab beside ``lab`` with its package and record, but no VNFD id
    yet: its next call onboards the package."""
    fresh = manager.LabSettings(state_dir=str(lab.state_dir) + '-2')
    os.makedirs(fresh.state_dir)
    os.link(lab.package_zip, fresh.package_zip)
    manager.write_record(fresh.lab_file, dict(_record(lab), vnfd_id=None))
    return fresh


def test_instantiate_onboards_once_and_sends_the_request_on_the_labs_vim(
        fake, lab):
    outcome = operations.instantiate(lab)
    assert outcome.state == 'COMPLETED' and outcome.operation == \
        'instantiate'
    (sent,) = [json.loads(body) for method, path, _q, _h, body
               in fake.requests if path.endswith('/instantiate')]
    assert sent['vimConnectionInfo'] == [{'id': 'c1', 'vimId': 'lab-vim',
                                          'vimType': 'openstack'}]
    assert sent['additionalParams'] == {'k': 'v'}
    record = _record(lab)
    assert record['vnfd_id'] and record['vnf_instance_id']
    assert record['last_op'] == {'id': outcome.op_id,
                                 'operation': 'instantiate'}
    # The record's request is left as it was.
    assert record['request']['vimConnectionInfo'][0]['vimId'] == \
        'placeholder'
    # A second run finds the package and the instance.
    operations.ensure_instance(lab, record, operations.client(record))
    assert len(fake.packages) == 1 and len(fake.instances) == 1


def test_a_package_tacker_lost_is_built_again_under_a_new_vnfd_id(
        fake, lab, monkeypatch):
    """Tacker 16's race between conductors: ONBOARDED, content gone. The
    lab builds the package again (a new VNFD id) and onboards that."""
    built = []
    monkeypatch.setattr(manager, 'build_package',
                        lambda s, tacker, api: built.append((tacker, api)))
    fake.lose_content = 1
    operations.instantiate(lab)
    assert built == [(True, 'v1')] and len(fake.packages) == 2
    assert _record(lab)['vnf_package_id'] == list(fake.packages)[-1]
    # Lost every time: after ONBOARD_ATTEMPTS, the error names the race.
    fresh = _second_lab(lab)
    fake.lose_content = operations.ONBOARD_ATTEMPTS
    with pytest.raises(operations.packages_mod.PackageLost,
                       match='VnfPackageVnfdIdDuplicate'):
        operations.ensure_package(fresh, _record(fresh),
                                  operations.client({}))


def test_a_package_set_back_to_created_by_the_race_is_built_again(
        fake, lab, monkeypatch):
    """The same race, the loser's revert saved last: the package is CREATED
    again. With the race in a conductor's log the lab builds it again;
    without it, the refusal is the package's own and is raised at once."""
    built = []
    monkeypatch.setattr(manager, 'build_package',
                        lambda s, tacker, api: built.append((tacker, api)))
    second_log = logs.conductor_logs(lab.state_dir)[1]

    def race(package):
        with open(second_log, 'a') as handle:
            handle.write('ERROR oslo_messaging.rpc.server tacker.common.'
                         'exceptions.VnfPackageVnfdIdDuplicate: Vnf package '
                         'with vnfd id x already exists.\n')
    fake.refuse_content, fake.on_refuse = 1, race
    operations.instantiate(lab)
    assert built == [(True, 'v1')] and len(fake.packages) == 2
    assert _record(lab)['vnf_package_id'] == list(fake.packages)[-1]
    # The race line is old news now: a refusal with nothing new in the
    # logs is the content's fault, not rebuilt.
    fresh = _second_lab(lab)
    fake.refuse_content, fake.on_refuse = 1, None
    with pytest.raises(operations.packages_mod.PackageRefused,
                       match='CREATED again'):
        operations.ensure_package(fresh, _record(fresh),
                                  operations.client({}))
    assert built == [(True, 'v1')]


def test_a_package_left_processing_by_the_race_is_built_again(
        fake, lab, monkeypatch):
    """Tacker 16's download counter left above zero: the package stays
    PROCESSING after every conductor read it. Once both logs say so and
    the grace has passed, the lab builds it again; while one conductor
    has not read it yet, it waits (here: to the deadline)."""
    built = []
    monkeypatch.setattr(manager, 'build_package',
                        lambda s, tacker, api: built.append((tacker, api)))
    monkeypatch.setattr(logs, 'STALL_GRACE', 0.0)
    paths = logs.conductor_logs(lab.state_dir)

    def read_by(count):
        def stall(package):
            for path in paths[:count]:
                with open(path, 'a') as handle:
                    handle.write('INFO tosca.model The input "/x/%s.zip" '
                                 'successfully passed validation.\n'
                                 % package['id'])
        return stall
    fake.stall_content, fake.on_stall = 1, read_by(2)
    operations.instantiate(lab)
    assert built == [(True, 'v1')] and len(fake.packages) == 2
    assert _record(lab)['vnf_package_id'] == list(fake.packages)[-1]
    # Read by one of the two only: not stalled, so no rebuild before the
    # deadline, which then names the state.
    monkeypatch.setattr(operations, 'ONBOARD_DEADLINE', 0.5)
    fresh = _second_lab(lab)
    fake.stall_content, fake.on_stall = 1, read_by(1)
    with pytest.raises(operations.TackerApiError,
                       match='still PROCESSING after'):
        operations.ensure_package(fresh, _record(fresh),
                                  operations.client({}))
    assert built == [(True, 'v1')]


def test_stall_watch_waits_for_every_conductor_and_the_grace(tmp_path):
    paths = [str(tmp_path / name) for name in ('c1.log', 'c2.log')]
    for path in paths:
        open(path, 'w').write('INFO "/x/p1.zip" successfully passed '
                              'validation.\n')
    mark = logs.Mark(paths)
    now = [100.0]
    watch = logs.StallWatch(mark, 'p1', grace=30.0, clock=lambda: now[0])
    # Lines from before the mark do not count.
    assert watch() is None
    line = 'INFO "/x/p1.zip" successfully passed validation.\n'
    open(paths[0], 'a').write(line)
    assert watch() is None
    open(paths[1], 'a').write(line)
    assert watch() is None            # every one read it: the grace starts
    now[0] += 29.0
    assert watch() is None
    now[0] += 2.0
    assert 'still PROCESSING 31 s after each of the 2' in watch()


def test_a_failed_temp_operation_is_one_line_naming_the_way_out(
        fake, lab, followed):
    fake.outcome = ['PROCESSING', 'FAILED_TEMP']
    fake.error = DRIVER_ERROR
    with pytest.raises(operations.OperationFailed) as caught:
        operations.instantiate(lab)
    text = str(caught.value)
    assert '\n' not in text and 'Traceback' not in text
    assert 'FAILED_TEMP' in text and 'worker-2: join' in text
    assert caught.value.op_id in text and 'lab rollback' in text
    # The record remembers it for retry, rollback and fail.
    assert _record(lab)['last_op']['id'] == caught.value.op_id
    assert followed   # the instance was followed all the same


def test_rollback_of_the_last_operation_waits_for_rolled_back(fake, lab):
    fake.outcome = ['PROCESSING', 'FAILED_TEMP']
    with pytest.raises(operations.OperationFailed) as caught:
        operations.instantiate(lab)
    outcome = operations.rollback(lab)
    assert outcome.op_id == caught.value.op_id
    assert outcome.state == 'ROLLED_BACK'


def test_an_instance_deleted_behind_the_labs_back_is_made_again(fake, lab):
    operations.instantiate(lab)
    first = _record(lab)['vnf_instance_id']
    fake.instances.clear()
    operations._save(lab, stack_id=None)
    operations.instantiate(lab)
    assert _record(lab)['vnf_instance_id'] not in (None, first)


def test_scale_and_heal_carry_the_options_as_additional_params(fake, lab):
    operations.instantiate(lab)
    operations._save(lab, stack_id='s1')    # what follow would find
    operations.scale(lab, 'SCALE_IN', additional_params={
        'force_drain': True})
    operations.heal(lab, ['vnfc-1'], operations.heal_params(
        keep_volumes=True))
    bodies = [json.loads(body) for method, path, _q, _h, body
              in fake.requests if path.endswith(('/scale', '/heal'))]
    assert bodies[0]['additionalParams'] == {'force_drain': True}
    assert bodies[1]['vnfcInstanceId'] == ['vnfc-1']
    assert bodies[1]['additionalParams'] == {
        'tacker_extension_heal_include_block_storage': False}


def test_an_upgrade_or_a_renewal_is_a_patch_of_the_metadata(fake, lab):
    from k8s_mgmt_lab.cli import lab_upgrade
    operations.instantiate(lab)
    operations._save(lab, stack_id='s1')
    args = type('Args', (), {'to': '1.36', 'max_unavailable': 2})()
    outcome = operations.modify(lab, lab_upgrade._metadata(args))
    assert outcome.operation == 'modify'
    [body] = [body for method, _path, _q, _h, body in fake.requests
              if method == 'PATCH']
    assert json.loads(body) == {'metadata': {
        'k8sMgmtUpgrade': '1.36', 'k8sMgmtUpgradeMaxUnavailable': '2'}}


def test_operations_need_an_instantiated_vnf(lab):
    with pytest.raises(operations.LabError, match='lab instantiate'):
        operations.scale(lab, 'SCALE_OUT')


def test_heal_params():
    assert operations.heal_params() is None
    assert operations.heal_params(recreate_volumes=True) == {
        'storage_volume_recreate': True}


def test_vnfc_ids_map_servers_to_tackers_vnfc_ids():
    instance = {'instantiatedVnfInfo': {'vnfcResourceInfo': [
        {'id': 'v1', 'computeResource': {'resourceId': 'srv-1'}},
        {'id': 'v2', 'computeResource': {}}]}}
    assert record_mod.vnfc_ids(instance) == {'srv-1': 'v1'}


def test_the_vim_config_file_is_python_tackerclients():
    text = vim.config_text({
        'auth_url': 'http://127.0.0.1:5000/v3', 'username': 'admin',
        'password': 'pw', 'project_name': 'lab-x',
        'project_domain_name': 'Default', 'user_domain_name': 'Default',
        'region_name': 'RegionOne'})
    assert yaml.safe_load(text) == {
        'auth_url': 'http://127.0.0.1:5000/v3', 'username': 'admin',
        'password': 'pw', 'project_name': 'lab-x',
        'project_domain_name': 'Default', 'user_domain_name': 'Default',
        'cert_verify': 'False'}


def test_summary_names_the_operation_the_vnfcs_and_the_nodes():
    lines = lab_tacker.summary_lines({
        'vnf_instance_id': 'i1', 'instantiation_state': 'INSTANTIATED',
        'operation': 'scale', 'op_occ_id': 'o1',
        'operation_state': 'COMPLETED', 'seconds': 42.0,
        'vnfcs': [{'id': 'v1', 'vdu_id': 'masterNode', 'server': 's1'}],
        'cluster': {'endpoint': 'https://10.0.0.9:6443', 'error': None,
                    'nodes': [{'name': 'master-1', 'ready': True,
                               'roles': ['control-plane']}]}})
    assert lines[0] == ('VNF instance i1: INSTANTIATED; scale op occurrence '
                        'o1 COMPLETED in 42.0 s')
    assert 'v1' in lines[1] and 's1' in lines[1]
    assert 'master-1' in lines[3] and 'Ready' in lines[3]


def test_faults_for_new_vms_reach_only_the_vms_booted_after(tmp_path):
    state = str(tmp_path)
    fault_dir = vm_faults.faults.FAULT_DIR
    assert vm_faults.apply_to_new(state, str(tmp_path / 'vm1')) == []
    assert vm_faults.set_for_new_vms(state, 'kubeadm-join')
    assert not vm_faults.set_for_new_vms(state, 'kubeadm-join')
    assert vm_faults.apply_to_new(state, str(tmp_path / 'vm2')) == [
        'kubeadm-join']
    assert os.path.exists(str(tmp_path / 'vm2') + fault_dir +
                          '/kubeadm-join')
    assert not os.path.exists(str(tmp_path / 'vm1') + fault_dir)
    assert vm_faults.set_for_new_vms(state, 'kubeadm-join', clear=True)
    assert vm_faults.apply_to_new(state, str(tmp_path / 'vm3')) == []


def test_the_drivers_lines_of_the_conductors_log_are_shown_short(tmp_path):
    log = tmp_path / 'tacker-conductor.log'
    log.write_text('2026-11-27 07:00:00.000 10 INFO k8s_mgmt.x [-] old\n')
    shown = io.StringIO()
    with progress.ConductorProgress(str(log), out=shown):
        with open(log, 'a') as handle:
            handle.write(
                '2026-11-27 07:40:01.123 4242 INFO k8s_mgmt.engine.phases '
                '[req-1 - - - - - -] instantiate_end: Join workers\n'
                '2026-11-27 07:40:01.200 4242 INFO tacker.conductor.x '
                '[req-1] not ours\n'
                '2026-11-27 07:40:02.500 4242 ERROR k8s_mgmt.driver [-] '
                'worker-1: join: refused\n')
    assert shown.getvalue().splitlines() == [
        '07:40:01 INFO instantiate_end: Join workers',
        '07:40:02 ERROR worker-1: join: refused']


def test_a_kept_planes_tacker_loses_what_the_lab_made(fake, lab, caplog):
    """lab down on a kept plane: every instance goes, one still
    instantiated terminated first (FORCEFUL, once the operation it left
    FAILED_TEMP was given up), and every package; the VIMs' removal is
    tried (the fake has no VIM API: logged, not raised)."""
    operations.instantiate(lab)                   # package 1, instance 1
    instantiated = next(iter(fake.instances.values()))
    instantiated['instantiationState'] = 'INSTANTIATED'
    stuck = {'id': 'op-left', 'operation': 'SCALE', 'error': None,
             'vnfInstanceId': instantiated['id'],
             'operationState': 'FAILED_TEMP', '_script': []}
    fake.occurrences[stuck['id']] = stuck
    tacker = operations.client(manager.read_record(lab))
    extra = tacker.packages.onboard(lab.package_zip, deadline=5)
    tacker.instances.create(extra['vnfdId'])
    from k8s_mgmt_lab.tacker_lcm import cleanup
    cleanup.release(manager.read_record(lab))
    assert stuck['operationState'] == 'FAILED'
    terminated = [o for o in fake.occurrences.values()
                  if o['operation'] == 'TERMINATE']
    assert [(o['vnfInstanceId'], o['operationParams']['terminationType'],
             o['operationState']) for o in terminated] == [
        (instantiated['id'], 'FORCEFUL', 'COMPLETED')]
    assert not fake.instances and not fake.packages
    assert 'delete VIM' in caplog.text


def test_an_instance_that_cannot_be_terminated_stays_with_its_package(
        fake, lab, caplog):
    operations.instantiate(lab)
    kept = next(iter(fake.instances.values()))
    kept['instantiationState'] = 'INSTANTIATED'
    fake.outcome = ['STARTING', 'FAILED_TEMP']
    from k8s_mgmt_lab.tacker_lcm import cleanup
    cleanup.release(manager.read_record(lab))
    assert list(fake.instances) == [kept['id']]
    assert [p['vnfdId'] for p in fake.packages.values()] == [
        kept['vnfdId']]
    assert 'still instantiated' in caplog.text


def test_a_v2_lab_sends_the_v2_shape_on_its_vim():
    """``lab up --api v2``: the lab's v1-shaped request reshaped as
    ``k8s-mgmt package request --api v2`` does, on the lab's VIM; a body
    already in v2's shape keeps it."""
    body = shipped.sample_request('complex')
    v2 = operations.request_for_vim(body, 'lab-vim', 'v2')
    assert v2['vimConnectionInfo'] == {'vim1': {
        'vimId': 'lab-vim', 'vimType': 'ETSINFV.OPENSTACK_KEYSTONE.V_3'}}
    assert 'lcm-operation-user-data' not in v2['additionalParams']
    again = operations.request_for_vim(v2, 'other-vim', 'v2')
    assert again['vimConnectionInfo']['vim1']['vimId'] == 'other-vim'
    assert operations.request_for_vim(body, 'lab-vim')[
        'vimConnectionInfo'][0]['vimId'] == 'lab-vim'


def test_v2_vnfc_ids_are_its_vnfc_info_ids():
    server = '3ce05ecc-1716-49c9-b6c5-b36944c433ed'
    v2 = {'instantiatedVnfInfo': {
        'vnfcResourceInfo': [{'id': server, 'vduId': 'workerNode',
                              'computeResource': {'resourceId': server}}],
        'vnfcInfo': [{'id': 'workerNode-' + server, 'vduId': 'workerNode',
                      'vnfcResourceInfoId': server}]}}
    assert record_mod.vnfc_ids(v2, 'v2') == {server: 'workerNode-' + server}
    # Terminated: v2 keeps {flavourId, vnfState} only.
    assert record_mod.vnfcs({'instantiatedVnfInfo': {
        'flavourId': 'simple', 'vnfState': 'STOPPED'}}, 'v2') == []
    # v1 lists vnfcInfo too, with ids of its own a v1 heal does not take.
    v1 = {'instantiatedVnfInfo': {
        'vnfcResourceInfo': [{'id': 'vnfc-1', 'vduId': 'workerNode',
                              'computeResource': {'resourceId': server}}],
        'vnfcInfo': [{'id': 'info-1', 'vduId': 'workerNode',
                      'vnfcResourceInfoId': 'vnfc-1'}]}}
    assert record_mod.vnfc_ids(v1) == {server: 'vnfc-1'}


@pytest.mark.parametrize('stack, recorded', [
    (('s-9', 'vnflcm_i-1'), ('s-9', 'vnflcm_i-1')),   # FAILED_TEMP: its VMs
    (None, (None, None)),                             # terminated
])
def test_an_instance_not_instantiated_keeps_the_stack_heat_has(
        tmp_path, monkeypatch, stack, recorded):
    settings = manager.LabSettings(state_dir=str(tmp_path))
    manager.write_record(settings.lab_file, {'flavour': 'simple',
                                             'stack_id': 'old'})
    monkeypatch.setattr(record_mod, 'find_stack',
                        lambda record, instance_id: stack)
    record = record_mod.follow(settings, {
        'id': 'i-1', 'instantiationState': 'NOT_INSTANTIATED'})
    assert (record['stack_id'], record['stack_name']) == recorded
    assert record['vnfc_ids'] == {}
