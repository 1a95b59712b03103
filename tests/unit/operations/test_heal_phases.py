"""The heal operations' phases, walked without connecting."""

import pytest

from k8s_mgmt.shared_phases import heal_plan

import op_helpers


def _heal(flavour, topo, hook, targets, ready=None, **facts):
    params = op_helpers.sample_params(flavour)
    names = {n.name for n in topo.all_nodes()}
    if ready is None:
        # heal_start: every node is in the cluster; heal_end: the
        # replacements are not yet.
        ready = names if hook == 'heal_start' else names - {
            t.name for t in targets}
    request = {'vnfc_instance_id': [t.vnfc_id for t in targets]}
    return op_helpers.plan(params, topo, 'heal_vnfc', hook, ready=ready,
                           request=request, **facts)


def test_heal_start_of_a_worker_drains_it_through_the_master():
    topo = op_helpers.topology(1, 2)
    walked = _heal('simple', topo, 'heal_start', [topo.workers[0]])
    # The plan shows the way through a master: the registered VIM's
    # credentials, when the API takes them, make it unneeded.
    assert op_helpers.titles(walked) == [
        'Read the topology from Heat',
        'Check the registered VIM\'s credentials', 'Probe the other masters',
        'Read the API credentials through master-1',
        'Probe the workers to heal', 'Read the cluster\'s nodes',
        'Remove worker-1', 'Forget the healed VMs\' host keys',
        'Keep the sessions to master-1 for heal_end']
    # A live worker's kubelet is stopped before its Node goes (it would
    # register the Node again); a dead one has none running.
    live = op_helpers.phase(walked, 'Remove worker-1')
    assert [(w.node, w.text) for w in live.work[1:]] == [
        ('worker-1', 'sudo -n -- systemctl stop kubelet')]
    unreachable = _heal('simple', topo, 'heal_start', [topo.workers[0]],
                        unreachable={'worker-1'})
    remove = op_helpers.phase(unreachable, 'Remove worker-1')
    assert 'the node does not answer' in remove.work[0].text
    assert len(remove.work) == 1


def test_heal_end_of_a_worker_joins_and_labels_the_replacement():
    topo = op_helpers.topology(1, 2)
    walked = _heal('simple', topo, 'heal_end', [topo.workers[1]])
    assert op_helpers.titles(walked) == [
        'Read the topology from Heat', 'Reuse the sessions heal_start kept',
        'Probe the other masters',
        'Read the API credentials through master-1',
        'Connect to master-1, worker-2',
        'Upload the scripts and prepare the workers',
        'Read the cluster\'s nodes', 'Remove leftover nodes',
        'Read join data', 'Wait until the workers are prepared',
        'Join workers', 'Wait until the healed nodes are Ready',
        'Label workers', 'Find worker VMs that are no node']
    # The replacement gets ready while the master side works.
    early = op_helpers.phase(walked,
                             'Upload the scripts and prepare the workers')
    assert early.background
    assert [c.argv[0] for c in op_helpers.calls(early)] == ['prepare']
    join = op_helpers.phase(walked, 'Join workers')
    assert [c.node for c in op_helpers.calls(join)] == ['worker-2']


def test_heal_end_joins_a_worker_heat_added_beside_the_heal():
    """Tacker 16 may have Heat build one more worker than before (its
    scale level is one step high after a rolled back scale-out): heal_end
    joins it too, so the cluster matches the stack."""
    topo = op_helpers.topology(1, 2)
    names = {n.name for n in topo.all_nodes()}
    walked = _heal('simple', topo, 'heal_end', [topo.workers[1]],
                   ready=names - {'worker-1', 'worker-2'})
    titles = op_helpers.titles(walked)
    strays = titles.index('Find worker VMs that are no node')
    assert titles[strays + 1:] == [
        'Connect to master-1, worker-1',
        'Upload the scripts and prepare the workers',
        'Read the cluster\'s nodes', 'Remove leftover nodes',
        'Read join data', 'Wait until the workers are prepared',
        'Join workers', 'Wait until the healed nodes are Ready',
        'Label workers']
    joins = [p for p in walked if p.title == 'Join workers']
    assert [[c.node for c in op_helpers.calls(j)] for j in joins] == [
        ['worker-2'], ['worker-1']]


def test_heal_start_of_a_master_keeps_etcd_and_the_vip():
    topo = op_helpers.topology(3, 1, vip='10.254.0.100')
    walked = _heal('complex', topo, 'heal_start', [topo.masters[1]])
    assert op_helpers.titles(walked) == [
        'Read the topology from Heat', 'Probe the other masters',
        'Read etcd members and health on master-1',
        'Probe the masters to heal',
        'Read the API credentials through master-1',
        'Find the VIP on master-2',
        'Hand the VIP over from master-2',
        'Read the cluster network\'s prefix on master-1',
        'Take master-2 out of HAProxy', 'Read the cluster\'s nodes',
        'Remove master-2', 'Wait until master-2 is out of HAProxy',
        'Remove etcd member master-2',
        'Forget the healed VMs\' host keys',
        'Keep the sessions to master-1, master-3 for heal_end']
    remove = op_helpers.phase(walked, 'Remove master-2')
    assert [(w.node, w.text) for w in remove.work[1:]] == [
        ('master-2', 'sudo -n -- systemctl stop kubelet')]
    lb = op_helpers.phase(walked, 'Take master-2 out of HAProxy')
    assert lb.nodes == ('master-1', 'master-3')
    # In the background while the Node goes; waited for before the etcd
    # member goes.
    assert lb.background
    for call in op_helpers.calls(lb):
        argv = dict(zip(call.argv[::2], call.argv[1::2]))
        assert argv['-b'] == 'master-1=10.254.0.11,master-3=10.254.0.13'


def test_heal_start_of_a_dead_master_does_not_hand_the_vip_over():
    topo = op_helpers.topology(3, 1, vip='10.254.0.100')
    walked = _heal('complex', topo, 'heal_start', [topo.masters[0]],
                   unreachable={'master-1'})
    titles = op_helpers.titles(walked)
    assert 'Hand the VIP over from master-1' not in titles
    # The helper is the next master; etcd is read through it.
    assert 'Read etcd members and health on master-2' in titles


def test_heal_end_of_a_master_joins_it_and_restores_every_backend():
    topo = op_helpers.topology(3, 1, vip='10.254.0.100')
    walked = _heal('complex', topo, 'heal_end', [topo.masters[2]])
    assert op_helpers.titles(walked) == [
        'Read the topology from Heat', 'Reuse the sessions heal_start kept',
        'Probe the other masters',
        'Connect to master-1, master-3',
        'Upload the scripts and prepare the healed masters',
        'Upload the scripts', 'Read join data (in the background)',
        'Read etcd members and health on master-1',
        'Read the API credentials through master-1',
        'Read the cluster\'s nodes',
        'Read the cluster network\'s prefix on master-1',
        'Wait for the join data',
        'Wait until the healed masters are prepared',
        'Configure the load balancer on master-3 while it joins',
        'Join master master-3', 'Wait until the healed nodes are Ready',
        'Put master-3 behind HAProxy on the other masters',
        'Wait for the load balancer on master-3',
        'Find worker VMs that are no node']
    # The replacement gets ready while etcd is read and print-join runs;
    # the scripts go to the masters that stay.
    early = op_helpers.phase(
        walked, 'Upload the scripts and prepare the healed masters')
    assert early.background and early.nodes == ('master-3',)
    assert [c.argv[0] for c in op_helpers.calls(early)] == ['prepare']
    upload = op_helpers.phase(walked, 'Upload the scripts')
    assert upload.nodes == ('master-1', 'master-2')
    # print-join on the helper while etcd and the API are read.
    early = op_helpers.phase(walked, 'Read join data (in the background)')
    assert early.background and early.nodes == ('master-1',)
    call, = op_helpers.calls(early)
    assert call.argv[0] == 'print-join' and '-A' in call.argv
    # master-3's own HAProxy and keepalived during its join (nothing
    # reaches them: the VIP stays put), every backend in them.
    own = op_helpers.phase(
        walked, 'Configure the load balancer on master-3 while it joins')
    assert own.background and own.nodes == ('master-3',)
    others = op_helpers.phase(
        walked, 'Put master-3 behind HAProxy on the other masters')
    assert others.nodes == ('master-1', 'master-2')
    for call in op_helpers.calls(own) + op_helpers.calls(others):
        argv = dict(zip(call.argv[::2], call.argv[1::2]))
        assert argv['-b'].count('=') == 3, argv['-b']
    # The others only once master-3 runs: a reloaded HAProxy would send
    # requests to it before its first check.
    assert not others.background


def test_heal_refusals_come_before_any_phase_runs():
    topo = op_helpers.topology(1, 1)
    with pytest.raises(heal_plan.HealRefused, match='only master'):
        _heal('simple', topo, 'heal_start', [topo.masters[0]])
