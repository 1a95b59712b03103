"""The install script's upgrade modes as the driver calls them, and what
they print, read back."""

import json

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.engine import uploads
from k8s_mgmt.engine import upgrade_scripts as calls
from k8s_mgmt.kube_versions import Version

import op_helpers

PROXY = 'http://user:Pr0xy-pw@proxy.example:3128'


def params(**extra):
    return op_helpers.sample_params('complex', **extra)


def test_upgrade_check_names_the_target_minor_and_the_repository():
    cluster = params(kubernetes_apt_repository={
        'url': 'http://mirror.example/k8s/', 'key_url':
            'http://mirror.example/k8s/key.gpg'},
        proxy={'https_proxy': PROXY})
    node = op_helpers.node('worker', 1)
    call = calls.upgrade_check_call(node, cluster, Version(36))
    assert call.argv == ('upgrade-check', '-k', '1.36', '-r',
                         'http://mirror.example/k8s/', '-K',
                         'http://mirror.example/k8s/key.gpg', '-w', '600')
    assert call.mode == 'upgrade-check'
    assert [key for key, _ in call.stdin_secrets] == ['https_proxy']
    assert 'Pr0xy' not in call.command().display()


def test_apply_on_the_first_master_node_elsewhere_never_the_old_pin():
    cluster = params(kubernetes_version='1.35.2')
    master = op_helpers.node('master', 1)
    call = calls.upgrade_call(master, cluster, Version(36, 1), apply=True)
    assert call.argv[:9] == ('upgrade-apply', '-k', '1.36', '-V', '1.36.1',
                             '-H', 'master-1', '-a', master.nic_ip)
    # The request's 1.35.2 pin is not passed: the target is.
    assert call.argv.count('-V') == 1
    worker = op_helpers.node('worker', 2)
    call = calls.upgrade_call(worker, cluster, Version(36, 1), apply=False)
    assert call.argv[:7] == ('upgrade-node', '-k', '1.36', '-V', '1.36.1',
                             '-H', 'worker-2')
    assert '-a' not in call.argv


def test_every_node_gets_the_upgrade_modes_with_its_scripts():
    cluster = params()
    for role in ('master', 'worker'):
        assert uploads.UPGRADE in uploads.names_for(
            op_helpers.node(role, 1), cluster)
    features = uploads.Features.of({'upgrade'}, set())
    assert features.upgrade and not uploads.Features.of(set(),
                                                        set()).upgrade


CHECK = {'node': 'master-1', 'kubeadm': 'v1.35.2', 'kubelet': 'v1.35.2',
         'kubectl': 'v1.35.2', 'control_plane': 'v1.35.2',
         'offered': ['1.36.1', '1.36.0'], 'apt_error': ''}


def test_upgrade_check_is_read_into_versions():
    found = calls.UpgradeCheck.from_output('master-1', json.dumps(CHECK))
    assert found.kubelet == found.control_plane == Version(35, 2)
    assert found.offered == (Version(36, 0), Version(36, 1))
    assert found.apt_error is None
    worker = calls.UpgradeCheck.from_output('worker-1', json.dumps(dict(
        CHECK, control_plane='', offered=[], apt_error='E: no repo')))
    assert worker.control_plane is None and worker.apt_error == 'E: no repo'


@pytest.mark.parametrize('change, words', [
    ({'kubelet': 'latest'}, "'kubelet' is not a Kubernetes version"),
    ({'kubelet': 'v1.35'}, "'kubelet' is not a Kubernetes version"),
    ({'offered': '1.36.1'}, "'offered' is not a list of versions"),
    ({'offered': ['x']}, "'offered' is not a list of versions"),
    ({'apt_error': None}, "'apt_error' is not a string"),
])
def test_a_misshapen_check_names_the_node_and_field(change, words):
    with pytest.raises(exceptions.SSHError) as err:
        calls.UpgradeCheck.from_output('worker-1',
                                       json.dumps(dict(CHECK, **change)))
    assert str(err.value).startswith('worker-1: ')
    assert words in str(err.value)


def test_the_upgrade_report():
    report = calls.UpgradeReport.from_output('master-1', json.dumps({
        'node': 'master-1', 'mode': 'upgrade-apply', 'version': '1.36.1',
        'kubeadm': 'applied', 'packages': 'installed'}))
    assert (report.version, report.kubeadm) == (Version(36, 1), 'applied')
    with pytest.raises(exceptions.SSHError) as err:
        calls.UpgradeReport.from_output('master-1', json.dumps({
            'version': '1.36.1', 'kubeadm': 'maybe', 'packages': 'kept'}))
    assert "'kubeadm' is not applied or already" in str(err.value)
    with pytest.raises(exceptions.SSHError):
        calls.UpgradeReport.from_output('master-1', 'not json')


def test_no_secret_reaches_the_argv():
    cluster = params(proxy={'http_proxy': PROXY})
    call = calls.upgrade_call(op_helpers.node('master', 1), cluster,
                              Version(36, 1), apply=True)
    assert 'Pr0xy' not in repr(call.argv)
    assert 'Pr0xy' in secrets.reveal(call.stdin())
