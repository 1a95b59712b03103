"""The upgrade's phases, walked without connecting: the order of the
nodes and of their steps, what a single master skips, the refusals of
the dry run, and the version nodes added later get."""

import dataclasses
import json

import pytest

from k8s_mgmt import state as state_mod
from k8s_mgmt.engine import run as run_mod
from k8s_mgmt.modes import catalog
from k8s_mgmt.shared_phases import upgrade_plan

import op_helpers


def walk(flavour, masters, workers, target='1.36', vip=None,
         max_unavailable=0, params=None, **facts):
    topo = op_helpers.topology(masters, workers, vip=vip)
    params = params or op_helpers.sample_params(flavour)
    ctx = dataclasses.replace(
        op_helpers.context(params, 'upgrade', 'modify_information_end'),
        upgrade_target=target, max_unavailable=max_unavailable)
    ready = facts.pop('ready', [n.name for n in topo.all_nodes()])
    return catalog.plan(ctx, run_mod.Facts(topology=topo,
                                           ready=frozenset(ready), **facts))


def test_a_single_master_cluster_upgrades_master_then_workers():
    titles = op_helpers.titles(walk('simple', 1, 2))
    assert titles == [
        'Read the topology from Heat', 'Connect to every node',
        'Upload the scripts', 'Check every node for the upgrade to 1.36',
        'Probe the other masters',
        'Read the API credentials through master-1',
        'Read the cluster\'s nodes and version',
        'Wait until every node is checked',
        'Decide the upgrade to 1.36',
        'Drain master-1',
        'Upgrade the control plane on master-1 (kubeadm upgrade apply '
        'v1.36.0)',
        'Record Kubernetes 1.36.0 as the cluster\'s version',
        'Wait until master-1 is Ready with kubelet 1.36.0',
        'Uncordon master-1',
        # kubeadm renewed the master's certificates: read meanwhile.
        'Read the certificates on every master',
        'Drain worker-1', 'Upgrade worker-1 (kubeadm upgrade node)',
        'Wait until worker-1 is Ready with kubelet 1.36.0',
        'Uncordon worker-1',
        'Drain worker-2', 'Upgrade worker-2 (kubeadm upgrade node)',
        'Wait until worker-2 is Ready with kubelet 1.36.0',
        'Uncordon worker-2',
        'Wait until the certificates are read',
        'Record the certificates\' expiry',
        'Record the upgrade to 1.36.0 as done']


def test_ha_masters_leave_haproxy_one_at_a_time_the_vip_holder_last():
    phases = walk('complex', 3, 2, vip='10.254.0.100', max_unavailable=2)
    titles = op_helpers.titles(phases)
    # The nodes' checks run while the API, etcd and the VIP are read.
    check = titles.index('Check every node for the upgrade to 1.36')
    assert phases[check].background
    assert titles[check + 1:titles.index('Decide the upgrade to 1.36')] == [
        'Probe the other masters',
        'Read the API credentials through master-1',
        'Read the cluster\'s nodes and version',
        'Read etcd members and health on master-1',
        'Find the VIP on master-1, master-2, master-3',
        'Wait until every node is checked']
    # The dry run assumes every master holds the VIP: the first is taken
    # as its holder, so it goes last.
    order = [t.split()[-1] for t in titles if t.startswith('Drain master')]
    assert order == ['master-2', 'master-3', 'master-1']
    first = titles.index('Take master-2 out of HAProxy')
    assert phases[first].background
    assert titles[first:first + 10] == [
        'Take master-2 out of HAProxy', 'Drain master-2',
        'Wait until master-2 is out of HAProxy',
        'Upgrade the control plane on master-2 (kubeadm upgrade apply '
        'v1.36.0)',
        'Record Kubernetes 1.36.0 as the cluster\'s version',
        'Wait until master-2 is Ready with kubelet 1.36.0',
        'Check etcd on master-1: 3 members, all healthy',
        'Put master-2 behind HAProxy again', 'Uncordon master-2',
        'Take master-3 out of HAProxy']
    # master-2 comes back with master-3's change (one reload); the last
    # master comes back on its own.
    assert op_helpers.phase(phases, 'Put master-2 behind HAProxy '
                            'again').skip == ('with the next master\'s '
                                              'HAProxy change')
    assert op_helpers.phase(phases, 'Put master-1 behind HAProxy '
                            'again').skip is None
    # etcd's check after a master runs while the next one leaves HAProxy
    # and drains, and is waited for before its member restarts; the last
    # master comes back while the workers go.
    check = titles.index('Check etcd on master-1: 3 members, all healthy')
    assert phases[check].background
    assert titles.index('Wait for the etcd check on master-1') == \
        titles.index('Upgrade master-3 (kubeadm upgrade node)') - 1
    assert op_helpers.phase(phases, 'Put master-1 behind HAProxy '
                            'again').background
    assert titles[-5:-3] == ['Wait for the etcd check on master-2',
                             'Wait until master-1 is behind HAProxy again']
    holder = titles.index('Hand the VIP over from master-1')
    assert titles[holder:holder + 4] == [
        'Hand the VIP over from master-1', 'Take master-1 out of HAProxy',
        'Drain master-1', 'Wait until master-1 is out of HAProxy']
    assert 'Upgrade master-1 (kubeadm upgrade node)' in titles
    assert titles.index('Start keepalived on master-1') == titles.index(
        'Put master-1 behind HAProxy again') + 1
    # Both workers at once (max_unavailable 2), one kubeadm run each.
    upgrade = op_helpers.phase(phases, 'Upgrade worker-1, worker-2 '
                               '(kubeadm upgrade node)')
    assert upgrade.parallel and [c.mode for c in op_helpers.calls(
        upgrade)] == ['upgrade-node', 'upgrade-node']
    # HAProxy changes run on the other masters only.
    out = op_helpers.phase(phases, 'Take master-2 out of HAProxy')
    assert sorted(c.node for c in op_helpers.calls(out)) == [
        'master-1', 'master-3']


def test_the_dry_run_refuses_as_the_run_would():
    with pytest.raises(upgrade_plan.UpgradeRefused) as err:
        walk('simple', 1, 1, target='1.37')
    assert 'skips 1.36' in str(err.value)
    with pytest.raises(upgrade_plan.UpgradeRefused) as err:
        walk('simple', 1, 1, ready=['master-1'])
    assert 'every node must be Ready first: worker-1 is NotReady' in str(
        err.value)
    with pytest.raises(upgrade_plan.UpgradeRefused) as err:
        walk('kubespray', 1, 1)
    assert 'upgrade-cluster.yml' in str(err.value)


def test_the_recorded_version_is_what_later_nodes_get(tmp_path):
    # After an upgrade recorded 1.36.1, a scale-out's joins install it,
    # whatever the instantiate request said.
    state = state_mod.InstanceState('inst-1')
    state.write(state_mod.CLUSTER, json.dumps({
        'kubernetes_version': '1.36.1'}))
    params = op_helpers.sample_params('simple', kubernetes_version='1.35')
    phases = op_helpers.plan(params, op_helpers.topology(1, 2),
                             operation='scale_out', hook='scale_end',
                             scale_out_ids=('stack-worker-2',),
                             ready=['master-1', 'worker-1'])
    calls = [c for p in phases for c in op_helpers.calls(p)
             if c.mode in ('join-worker', 'prepare')]
    assert calls and all(
        c.argv[c.argv.index('-k') + 1] == '1.36' and
        c.argv[c.argv.index('-V') + 1] == '1.36.1' for c in calls)


def test_the_certificates_check_reads_every_master_and_records(tmp_path):
    topo = op_helpers.topology(3, 2, vip='10.254.0.100')
    ctx = op_helpers.context(op_helpers.sample_params('complex'),
                             'certs_check', 'modify_information_end')
    phases = catalog.plan(ctx, run_mod.Facts(topology=topo))
    assert op_helpers.titles(phases) == [
        'Read the topology from Heat', 'Connect to the masters',
        'Upload the scripts', 'Read the certificates on every master',
        'Record the certificates\' expiry']
    read = phases[3]
    assert read.parallel and [c.argv[:3] for c in op_helpers.calls(
        read)] == [('certs-check', '-k', '1.35')] * 3


def test_every_operation_warns_of_certificates_expiring_within_30_days():
    import datetime
    from k8s_mgmt.shared_phases import certs
    at = datetime.datetime(2026, 11, 28, tzinfo=datetime.timezone.utc)
    record = {'master-1': {
        'apiserver': '2026-12-10T10:00:00+00:00',
        'admin.conf': '2027-11-20T10:00:00+00:00'},
        'master-2': {'etcd-server': '2026-11-01T10:00:00+00:00'}}
    found = certs.expiring(record, at)
    assert [(node, c.name) for node, c in found] == [
        ('master-1', 'apiserver'), ('master-2', 'etcd-server')]

    class Op(object):
        prefix = '[scale_out i]'
        state = type('State', (), {'cluster_record': lambda self: {
            'certificates': record}})()
    lines = certs.warn_expiring(Op(), at)
    assert lines == [
        'certificate apiserver on master-1 expires on 2026-12-10 (in 12 '
        'days): renew the certificates',
        'certificate etcd-server on master-2 expired on 2026-11-01: renew '
        'the certificates']


def test_renewal_one_master_at_a_time_the_vip_holder_last():
    topo = op_helpers.topology(3, 2, vip='10.254.0.100')
    ctx = op_helpers.context(op_helpers.sample_params('complex'),
                             'certs_renew', 'modify_information_end')
    ready = frozenset(n.name for n in topo.all_nodes())
    titles = op_helpers.titles(catalog.plan(ctx, run_mod.Facts(
        topology=topo, ready=ready)))
    renewed = [t.split()[4] for t in titles if t.startswith('Renew')]
    assert renewed == ['master-2', 'master-3', 'master-1']
    first = titles.index('Take master-2 out of HAProxy')
    assert titles[first:first + 5] == [
        'Take master-2 out of HAProxy',
        'Wait until master-2 is out of HAProxy',
        'Renew the certificates on master-2 and restart its control plane',
        'Check etcd on master-1: 3 members, all healthy',
        'Put master-2 behind HAProxy again']
    assert titles[-4:] == ['Put master-1 behind HAProxy again',
                           'Start keepalived on master-1',
                           'Check the registered VIM\'s credentials',
                           'Record the certificates\' expiry']
    assert 'Hand the VIP over from master-1' in titles


def test_a_vim_the_api_refuses_after_a_renewal_is_registered_again():
    from k8s_mgmt.modes.kubeadm import certificates
    topo = op_helpers.topology(3, 1, vip='10.254.0.100')
    ctx = op_helpers.context(op_helpers.sample_params('complex'),
                             'certs_renew', 'modify_information_end')
    with run_mod.OperationRun(ctx, 'certs_renew i', facts=run_mod.Facts(
            topology=topo)) as op:
        # Accepted (or none registered): the check alone.
        for verdict in (certificates.ACCEPTED, certificates.NO_VIM):
            steps = certificates.vim_phases(op, topo, topo.masters[0])
            assert next(steps).title == 'Check the registered VIM\'s ' \
                'credentials'
            with pytest.raises(StopIteration):
                steps.send(verdict)
        steps = certificates.vim_phases(op, topo, topo.masters[0])
        next(steps)
        read = steps.send(certificates.REFUSED)
        unregister = steps.send(read.assume)
        register = steps.send(None)
        found = [p.title for p in (read, unregister, register)]
        assert found == ['Read fresh API credentials through master-1',
                         'Unregister the VIM whose credentials were refused',
                         'Register the VIM']


def test_kubespray_refuses_the_certificates_in_their_own_words():
    from k8s_mgmt.modes.kubeadm import certificates
    topo = op_helpers.topology(1, 1)
    for operation, action in (('certs_check', 'check'),
                              ('certs_renew', 'renewal')):
        ctx = op_helpers.context(op_helpers.sample_params('kubespray'),
                                 operation, 'modify_information_end')
        with pytest.raises(certificates.CertificatesRefused) as err:
            catalog.plan(ctx, run_mod.Facts(topology=topo))
        assert str(err.value).startswith(
            'Certificate %s refused, nothing was changed: the kubespray '
            'mode\'s certificates are kubespray\'s' % action)


def test_a_change_of_package_upgrades_with_the_same_phases():
    # v2's change_current_package_start runs the upgrade itself.
    topo = op_helpers.topology(1, 1)
    ctx = dataclasses.replace(
        op_helpers.context(op_helpers.sample_params('simple'), 'upgrade',
                           'change_current_package_start'),
        upgrade_target='1.36')
    titles = op_helpers.titles(catalog.plan(ctx, run_mod.Facts(
        topology=topo, ready=frozenset(['master-1', 'worker-1']))))
    assert titles == op_helpers.titles(walk('simple', 1, 1))


def test_the_rollback_of_a_change_of_package_only_reads():
    topo = op_helpers.topology(3, 1, vip='10.254.0.100')
    ctx = op_helpers.context(op_helpers.sample_params('complex'),
                             'upgrade_rollback',
                             'change_current_package_rollback_start')
    titles = op_helpers.titles(catalog.plan(ctx, run_mod.Facts(
        topology=topo, ready=frozenset(n.name for n in topo.all_nodes()))))
    assert titles[0] == 'Read the topology from Heat'
    assert titles[-2:] == ['Read the cluster\'s nodes and version',
                           'Check that the upgrade changed no node']
    # The kubespray mode never upgraded: nothing to check.
    ctx = op_helpers.context(op_helpers.sample_params('kubespray'),
                             'upgrade_rollback',
                             'change_current_package_rollback_start')
    assert catalog.plan(ctx, run_mod.Facts(topology=topo)) == []


@pytest.mark.parametrize('kubelets, cluster, recorded, words', [
    ({'master-1': 'v1.35.1', 'worker-1': 'v1.35.1'}, 'v1.35.1', '1.35.1',
     None),
    ({'master-1': 'v1.35.1', 'worker-1': 'v1.35.1'}, 'v1.35.1', '1.35',
     None),
    ({'master-1': 'v1.36.1', 'worker-1': 'v1.35.1'}, 'v1.36.1', '1.35.1',
     'master-1 runs 1.36.1, the control plane runs 1.36.1'),
    # A patch within the minor counts too.
    ({'master-1': 'v1.35.2', 'worker-1': 'v1.35.1'}, 'v1.35.1', '1.35.1',
     'master-1 runs 1.35.2 (the cluster ran 1.35.1 before)'),
])
def test_a_rollback_is_refused_once_any_node_moved(kubelets, cluster,
                                                   recorded, words):
    problem = upgrade_plan.rollback_problem(kubelets, cluster, recorded)
    if words is None:
        assert problem is None
    else:
        assert problem.startswith('Kubernetes cannot be downgraded, and ')
        assert words in problem and 'retry the operation' in problem


def test_a_whole_vnf_heal_keeps_the_version_the_cluster_ran(tmp_path):
    from k8s_mgmt.shared_phases import forget
    state = state_mod.InstanceState('inst-2')
    state.write(state_mod.CLUSTER, json.dumps({
        'kubernetes_version': '1.36.1', 'init_master_server_id': 'srv-1',
        'certificates': {'master-1': {}}}))
    ctx = op_helpers.context(op_helpers.sample_params('simple'), 'heal_vnf',
                             'heal_start')
    forget.forget_state(ctx, state)
    assert state.cluster_record() == {'kubernetes_version': '1.36.1'}
