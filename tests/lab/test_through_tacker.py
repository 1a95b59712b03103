"""Every LCM operation of the complex flavour through the lab's real Tacker,
on two conductors.

The lab has a control plane of its own: MariaDB, RabbitMQ, Keystone, Heat,
Barbican, tacker-server and two tacker-conductors (16.0.0, from PyPI), each
with our driver installed from a wheel and a driver state directory of its
own, as on two hosts. ``k8s-mgmt lab
instantiate|scale|heal|terminate|rollback`` call Tacker's v1 REST API;
what Tacker says is read back the operator's way, with python-tackerclient
(``openstack vnflcm show``, ``openstack vnflcm op show``), and the cluster
from inside a master VM. The operations run in order on one lab, as an
operator would run them, each on whichever conductor takes it: after every
one, exactly one master holds the VIP and every pinned host key was
verified against its VM's console. The README's session runs them again
(with the first conductor's state directory deleted before each) in
test_through_tacker_readme.py.

Real: Tacker, Heat, Keystone, Barbican, the message bus and the database;
the lab's VMs with OpenSSH, HAProxy, keepalived and etcd. Stand-ins: Nova,
Neutron, Cinder and Glance (the lab's), the Kubernetes binaries.
"""

import datetime
import json
import os
import re
import time

import pytest

from k8s_mgmt.polling import Poll
import readme_session
import tacker_checks
import vip_probe
from lab_cli import LabCLI

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-tacker'
k8s_mgmt = LabCLI(STATE_DIR, bridge='k8slabtt', tag='ktt', timeout=1800)
SUBNET = '10.254.251.0/24'
# Where each conductor's log ended when the module's lab came up.
LOG_MARKS = {}


@pytest.fixture(scope='module')
def lab(assert_lab_clean):
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', 'complex', '--subnet', SUBNET,
                 '--own-control-plane', '--conductors', '2')
        LOG_MARKS.update(tacker_checks.log_marks(k8s_mgmt))
        yield k8s_mgmt


def _run(*args):
    return json.loads(k8s_mgmt(*(args + ('--json',))).stdout)


def _openstack(*words):
    """python-tackerclient's answer as JSON, keys normalised
    ("Operation State" -> "operationstate")."""
    return readme_session.openstack_json(k8s_mgmt, *words)


def _op(op_id):
    return _openstack('vnflcm', 'op', 'show', op_id)


def _params(occurrence):
    """The occurrence's request as Tacker keeps it (its keys as Tacker
    stores them, camelCase or snake_case, normalised; additionalParams'
    own keys as sent)."""
    params = occurrence['operationparameters']
    params = json.loads(params) if isinstance(params, str) else params
    return readme_session.norm(params)


def _status():
    return json.loads(k8s_mgmt('status', '--json').stdout)


def _cluster_nodes(status):
    """{node name: Ready} as the API server inside a master reports."""
    master = next(vm for vm in status['vms'] if vm['role'] == 'master')
    return readme_session.nodes_ready(k8s_mgmt, master['server_id'])


def _roles(status):
    found = {}
    for vm in status['vms']:
        found[vm['role']] = found.get(vm['role'], 0) + 1
    return found


def _assert_done(report, operation, workers=None):
    """Tacker (through its CLI), the lab's Heat and the cluster agree:
    every VM of the stack a Ready node, three masters, ``workers`` workers
    when given, each a VNFC Tacker lists.

    Without ``workers`` Heat may have one worker Tacker does not list:
    after a rolled-back scale-out Tacker 16's scale level is one step high,
    and its heal of a VNFC has Heat build the group to that level while it
    lists only the VNFCs it healed; the driver joins the extra VM."""
    assert report['operation_state'] == 'COMPLETED', report
    occurrence = _op(report['op_occ_id'])
    assert (occurrence['operation'], occurrence['operationstate']) == (
        operation, 'COMPLETED'), occurrence
    shown = _openstack('vnflcm', 'show', report['vnf_instance_id'])
    assert shown['instantiationstate'] == 'INSTANTIATED'
    status = _status()
    tackers = {v['vdu_id'] for v in report['vnfcs']}
    assert tackers == {'masterNode', 'workerNode'}
    listed = sum(1 for v in report['vnfcs'] if v['vdu_id'] == 'workerNode')
    roles = _roles(status)
    assert roles['master'] == 3 and roles['worker'] >= listed, (roles,
                                                                listed)
    if workers is not None:
        assert roles['worker'] == listed == workers, (roles, listed)
    nodes = _cluster_nodes(status)
    assert set(nodes) == {vm['name'] for vm in status['vms']}
    assert all(nodes.values()), nodes
    tacker_checks.one_vip_and_verified_pins(
        k8s_mgmt, SUBNET,
        [vm['server_id'] for vm in status['vms'] if vm['role'] == 'master'],
        report['vnf_instance_id'])
    return status


def _workers(status):
    return {vm['name'] for vm in status['vms'] if vm['role'] == 'worker'}


def test_instantiate_through_tacker(lab):
    status = _status()
    assert status['tacker']['vim_id'] and not status['vms']
    # The default VIM, as the operator lists it.
    vims = _openstack('vim', 'list')
    assert [v['id'] for v in vims if v['isdefault'] in (True, 'True')] == [
        status['tacker']['vim_id']]
    report = _run('instantiate')
    status = _assert_done(report, 'INSTANTIATE', 1)
    inst_id = report['vnf_instance_id']
    # Tacker's stack and Tacker's VNFC ids, as the lab now shows them.
    assert status['heat']['stack_name'] == 'vnflcm_%s' % inst_id
    assert {vm['server_id']: vm['vnfc_id'] for vm in status['vms']} == {
        v['server']: v['id'] for v in report['vnfcs']}
    assert [i['id'] for i in status['tacker']['instances']] == [inst_id]
    # What a later operation needs, in Tacker's database for any conductor:
    # sealed, the VRRP password not in what an API reader sees.
    shown = _openstack('vnflcm', 'show', inst_id)
    assert shown['metadata']['k8sMgmtState'].startswith('v1.')
    master = _vnfc_of(status, 'master')['server_id']
    keepalived = k8s_mgmt('exec', master, '--', 'cat',
                          '/etc/keepalived/keepalived.conf').stdout
    password = re.search(r'auth_pass\s+(\S+)', keepalived).group(1)
    assert password not in json.dumps(shown)


# -- day two by the operator's PATCH (openstack vnflcm update --I) -------

ENDED = ('COMPLETED', 'FAILED_TEMP', 'FAILED', 'ROLLED_BACK')


def _patched(tmp_path, name, metadata):
    """``openstack vnflcm update INSTANCE --I NAME.json`` with
    ``metadata``: the one new MODIFY_INFO occurrence, followed with ``op
    list`` until it ended, as ``op show`` then shows it (Tacker 16 itself
    answers 500 there for every MODIFY_INFO: tacker_modify_info)."""
    inst_id = _status()['tacker']['vnf_instance_id']
    known = {o['id'] for o in _openstack('vnflcm', 'op', 'list')}
    path = tmp_path / ('%s.json' % name)
    path.write_text(json.dumps({'metadata': metadata}))
    k8s_mgmt('openstack', 'vnflcm', 'update', inst_id, '--I', str(path))
    tacker = readme_session.tacker_api(k8s_mgmt)
    for _ in Poll(900, first=1.0, maximum=5.0):
        # Polled through the API op list reads, from this process; then
        # seen as the operator sees it.
        polled = [readme_session.norm(o) for o in tacker.op_occs.list()
                  if o['id'] not in known]
        if polled and all(o['operationstate'] in ENDED for o in polled):
            new = [o for o in _openstack('vnflcm', 'op', 'list')
                   if o['id'] not in known]
            assert [(o['id'], o['operationstate']) for o in new] == [
                (o['id'], o['operationstate']) for o in polled], new
            assert [o['operation'] for o in new] == ['MODIFY_INFO'], new
            shown = _op(new[0]['id'])
            assert shown['operationstate'] == new[0]['operationstate']
            assert _params(shown) == {'metadata': metadata}, shown
            return shown
    raise AssertionError('%s: no MODIFY_INFO ended in 900 s' % name)


def _kubelets():
    return tacker_checks.kubelets(k8s_mgmt,
                                  _vnfc_of(_status(), 'master')['server_id'])


def _metadata():
    return _openstack('vnflcm', 'show', _status()['tacker'][
        'vnf_instance_id'])['metadata']


def test_a_patch_that_skips_a_minor_is_refused_and_given_up(lab, tmp_path):
    """The cluster at 1.35; a PATCH asking for 1.37 ends FAILED_TEMP with
    our one line, nothing changed; Tacker 16 neither retries nor rolls back
    a MODIFY_INFO; ``op fail`` gives it up."""
    before = _kubelets()
    assert {v.rsplit('.', 1)[0] for v in before.values()} == {'v1.35'}
    refused = _patched(tmp_path, 'skip', {'k8sMgmtUpgrade': '1.37'})
    assert refused['operationstate'] == 'FAILED_TEMP', refused
    detail = refused['error']['detail']
    assert detail.startswith('Upgrade refused, nothing was changed'), detail
    assert 'skips 1.36' in detail, detail
    assert '\n' not in detail.strip() and 'Traceback' not in detail
    assert _kubelets() == before
    op_id = refused['id']
    # Tacker 16's answers (its docs list a retry of Modify; its code has
    # none): the occurrence stays FAILED_TEMP.
    retry = k8s_mgmt('openstack', 'vnflcm', 'op', 'retry', op_id,
                     check=False)
    assert retry.returncode != 0 and 'MODIFY_INFO' in retry.stderr, retry
    rollback = k8s_mgmt('openstack', 'vnflcm', 'op', 'rollback', op_id,
                        check=False)
    assert rollback.returncode != 0, rollback
    assert 'INSTANTIATE/SCALE' in rollback.stderr, rollback.stderr
    assert _op(op_id)['operationstate'] == 'FAILED_TEMP'
    k8s_mgmt('openstack', 'vnflcm', 'op', 'fail', op_id)
    assert _op(op_id)['operationstate'] == 'FAILED'
    # The refused value stays in the metadata until a PATCH replaces it.
    assert _metadata()['k8sMgmtUpgrade'] == '1.37'


def test_an_upgrade_by_the_operators_patch_the_vip_answering(
        lab, tmp_path):
    """The same key, now one minor up: every kubelet at 1.36, the key
    gone, /readyz through the VIP answering throughout."""
    with vip_probe.VipProbe(vip_probe.Readyz(
            tacker_checks.vip_url(k8s_mgmt))) as probe:
        done = _patched(tmp_path, 'upgrade', {'k8sMgmtUpgrade': '1.36'})
    assert done['operationstate'] == 'COMPLETED', done
    print('upgrade by PATCH: %d answers through the VIP, longest gap %.1f s'
          % (probe.answers, probe.longest_gap))
    assert probe.answers > 10
    assert probe.longest_gap < 6.0, probe.failed_attempts()
    assert set(_kubelets().values()) == {'v1.36.1'}
    assert 'k8sMgmtUpgrade' not in _metadata()


CERTIFICATES = '/etc/kubernetes/standin/certificates.json'
AGE = ('import json; p = %r; d = json.load(open(p)); '
       'd["apiserver"] = "%%s"; json.dump(d, open(p, "w"))' % CERTIFICATES)


def test_certificates_renewed_by_the_operators_patch(lab, tmp_path):
    """Every master's API server certificate 10 days from expiry, then a
    year again after the PATCH."""
    masters = [vm['server_id'] for vm in _status()['vms']
               if vm['role'] == 'master']
    now = datetime.datetime.now(datetime.timezone.utc)
    for master in masters:
        k8s_mgmt('exec', master, '--', 'python3', '-c', AGE % (
            now + datetime.timedelta(days=10)).isoformat())
    done = _patched(tmp_path, 'renew', {'k8sMgmtCertificates': 'renew'})
    assert done['operationstate'] == 'COMPLETED', done
    assert 'k8sMgmtCertificates' not in _metadata()
    for master in masters:
        dates = json.loads(k8s_mgmt('exec', master, '--', 'cat',
                                    CERTIFICATES).stdout)
        assert datetime.datetime.fromisoformat(dates['apiserver']) > \
            now + datetime.timedelta(days=364), (master, dates)


def test_the_labs_day_two_verbs_patch_through_tacker(lab, tmp_path):
    """``lab certs check`` and ``lab upgrade`` PATCH through Tacker's API
    and report the occurrence's end: COMPLETED with the cluster, or
    FAILED_TEMP in one line naming the way on (``lab fail``, then the
    change again: here a PATCH removing the refused key)."""
    report = _run('certs', 'check')
    assert (report['operation'], report['operation_state']) == (
        'modify', 'COMPLETED'), report
    assert all(n['ready'] for n in report['cluster']['nodes'])
    occurrence = _op(report['op_occ_id'])
    assert (occurrence['operation'], occurrence['operationstate']) == (
        'MODIFY_INFO', 'COMPLETED')
    refused = k8s_mgmt('upgrade', '--to', '1.35', check=False)
    assert refused.returncode == 1, refused
    line = refused.stderr.strip().splitlines()[-1]
    assert 'FAILED_TEMP' in line and 'lab fail' in line, line
    assert 'Upgrade refused, nothing was changed' in line, line
    op_id = _status()['tacker']['last_op']['id']
    assert op_id in line
    failed = _run('fail')
    assert failed['operation_state'] == 'FAILED', failed
    cleared = _patched(tmp_path, 'clear', {'k8sMgmtUpgrade': None})
    assert cleared['operationstate'] == 'COMPLETED', cleared
    assert 'k8sMgmtUpgrade' not in _metadata()
    assert set(_kubelets().values()) == {'v1.36.1'}


def test_a_failed_scale_out_is_rolled_back_through_tackers_api(lab):
    before = _workers(_status())
    k8s_mgmt('fault', '--new-vms', 'kubeadm-join')
    try:
        failed = k8s_mgmt('scale', '--type', 'SCALE_OUT', check=False)
    finally:
        k8s_mgmt('fault', '--new-vms', 'kubeadm-join', '--clear')
    assert failed.returncode == 1
    line = failed.stderr.strip().splitlines()[-1]
    assert 'FAILED_TEMP' in line and 'lab rollback' in line, failed.stderr
    op_id = _status()['tacker']['last_op']['id']
    assert op_id in line
    occurrence = _op(op_id)
    assert occurrence['operationstate'] == 'FAILED_TEMP'
    detail = occurrence['error']['detail']
    # Our one line: the node and the step, no traceback, no secret.
    assert 'join' in detail, detail
    assert 'Traceback' not in detail and '\n' not in detail.strip()
    report = _run('rollback')
    assert report['operation_state'] == 'ROLLED_BACK'
    assert _op(op_id)['operationstate'] == 'ROLLED_BACK'
    status = _status()
    assert _workers(status) == before
    nodes = _cluster_nodes(status)
    assert set(nodes) >= before and all(nodes[w] for w in before)


def test_scale_out_and_in_through_tacker(lab):
    before = _workers(_status())
    out = _run('scale', '--type', 'SCALE_OUT')
    grown = _workers(_assert_done(out, 'SCALE', 2))
    assert grown > before
    scale_in = _run('scale', '--type', 'SCALE_IN', '--force-drain')
    shrunk = _workers(_assert_done(scale_in, 'SCALE', 1))
    assert shrunk < grown
    # The option reached Tacker as the request's additionalParams.
    params = _params(_op(scale_in['op_occ_id']))
    # (Tacker adds is_reverse and is_auto of its own.)
    assert params['additionalparams']['force_drain'] is True, params


def _vnfc_of(status, role):
    return next(vm for vm in status['vms'] if vm['role'] == role)


def _heal_vnfc(role):
    """Heal one VNFC by Tacker's id: same VNFC, a new server. (After the
    rolled-back scale-out above, Tacker's scale level is one step high and
    its heal has Heat build one more worker: the driver joins it, so the
    count follows Tacker's VNFCs.)"""
    before = _vnfc_of(_status(), role)
    report = _run('heal', '--vnfc', before['vnfc_id'])
    status = _assert_done(report, 'HEAL')
    healed = next(vm for vm in status['vms']
                  if vm['vnfc_id'] == before['vnfc_id'])
    assert healed['server_id'] != before['server_id']


def test_heal_a_worker_through_tacker(lab):
    _heal_vnfc('worker')


def test_heal_a_master_through_tacker(lab):
    _heal_vnfc('master')


def test_heal_the_whole_vnf_through_tacker(lab):
    before = _status()
    report = _run('heal')
    status = _assert_done(report, 'HEAL')
    old = {vm['server_id'] for vm in before['vms']}
    assert not old & {vm['server_id'] for vm in status['vms']}


def test_graceful_terminate_then_the_operators_delete(lab):
    inst_id = _status()['tacker']['vnf_instance_id']
    # Tacker 16's infra driver sleeps the whole graceful timeout before it
    # deletes the stack (openstack.py): 5 s keeps the path, not the wait.
    report = _run('terminate', '--graceful-timeout', '5')
    assert report['instantiation_state'] == 'NOT_INSTANTIATED'
    occurrence = _op(report['op_occ_id'])
    assert (occurrence['operation'], occurrence['operationstate']) == (
        'TERMINATE', 'COMPLETED')
    assert _params(occurrence)['terminationtype'] == 'GRACEFUL'
    assert not _status()['vms']
    # What an operator types next, verbatim.
    k8s_mgmt('openstack', 'vnflcm', 'delete', inst_id)
    assert not _status()['tacker']['instances']


def test_a_wrong_node_password_fails_in_seconds_and_is_rolled_back(
        lab, tmp_path):
    with open(os.path.join(STATE_DIR, 'lab.json')) as handle:
        request = json.load(handle)['request']
    params = request['additionalParams']['k8s_cluster_installation_param']
    params['worker_node']['password'] = 'not-the-vms-password'
    path = tmp_path / 'request.json'
    path.write_text(json.dumps(request))
    started = time.monotonic()
    failed = k8s_mgmt('instantiate', '--request', str(path), check=False)
    elapsed = time.monotonic() - started
    assert failed.returncode == 1
    line = failed.stderr.strip().splitlines()[-1]
    assert 'FAILED_TEMP' in line and 'authentication failed' in line, line
    assert 'not-the-vms-password' not in failed.stderr + failed.stdout
    op_id = _status()['tacker']['last_op']['id']
    detail = _op(op_id)['error']['detail']
    assert 'authentication failed' in detail
    assert 'not-the-vms-password' not in detail
    # Heat's stack (about 10 to 20 s here) and the failed connects: not
    # the minutes a retrying SSH client would take.
    print('instantiate with a wrong worker password: FAILED_TEMP after '
          '%.1f s' % elapsed)
    assert elapsed < 120
    report = _run('rollback')
    assert report['operation_state'] == 'ROLLED_BACK'
    assert report['instantiation_state'] == 'NOT_INSTANTIATED'
    assert not _status()['vms']


def test_both_conductors_ran_operations(lab):
    """Work is shared, with no help: Tacker 16's v1 API puts two messages
    on the conductors' shared queue for most LCM calls (its notification,
    then the operation) and one for a PATCH, and RabbitMQ hands them out in
    turn (doc/source/tacker.rst, "Which conductor runs an operation"); the
    module's PATCHes move the turn, so both conductors ran hooks."""
    ran = tacker_checks.ran_by(k8s_mgmt, LOG_MARKS)
    print('hook calls per conductor: %s' % ran)
    assert len(ran) == 2 and all(ran.values()), ran
