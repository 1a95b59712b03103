"""Upgrade decisions from what was read: every refusal in its words
before anything changes, the order of the nodes (the VIP holder last,
workers in batches), and where a stopped upgrade resumes."""

import pytest

from k8s_mgmt.kube import etcd
from k8s_mgmt.kube_versions import Version
from k8s_mgmt.shared_phases import upgrade_plan as up
from k8s_mgmt.shared_phases.upgrade_plan import NodeCheck

OLD, NEW = Version(35, 2), Version(36, 1)
OFFERED = (Version(36, 0), Version(36, 1))
MASTERS = ('master-1', 'master-2', 'master-3')


def checks(masters=3, workers=2, **per_node):
    """NodeChecks of a cluster at OLD, every node Ready; ``per_node``:
    {name: {field: value}}."""
    found = []
    for role, count in (('master', masters), ('worker', workers)):
        for index in range(1, count + 1):
            name = '%s-%d' % (role, index)
            fields = dict(kubelet=OLD, offered=OFFERED, ready=True,
                          control_plane=OLD if role == 'master' else None)
            fields.update(per_node.get(name, {}))
            found.append(NodeCheck(name, role, **fields))
    return found


def members(names=MASTERS):
    return tuple(etcd.Member(i + 1, name, ('https://10.0.0.%d:2380' % i,),
                             ('https://10.0.0.%d:2379' % i,))
                 for i, name in enumerate(names))


def health(found, sick=()):
    return {m.client_urls[0]: m.name not in sick for m in found}


def decide(found=None, target=Version(36), cluster=OLD, etcd_members=None,
           sick=(), **kwargs):
    found = checks() if found is None else found
    etcd_members = members() if etcd_members is None else etcd_members
    return up.decide(target, found, cluster, etcd_members,
                     health(etcd_members, sick), **kwargs)


def refusal(**kwargs):
    with pytest.raises(up.UpgradeRefused) as err:
        decide(**kwargs)
    text = str(err.value)
    assert text.startswith('Upgrade refused, nothing was changed: ')
    return text


def test_a_minor_becomes_its_newest_offered_patch_and_the_holder_is_last():
    plan = decide(holder='master-1', max_unavailable=1)
    assert plan.target == NEW and plan.current == OLD
    assert [(s.name, s.state, s.apply) for s in plan.masters] == [
        ('master-2', up.TODO, True), ('master-3', up.TODO, False),
        ('master-1', up.TODO, False)]
    assert [[s.name for s in b] for b in plan.batches] == [
        ['worker-1'], ['worker-2']]
    assert plan.apply_on == 'master-2' and not plan.nothing_to_do


@pytest.mark.parametrize('size, expected', [
    (1, [[1], [2], [3], [4], [5]]), (2, [[1, 2], [3, 4], [5]]),
    (5, [[1, 2, 3, 4, 5]]), (9, [[1, 2, 3, 4, 5]]),
    (0, [[1], [2], [3], [4], [5]])])
def test_workers_go_in_batches(size, expected):
    assert [list(b) for b in up.batches([1, 2, 3, 4, 5], size)] == expected


def test_every_refusal_names_its_reason_first_failing_row_wins():
    text = refusal(supported_minors=range(30, 36))
    assert text.endswith('Kubernetes 1.36 is not supported by the VNF '
                         'package\'s install_k8s_cluster.sh (supported: '
                         '1.30 to 1.35)')
    text = refusal(found=checks(**{
        'worker-2': {'ready': False}, 'master-3': {'in_cluster': False}}))
    assert text.endswith('every node must be Ready first: master-3 is no '
                         'node of the cluster, worker-2 is NotReady')
    text = refusal(etcd_members=members(MASTERS[:2]))
    assert text.endswith('etcd needs one healthy member per master first: '
                         '2 member(s) for 3 masters (master-3 has none)')
    text = refusal(sick=('master-2',))
    assert text.endswith('3 member(s) for 3 masters; unhealthy: master-2')
    text = refusal(target=Version(37, 0), found=checks(**{
        name: {'offered': (Version(37, 0),)} for name in MASTERS}))
    assert 'the cluster runs 1.35.2; 1.37.0 skips 1.36' in text
    text = refusal(target=Version(35, 1), cluster=OLD, found=checks(**{
        name: {'offered': (Version(35, 1),)} for name in MASTERS}))
    assert 'the cluster runs 1.35.2; 1.35.1 is older' in text
    text = refusal(found=checks(**{'worker-1': {'kubelet': Version(32, 4)}}))
    assert "worker-1's kubelet 1.32.4 would be 4 minors behind 1.36" in text
    text = refusal(found=checks(**{'worker-2': {'offered': (Version(36),
                                                            )}}))
    assert text.endswith('worker-2 cannot get kubeadm 1.36.1 from its '
                         'Kubernetes repository (it offers 1.36): check '
                         'kubernetes_apt_repository and the node\'s proxy')
    text = refusal(found=checks(**{'master-1': {
        'offered': (), 'apt_error': 'E: Unable to locate package kubeadm'}}))
    assert text.endswith('master-1 cannot read the Kubernetes 1.36 '
                         'packages: E: Unable to locate package kubeadm')
    text = refusal(expired={'master-2': ('apiserver', '2026-05-01')})
    assert text.endswith("master-2's certificate apiserver expired on "
                         "2026-05-01: renew the certificates first "
                         "(metadata k8sMgmtCertificates: renew)")


def test_a_single_master_needs_no_etcd_quorum_check():
    plan = decide(found=checks(masters=1, workers=1), etcd_members=())
    assert [s.name for s in plan.steps] == ['master-1', 'worker-1']


def test_a_stopped_upgrade_resumes_where_it_stopped():
    # master-2 was applied and upgraded, master-3 upgraded and still
    # cordoned with the mark; master-1 and the workers are left.
    found = checks(**{
        'master-2': {'kubelet': NEW, 'control_plane': NEW},
        'master-3': {'kubelet': NEW, 'control_plane': NEW, 'marked': True}})
    plan = decide(found=found, cluster=NEW, holder='master-1')
    assert [(s.name, s.state, s.apply) for s in plan.masters] == [
        ('master-2', up.DONE, False), ('master-3', up.UNCORDON, False),
        ('master-1', up.TODO, False)]
    # kubeadm-config names the target: no master applies again.
    assert plan.apply_on is None
    # An apply that failed half-way (kubeadm-config still old) runs again
    # on the first master left.
    plan = decide(found=found, cluster=OLD, holder='master-1')
    assert plan.apply_on == 'master-1'
    assert up.done_and_left(plan, 'master-1') == (
        'master-2, master-3', 'master-1, worker-1, worker-2')


def test_a_cluster_at_the_target_has_nothing_to_do():
    found = [NodeCheck(c.name, c.role, kubelet=NEW,
                       control_plane=NEW if c.role == 'master' else None,
                       offered=OFFERED, ready=True) for c in checks()]
    plan = decide(found=found, cluster=NEW)
    assert plan.nothing_to_do and plan.apply_on is None


def test_node_state_reads_kubelet_control_plane_and_mark():
    master = NodeCheck('m', 'master', kubelet=NEW, control_plane=OLD)
    assert up.node_state(master, NEW) == up.TODO
    worker = NodeCheck('w', 'worker', kubelet=NEW, marked=True)
    assert up.node_state(worker, NEW) == up.UNCORDON
    assert up.node_state(NodeCheck('w', 'worker'), NEW) == up.TODO


def test_the_stopped_error_says_where_and_how_to_resume():
    err = up.UpgradeStopped(target='1.36.1', node='master-3',
                            step='Upgrade the control plane on master-3',
                            reason='kubeadm exited 1', done='master-2',
                            left='master-3, master-1')
    assert str(err) == (
        'Upgrade to 1.36.1 stopped at master-3 (Upgrade the control plane '
        'on master-3): kubeadm exited 1. Done: master-2; left: master-3, '
        'master-1. Run the upgrade again to resume at master-3')
