"""The complex cluster through Tacker's v2 API (``/vnflcm/v2``), on the
lab's real Tacker with two conductors, one test per operation.

The README's "Through Tacker's v2 API" session runs line by line with
python-tackerclient (``--os-tacker-api-version 2``), one test per LCM call
of it: the v2 package built and onboarded, the v2 request made and
checked, instantiate, scale out, heal a worker, terminate, delete. Between
its calls, tests of their own, still through ``openstack vnflcm`` on the
same instance: Kubernetes upgraded one minor by a change to a package
naming 1.36 (``change-vnfpkg``) and the certificates renewed by a PATCH,
a probe of the VIP answering throughout both; scale in, heal a master, a
scale-out whose new VM's ``kubeadm join`` fails (FAILED_TEMP, our one line
in ``error.detail``) rolled back through v2's rollback, and a heal of the
whole VNF, and a heal of a worker that fails the same way given up
(``op fail``). The cluster is Ready after each change, no scale or heal
request carries a password (v2 keeps none of instantiate's
additionalParams: the driver's sealed ``metadata`` does), and once the
instance is deleted its Kubernetes VIM is gone too. The tests run in
order on one lab (``--dist loadfile`` keeps them on one worker); after a
failure the later ones are skipped, naming it.

Every other flavour through v2: test_through_tacker_v2_<flavour>.py.

Real: Tacker 16 (v2 conductor running the package's script, which runs
the installed driver), Heat, Keystone, Barbican, the message bus and the
database; the lab's VMs with OpenSSH, HAProxy, keepalived and etcd.
Stand-ins: Nova, Neutron, Cinder and Glance (the lab's), the Kubernetes
binaries.
"""

import datetime
import json
import os

import pytest

import readme_session
import tacker_checks
import tacker_flavours
import vip_probe
from lab_cli import LabCLI

k8s_mgmt = LabCLI('/var/lib/k8s-mgmt-lab-test-tacker-v2', bridge='k8slabv2',
                  tag='kv2t', timeout=1800)
SUBNET = '10.254.249.0/24'
V2 = readme_session.V2_FLAG + ' 2'
# What no scale or heal request may hold.
SECRET_WORDS = ('password', 'k8s_cluster_installation_param')


def _line(session, words):
    return session.substituted('openstack vnflcm %s %s' % (words, V2))


def _vnfc_of(session, vdu):
    """A vnfcInfo id (what a v2 heal names) of the VDU ``vdu``."""
    return [readme_session.norm(v)['id']
            for v in session.shown().get('vnfcInfo') or []
            if readme_session.norm(v)['vduid'] == vdu][0]


def _nodes(session):
    return sorted(session.cluster_ready())


def _probed(session, line):
    """The LCM call ``line`` with the VIP probed every 0.2 s; the probe."""
    with vip_probe.VipProbe(vip_probe.Readyz(
            tacker_checks.vip_url(k8s_mgmt))) as probe:
        session.lcm(line)
    print('%s: %d answers through the VIP, longest gap %.1f s'
          % (line.split()[2], probe.answers, probe.longest_gap))
    assert probe.answers > 10
    assert probe.longest_gap < 6.0, probe.failed_attempts()
    return probe


CERTIFICATES = '/etc/kubernetes/standin/certificates.json'
AGE = ('import json; p = %r; d = json.load(open(p)); '
       'd["apiserver"] = "%%s"; json.dump(d, open(p, "w"))' % CERTIFICATES)


@pytest.fixture(scope='module')
def steps(assert_lab_clean, tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('readme-v2'))
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', 'complex', '--subnet', SUBNET,
                 '--own-control-plane', '--conductors', '2', '--api', 'v2')
        status = json.loads(k8s_mgmt('status', '--json').stdout)
        yield readme_session.Steps(readme_session.V2Session(
            k8s_mgmt, workdir, status['tacker']['vim_id'],
            edit_request=tacker_flavours.operators_edits(
                k8s_mgmt, SUBNET, 'complex')))


session = readme_session.session_fixture()


def test_the_readme_v2_session_to_its_instantiate(steps, session):
    steps.next_call('instantiate')
    assert len(session.ready_nodes[-1]) == 4


def test_an_upgrade_by_change_vnfpkg_the_vip_answering(session):
    """Kubernetes one minor up by v2's Change Current VNF Package (a new
    package naming 1.36); Heat keeps every VM."""
    masters = sorted(readme_session.server_id(v) for v in session.vnfcs()
                     if v['vduid'] == 'masterNode')
    servers = sorted(readme_session.server_id(v) for v in session.vnfcs())
    before = set(tacker_checks.kubelets(k8s_mgmt, masters[0]).values())
    assert len(before) == 1 and before.pop().startswith('v1.35.')
    vnfd_id = session.onboard('--api v2 --kubernetes-version 1.36',
                              'k8s_mgmt_vnf_package_v2_k136.zip')
    with open(os.path.join(session.workdir, 'change.json'), 'w') as handle:
        json.dump({'vnfdId': vnfd_id, 'additionalParams': {
            'upgrade_type': 'RollingUpdate', 'vdu_params': []}}, handle)
    _probed(session, _line(session, 'change-vnfpkg VNF_INSTANCE_ID '
                                    'change.json'))
    assert set(tacker_checks.kubelets(k8s_mgmt, masters[0]).values()) == {
        'v1.36.1'}
    # Heat kept every VM; the instance names the new package.
    assert sorted(readme_session.server_id(v)
                  for v in session.vnfcs()) == servers
    shown = readme_session.openstack_json(
        k8s_mgmt, 'vnflcm', 'show', session.instance_id(),
        *session.api_args)
    assert shown['vnfdid'] == vnfd_id


def test_certificates_renewed_by_a_v2_patch_the_vip_answering(session):
    """Every master's API server certificate 10 days from expiry, then
    renewed by a PATCH of the metadata: a year again on every master."""
    masters = sorted(readme_session.server_id(v) for v in session.vnfcs()
                     if v['vduid'] == 'masterNode')
    now = datetime.datetime.now(datetime.timezone.utc)
    for master in masters:
        k8s_mgmt('exec', master, '--', 'python3', '-c', AGE % (
            now + datetime.timedelta(days=10)).isoformat())
    with open(os.path.join(session.workdir, 'renew.json'), 'w') as handle:
        json.dump({'metadata': {'k8sMgmtCertificates': 'renew'}}, handle)
    _probed(session, _line(session, 'update VNF_INSTANCE_ID --I renew.json'))
    for master in masters:
        dates = json.loads(k8s_mgmt('exec', master, '--', 'cat',
                                    CERTIFICATES).stdout)
        assert datetime.datetime.fromisoformat(dates['apiserver']) > \
            now + datetime.timedelta(days=364), (master, dates)
    shown = readme_session.openstack_json(
        k8s_mgmt, 'vnflcm', 'show', session.instance_id(),
        *session.api_args)
    metadata = next(value for key, value in shown.items()
                    if 'metadata' in key)
    assert 'k8sMgmtCertificates' not in metadata, metadata


def test_the_readme_v2_session_to_its_scale_out(steps, session):
    steps.next_call('scale')
    assert len(session.ready_nodes[-1]) == 5


def test_a_scale_in_through_v2(session):
    before = _nodes(session)
    session.lcm(_line(session, 'scale --type SCALE_IN --aspect-id '
                               'worker_instance VNF_INSTANCE_ID'))
    after = _nodes(session)
    assert len(after) == len(before) - 1 and set(after) < set(before)


def test_the_readme_v2_session_to_its_heal_of_a_worker(steps, session):
    steps.next_call('heal')
    assert len(session.ready_nodes[-1]) == 4


def test_a_heal_of_a_master_through_v2(session):
    masters = [n for n in _nodes(session) if n.startswith('master-')]
    master = _vnfc_of(session, 'masterNode')
    session.lcm(session.substituted(
        'openstack vnflcm heal %s --vnfc-instance %s -- VNF_INSTANCE_ID'
        % (V2, master)))
    healed = [n for n in _nodes(session) if n.startswith('master-')]
    assert len(healed) == len(masters) == 3
    assert master.split('-', 1)[1][:8] not in ' '.join(healed)


def test_a_failed_scale_out_rolled_back_through_v2(session):
    before = _nodes(session)
    k8s_mgmt('fault', '--new-vms', 'kubeadm-join')
    try:
        failed = session.lcm(_line(session, 'scale --type SCALE_OUT '
                                            '--aspect-id worker_instance '
                                            'VNF_INSTANCE_ID'),
                             expect='FAILED_TEMP')
    finally:
        k8s_mgmt('fault', '--new-vms', 'kubeadm-join', '--clear')
    detail = readme_session.openstack_json(
        k8s_mgmt, 'vnflcm', 'op', 'show', failed['id'],
        *session.api_args)['error']['detail']
    # Tacker's words, then our one line: the node and the step.
    assert 'scale_end failed' in detail and 'join' in detail, detail
    assert 'Traceback' not in detail
    session.bash('openstack vnflcm op rollback %s %s' % (failed['id'], V2))
    session._until(
        lambda: readme_session.openstack_json(
            k8s_mgmt, 'vnflcm', 'op', 'show', failed['id'],
            *session.api_args),
        lambda op: op['operationstate'] in ('ROLLED_BACK', 'FAILED_TEMP'))
    state = readme_session.openstack_json(
        k8s_mgmt, 'vnflcm', 'op', 'show', failed['id'],
        *session.api_args)['operationstate']
    assert state == 'ROLLED_BACK'
    assert _nodes(session) == before


def test_a_heal_of_the_whole_vnf_through_v2(session):
    before = len(_nodes(session))
    session.lcm(_line(session, 'heal VNF_INSTANCE_ID'))
    assert len(_nodes(session)) == before
    vims = [v for v in readme_session.openstack_json(k8s_mgmt, 'vim', 'list')
            if v['type'] == 'kubernetes']
    assert len(vims) == 1, vims


def test_a_failed_heal_of_a_worker_given_up_through_v2(session):
    """A worker's heal whose new VM's ``kubeadm join`` fails: FAILED_TEMP
    with our one line, then given up with ``op fail`` (FAILED), as an
    operator who will not retry it does."""
    worker = _vnfc_of(session, 'workerNode')
    k8s_mgmt('fault', '--new-vms', 'kubeadm-join')
    try:
        failed = session.lcm(session.substituted(
            'openstack vnflcm heal %s --vnfc-instance %s -- VNF_INSTANCE_ID'
            % (V2, worker)), expect='FAILED_TEMP')
    finally:
        k8s_mgmt('fault', '--new-vms', 'kubeadm-join', '--clear')
    detail = readme_session.openstack_json(
        k8s_mgmt, 'vnflcm', 'op', 'show', failed['id'],
        *session.api_args)['error']['detail']
    assert 'heal_end failed' in detail and 'join' in detail, detail
    assert 'Traceback' not in detail
    session.bash('openstack vnflcm op fail %s %s' % (failed['id'], V2))
    assert readme_session.openstack_json(
        k8s_mgmt, 'vnflcm', 'op', 'show', failed['id'],
        *session.api_args)['operationstate'] == 'FAILED'


def test_no_scale_or_heal_resent_a_password_and_every_node_upgraded(
        session):
    """Every scale and heal of the instance as Tacker keeps it
    (``operationParams``, readable by any API user): no cluster
    parameter, no password. The nodes the scale-out and the heals
    brought, the whole VNF's rebuild included, run the upgrade's
    version (the nodes that did join: the failed heal's did not)."""
    ops = [o for o in session.operations()
           if o['operation'] in ('SCALE', 'HEAL')]
    assert len(ops) >= 5, ops
    for op in ops:
        shown = readme_session.openstack_json(
            k8s_mgmt, 'vnflcm', 'op', 'show', op['id'], *session.api_args)
        text = json.dumps(shown.get('operationparams')).lower()
        assert not [w for w in SECRET_WORDS if w in text], (op, text)
    master = [readme_session.server_id(v) for v in session.vnfcs()
              if v['vduid'] == 'masterNode'][0]
    assert set(tacker_checks.kubelets(k8s_mgmt, master).values()) == {
        'v1.36.1'}


def test_the_readme_v2_session_to_its_end(steps, session):
    """Terminate, then the lines after it (the instance deleted): no
    instance, and no VIM but the default one."""
    steps.next_call('terminate')
    steps.finish()
    # Each README call left a Ready cluster: 3 masters and 1 worker at
    # instantiate, 2 after the scale-out, back to 1 after the heal.
    assert [len(nodes) for nodes in session.ready_nodes] == [4, 5, 4]
    assert not json.loads(k8s_mgmt(
        'openstack', 'vnflcm', 'list', readme_session.V2_FLAG, '2',
        '-f', 'json').stdout)
    vims = readme_session.openstack_json(k8s_mgmt, 'vim', 'list')
    assert [v['type'] for v in vims] == ['openstack'], vims
