"""Scale and terminate decisions as data: which nodes change, which script
runs where (no SSH, no API), and terminate's state clean-up on real files."""

import dataclasses
import os

import pytest
from oslo_config import fixture as cfg_fixture

from k8s_mgmt import conf
from k8s_mgmt import context as ctx_mod
from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt import ssh
from k8s_mgmt import state as state_mod
from k8s_mgmt import vim
from k8s_mgmt.shared_phases import scale_plan
from k8s_mgmt.engine import script_output
from k8s_mgmt.modes import catalog

import op_helpers

JOIN = script_output.JoinData(secrets.Secret('abcdef.0123456789abcdef'),
                              'sha256:' + 'ab' * 32,
                              secrets.Secret('c0ffee' * 10 + 'c0de'))


def _members(topology):
    """Give every node a member resource name, as an AutoScalingGroup does."""
    def member(n):
        return dataclasses.replace(n, parent_resource='m' + n.name[-1] +
                                   n.role[0])
    return dataclasses.replace(
        topology, masters=tuple(member(n) for n in topology.masters),
        workers=tuple(member(n) for n in topology.workers))


# The new workers connect and prepare in the background while the master
# side runs.
SCALE_OUT_TITLES = [
    'Read the topology from Heat', 'Find the new workers',
    'Connect to the new workers and prepare them',
    'Connect to master master-1', 'Upload the scripts to master-1',
    'Read the API credentials', 'Read the cluster\'s nodes',
    'Read join data', 'Wait until the new workers are prepared',
    'Join the new workers', 'Wait until the new workers are Ready',
    'Label the new workers']


def _scale_out(topo, params, ids, ready=None):
    ready = ({n.name for n in topo.all_nodes()} - {
        topo.by_stack_id(i).name for i in ids}) if ready is None else ready
    return op_helpers.plan(params, topo, 'scale_out', 'scale_end',
                           ready=ready, scale_out_ids=ids)


def _nodes_in(phases):
    return sorted({w.node for p in phases for w in p.work if w.node})


@pytest.mark.parametrize('workers', [1, 8])
def test_scale_out_touches_one_master_and_the_new_worker_only(workers):
    topo = op_helpers.topology(1, workers + 1)
    params = op_helpers.sample_params('simple')
    new = topo.workers[-1]
    phases = _scale_out(topo, params, [new.stack_id])
    assert op_helpers.titles(phases) == SCALE_OUT_TITLES
    early = op_helpers.phase(phases,
                             'Connect to the new workers and prepare them')
    assert early.background and early.nodes == (new.name,)
    prepare, = op_helpers.calls(early)
    assert prepare.argv[:3] == ('prepare', '-e', '10.254.0.11:6443')
    print_join, = op_helpers.calls(op_helpers.phase(phases,
                                                    'Read join data'))
    assert print_join.argv[0] == 'print-join'
    assert print_join.node == 'master-1'
    joins = op_helpers.phase(phases, 'Join the new workers')
    assert [c.node for c in op_helpers.calls(joins)] == [new.name]
    # The same nodes whatever the cluster's size.
    assert _nodes_in(phases) == ['master-1', new.name]
    join, = op_helpers.calls(joins)
    assert join.argv[0] == 'join-worker'
    assert join.argv[join.argv.index('-e') + 1] == '10.254.0.11:6443'
    assert [k for k, _ in join.stdin_secrets] == ['token']


def test_two_steps_join_both_new_workers_at_once_and_skip_ready_ones():
    topo = op_helpers.topology(1, 4)
    params = op_helpers.sample_params('simple')
    ids = [topo.workers[2].stack_id, topo.workers[3].stack_id]
    phases = _scale_out(topo, params, ids)
    joins = op_helpers.phase(phases, 'Join the new workers')
    assert joins.parallel
    assert [c.node for c in op_helpers.calls(joins)] == [
        'worker-3', 'worker-4']
    # A re-run after worker-3 joined: only worker-4 joins.
    rerun = _scale_out(topo, params, ids, ready={'master-1', 'worker-3'})
    joins = op_helpers.phase(rerun, 'Join the new workers')
    assert [c.node for c in op_helpers.calls(joins)] == ['worker-4']
    done = _scale_out(topo, params, ids,
                      ready={'master-1', 'worker-3', 'worker-4'})
    skipped = op_helpers.phase(done, 'Join the new workers')
    assert skipped.skip == 'every new worker is already Ready'
    assert 'Read join data' not in op_helpers.titles(done)


def test_ha_scale_out_joins_through_the_vip_and_leaves_masters_alone():
    topo = op_helpers.topology(3, 3, vip='10.254.0.100')
    params = op_helpers.sample_params('complex')
    phases = _scale_out(topo, params, [topo.workers[2].stack_id])
    assert _nodes_in(phases) == ['master-1', 'worker-3']
    print_join, = op_helpers.calls(op_helpers.phase(phases,
                                                    'Read join data'))
    join, = op_helpers.calls(op_helpers.phase(phases,
                                              'Join the new workers'))
    # Workers need no certificate key: none is made (no -A), but the HA
    # endpoint is theirs.
    assert '-A' not in print_join.argv
    assert join.argv[join.argv.index('-e') + 1] == '10.254.0.100:16443'
    assert [k for k, _ in join.stdin_secrets] == ['token']


def test_scale_in_drains_the_named_workers_through_one_master():
    topo = _members(op_helpers.topology(1, 3))
    params = op_helpers.sample_params('simple')
    phases = op_helpers.plan(params, topo, 'scale_in', 'scale_start',
                             scale_names=[topo.workers[0].parent_resource])
    assert op_helpers.titles(phases) == [
        'Read the topology from Heat', 'Find the workers to remove',
        'Check the registered VIM\'s credentials',
        'Connect to master master-1', 'Upload the scripts to master-1',
        'Read the API credentials', "Read the cluster's nodes",
        'Drain and delete the workers']
    # The registered VIM is checked once, before the way through a master.
    creds = op_helpers.phase(phases, 'Read the API credentials')
    assert [w.kind for w in creds.work] == ['ssh']
    drain = phases[-1]
    assert drain.nodes == ('worker-1',)
    assert drain.work[0].text == ('cordon node worker-1, evict its pods, '
                                  'delete the node')
    nothing = op_helpers.plan(params, topo, 'scale_in', 'scale_start',
                              scale_names=['no-such-member'])
    assert nothing[-1].skip == 'no worker to remove'


def test_scale_out_ids_that_match_no_worker_are_an_error_naming_them():
    topo = op_helpers.topology(1, 2)
    with pytest.raises(exceptions.TopologyError) as caught:
        scale_plan.new_workers(topo, ['stack-nope', topo.masters[0].stack_id])
    text = str(caught.value)
    assert 'stack-nope: no server' in text
    assert 'master node master-1, not a worker' in text


def test_without_ids_the_workers_the_api_does_not_list_join():
    topo = op_helpers.topology(1, 3)
    assert [n.name for n in scale_plan.workers_not_in_cluster(
        topo, {'master-1': 0, 'worker-1': 0})] == ['worker-2', 'worker-3']


def test_scale_in_names_resolve_to_member_workers():
    topo = _members(op_helpers.topology(1, 3))
    removal = scale_plan.nodes_to_remove(topo, ['m3w', 'm2w'])
    assert [n.name for n in removal.workers] == ['worker-3', 'worker-2']
    assert removal.unknown == () and removal.masters == ()


def test_scale_in_servers_resolve_to_workers():
    """Tacker's v2 grant names the servers a scale-in removes."""
    topo = _members(op_helpers.topology(1, 3))
    removal = scale_plan.nodes_to_remove(
        topo, [topo.workers[1].server_id, topo.masters[0].server_id])
    assert [n.name for n in removal.workers] == ['worker-2']
    assert removal.masters == ('master-1',) and removal.unknown == ()


def test_scale_in_reports_unknown_and_master_names():
    topo = _members(op_helpers.topology(1, 2))
    removal = scale_plan.nodes_to_remove(topo, ['m1m', 'gone', 'm1w'])
    assert [n.name for n in removal.workers] == ['worker-1']
    assert removal.unknown == ('gone',)
    assert removal.masters == ('master-1',)


def test_a_name_both_groups_use_is_taken_as_the_worker():
    topo = op_helpers.topology(1, 1)
    topo = dataclasses.replace(
        topo, masters=(dataclasses.replace(topo.masters[0],
                                           parent_resource='same'),),
        workers=(dataclasses.replace(topo.workers[0],
                                     parent_resource='same'),))
    removal = scale_plan.nodes_to_remove(topo, ['same'])
    assert [n.name for n in removal.workers] == ['worker-1']
    assert removal.masters == ()


def test_rollback_resolves_names_and_new_stack_ids_once_each():
    topo = _members(op_helpers.topology(1, 3))
    removal = scale_plan.nodes_to_remove(
        topo, ['m3w'], [topo.workers[2].stack_id, topo.workers[1].stack_id])
    assert [n.name for n in removal.workers] == ['worker-3', 'worker-2']


def test_only_the_worker_aspect_scales():
    params = op_helpers.sample_params('simple')
    master_aspect = params.master_node.aspect_id
    worker_aspect = params.worker_node.aspect_id
    assert master_aspect and worker_aspect
    scale_plan.check_worker_aspect(params, worker_aspect)
    scale_plan.check_worker_aspect(params, None)
    with pytest.raises(exceptions.MgmtDriverError) as caught:
        scale_plan.check_worker_aspect(params, master_aspect)
    assert master_aspect in str(caught.value)


def test_labels_only_for_the_new_workers_from_their_placement():
    topo = op_helpers.topology(3, 3, vip='10.254.0.100', anti_affinity=True)
    params = op_helpers.sample_params('podaffinity')
    phases = _scale_out(topo, params, [topo.workers[2].stack_id])
    labels = op_helpers.phase(phases, 'Label the new workers')
    assert labels.nodes == ('worker-3',)
    assert [w.text for w in labels.work] == [
        'PATCH node worker-3 labels CIS-node=compute-3']


# -- nodes whose VM is gone ---------------------------------------------------

def test_vanished_nodes_are_pinned_listed_and_gone_from_heat():
    topo = op_helpers.topology(1, 2)
    pins = {
        'srv-master-1': {'node': 'master-1'},      # in the stack
        'srv-worker-2': {'node': 'worker-2'},      # in the stack
        'srv-old-w3': {'node': 'worker-3'},        # gone, still listed
        'srv-old-w4': {'node': 'worker-4'},        # gone, not listed
        'srv-old-w1': {'node': 'worker-1'},        # healed: name reused
        '10.0.0.9:22': {'node': 'worker-5'},       # not a server pin
        'srv-no-name': {'node': None},
    }
    listed = {'master-1', 'worker-1', 'worker-2', 'worker-3', 'worker-5',
              'outsider'}
    assert scale_plan.vanished_nodes(pins, topo, listed) == (
        scale_plan.Vanished('worker-3', 'srv-old-w3'),)
    assert scale_plan.vanished_nodes({}, topo, listed) == ()


# -- terminate ---------------------------------------------------------------

@pytest.fixture
def state_dir(tmp_path):
    fix = cfg_fixture.Config(conf.CONF)
    fix.setUp()
    fix.config(state_dir=str(tmp_path / 'state'), group='k8s_mgmt')
    yield tmp_path
    fix.cleanUp()


def _ctx(inst_id, vnfc_servers=()):
    vnf_instance = {'id': inst_id, 'instantiated_vnf_info': {
        'vnfc_resource_info': [{'compute_resource': {'resource_id': s}}
                               for s in vnfc_servers]}}
    return ctx_mod.OperationContext(
        operation='terminate', hook='terminate_end', vnf_instance_id=inst_id,
        flavour='simple', stack_id=None,
        params=op_helpers.sample_params('simple'), request={},
        vnf_instance=vnf_instance)


def _register(inst_id):
    state = state_mod.InstanceState(inst_id)
    vim.FileVimRegistrar(state).register(vim.VimRecord(
        name='v', endpoint='https://10.0.0.1:6443',
        bearer_token=secrets.Secret('tok'), ssl_ca_cert='CA'))
    state.update_cluster_record(init_master_server_id='srv-master')
    state.vrrp_password()
    return state


def test_terminate_removes_vim_files_and_state_then_is_a_no_op(state_dir):
    state = _register('inst-1')
    other = _register('inst-2')
    result = catalog.run(_ctx('inst-1'))
    assert sorted(os.path.basename(p) for p in
                  result['vim']['files_removed']) == ['kubeconfig',
                                                      'vim_config.yaml']
    assert result['state_removed'] is True
    assert not os.path.exists(state.path)
    assert os.path.isdir(other.path)      # another instance keeps its state
    again = catalog.run(_ctx('inst-1'))
    assert again['vim'] == {'files_removed': []}
    assert again['state_removed'] is False


def test_terminate_forgets_only_its_servers_in_a_shared_pin_file(state_dir):
    import paramiko
    shared = str(state_dir / 'shared_pins.json')
    fix = cfg_fixture.Config(conf.CONF)
    fix.setUp()
    try:
        fix.config(host_key_file=shared, group='k8s_mgmt')
        store = ssh.HostKeyStore(shared)
        for sid in ('srv-master', 'srv-w1', 'srv-other'):
            store.check(sid, paramiko.ECDSAKey.generate(), sid)
        _register('inst-3')
        result = catalog.run(_ctx('inst-3', ['srv-w1']))
        assert sorted(result['host_keys_forgotten']) == ['srv-master',
                                                         'srv-w1']
        assert sorted(ssh.HostKeyStore(shared).all()) == ['srv-other']
    finally:
        fix.cleanUp()
