"""What reaches Tacker's ``error.detail`` when a hook fails: one line naming
the node, the step and the cause (no traceback, no secret), the full text
logged by the driver first."""

import logging

import pytest

from k8s_mgmt import driver
from k8s_mgmt import exceptions
from k8s_mgmt import secrets

STDERR = ('install_k8s_cluster.sh: ==> kubeadm join (worker)\n'
          'Traceback (most recent call last):\n'
          '  File "/usr/bin/kubeadm", line 9, in <module>\n'
          'error execution phase kubelet-start: timed out\n')


def _join_failed():
    return exceptions.RemoteCommandError(
        node='worker-1', step='join', status=1, stderr=STDERR)


def test_a_command_gives_its_last_stderr_line():
    assert exceptions.one_line(_join_failed()) == (
        'worker-1: join: exit status 1: error execution phase '
        'kubelet-start: timed out')


def test_a_step_on_several_nodes_gives_one_part_per_node():
    err = exceptions.NodesFailed('scale_end: join', [
        ('worker-1', _join_failed()),
        ('worker-2', exceptions.SSHAuthError(
            # Not "ubuntu": other tests' sample password, which the
            # driver masks wherever it appears while a Secret holds it.
            node='worker-2', step='connect', user='k8s-operator',
            reason='Authentication failed.'))], 3)
    text = exceptions.one_line(err)
    assert '\n' not in text and 'Traceback' not in text
    assert text.startswith('scale_end: join failed on 2 of 3 node(s): '
                           'worker-1: worker-1: join: exit status 1: ')
    assert text.endswith('worker-2: worker-2: connect: authentication '
                         'failed for user k8s-operator (not retried): '
                         'Authentication failed.')


def test_bad_input_gives_every_problem():
    err = exceptions.ValidationError([('a.b', 'required'),
                                      ('c', 'not an IP')])
    assert exceptions.one_line(err) == (
        'Invalid parameters: a.b: required; c: not an IP')


def test_a_long_line_is_cut_and_secrets_stay_masked():
    err = exceptions.MgmtDriverError(error_message='x' * 600)
    assert len(exceptions.one_line(err)) == exceptions.ONE_LINE_LIMIT + 3
    # A secret the driver holds, in a command's stderr.
    held = secrets.Secret('s3cr3t-value')
    err = exceptions.RemoteCommandError(
        node='m', step='s', status=1, stderr='bad password s3cr3t-value\n')
    assert 's3cr3t-value' not in exceptions.one_line(err)
    assert held


class _Failing(driver.KubernetesMgmtDriver):
    def __init__(self):     # no preload: nothing of the driver runs
        pass


def test_a_hook_raises_one_line_and_logs_the_full_text(monkeypatch, caplog):
    def fails(self, context, vnf_instance, request, grant, grant_request,
              **kwargs):
        raise exceptions.NodesFailed('instantiate_end: join',
                                     [('worker-1', _join_failed())], 1)
    monkeypatch.setattr(_Failing, 'instantiate_end',
                        driver.one_line_errors(fails))
    with caplog.at_level(logging.ERROR, logger='k8s_mgmt.driver'):
        with pytest.raises(exceptions.NodesFailed) as caught:
            _Failing().instantiate_end(None, None, None, None, None)
    assert str(caught.value) == (
        'instantiate_end: join failed on 1 of 1 node(s): worker-1: '
        'worker-1: join: exit status 1: error execution phase '
        'kubelet-start: timed out')
    assert caught.value.failures[0][0] == 'worker-1'
    assert 'Traceback' in caught.value.full_text
    assert 'install_k8s_cluster.sh: ==> kubeadm join' in caplog.text


def test_every_tacker_hook_of_both_drivers_is_wrapped():
    from k8s_mgmt.kubespray import driver as kubespray_driver
    for cls in (driver.KubernetesMgmtDriver,
                kubespray_driver.KubesprayMgmtDriver):
        for hook in driver.TACKER_HOOKS:
            assert getattr(cls, hook).__wrapped__, (cls, hook)


def test_a_problem_path_is_one_line_whatever_it_holds():
    err = exceptions.ValidationError([('a.b\nc: forged\r\x1b[1A', 'required')])
    assert str(err).splitlines()[1:] == [
        "a.b\\nc: forged\\r\\x1b[1A: required"]
    assert exceptions.one_line(err) == (
        "Invalid parameters: a.b\\nc: forged\\r\\x1b[1A: required")
