import json
import logging
import pickle

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.secrets import Secret


def test_secret_never_prints_its_value():
    s = Secret('hunter2-token')
    shown = [str(s), repr(s), format(s), '%s' % s, '{}'.format(s), f'{s}',
             f'{s!r}', str([s]), str({'k': s})]
    for text in shown:
        assert 'hunter2' not in text
    assert s.reveal() == 'hunter2-token'


def test_secret_cannot_be_serialised_in_clear():
    s = Secret('hunter2-token')
    with pytest.raises(TypeError):
        json.dumps({'password': s})
    with pytest.raises(TypeError):
        pickle.dumps(s)


def test_secret_in_log_arguments_is_masked(caplog):
    log = logging.getLogger('k8s_mgmt.test')
    with caplog.at_level(logging.DEBUG, logger='k8s_mgmt.test'):
        log.debug('joining with %s', Secret('abcdef.0123456789abcdef'))
    assert '0123456789abcdef' not in caplog.text
    assert secrets.MASK in caplog.text


def test_redact_scrubs_every_live_secret_from_free_text():
    token = Secret('abcdef.0123456789abcdef')
    text = 'kubeadm join 10.0.0.1:6443 --token abcdef.0123456789abcdef'
    assert secrets.redact(text) == 'kubeadm join 10.0.0.1:6443 --token ***'
    del token


def test_redact_extra_values_and_url_credentials():
    text = 'proxy http://bob:pa55word@proxy:3128 cert key 9f8e7d6c'
    out = secrets.redact(text, extra=['9f8e7d6c'])
    assert 'pa55word' not in out and '9f8e7d6c' not in out
    assert 'http://bob:***@proxy:3128' in out


def test_short_values_are_not_scrubbed_from_unrelated_text():
    Secret('a')  # too short to be worth masking everywhere
    assert secrets.redact('a cat') == 'a cat'


def test_exceptions_never_carry_secrets():
    pw = Secret('S3cret-Pa55')
    err = exceptions.RemoteCommandError(
        node='worker-1', step='join', status=1,
        stderr='error: bad password S3cret-Pa55')
    assert 'S3cret-Pa55' not in str(err)
    assert 'worker-1: join: exit status 1' in str(err)
    verr = exceptions.ValidationError([('a.b', 'wrong value S3cret-Pa55')])
    assert 'S3cret-Pa55' not in str(verr)
    assert verr.problems == [('a.b', 'wrong value ***')]
    del pw


def test_nodes_failed_names_every_node():
    err = exceptions.NodesFailed('join', [('w1', ValueError('x')),
                                          ('w2', ValueError('y'))], total=5)
    text = str(err)
    assert 'join failed on 2 of 5 node(s)' in text
    assert '- w1: x' in text and '- w2: y' in text


def test_secret_survives_copy_without_leaving_the_type():
    import copy
    s = Secret('hunter2-token')
    for dup in (copy.copy(s), copy.deepcopy({'pw': s})['pw']):
        assert isinstance(dup, Secret) and dup.reveal() == 'hunter2-token'
        assert 'hunter2' not in repr(dup)


# Secrets made on the VMs: unknown to the driver, masked by their shape.
KUBEADM_OUTPUT = '''\
[bootstrap-token] Using token: 9vr73a.a8uxyaju799qwdjv
[upload-certs] Using certificate key:
f8902e114ef118304e561c3ecd4d0b543adc226b7a07f675f56564185ffe0c07
  kubeadm join 10.0.0.100:16443 --token 9vr73a.a8uxyaju799qwdjv \\
\t--discovery-token-ca-cert-hash \
sha256:7c2e69131a36ae2a042a339b33381c6d0d43887e2de83720eff5359e26aec866 \\
\t--control-plane --certificate-key \
f8902e114ef118304e561c3ecd4d0b543adc226b7a07f675f56564185ffe0c07
'''


def test_redact_masks_what_looks_like_a_bootstrap_token_or_key():
    text = secrets.redact(KUBEADM_OUTPUT)
    assert 'a8uxyaju799qwdjv' not in text
    assert 'f8902e114ef1' not in text
    # The token id is public (it names the Secret); the secret half goes.
    assert 'Using token: 9vr73a.***' in text
    assert '--certificate-key ***' in text
    # A CA public-key pin is public and operators need it: kept.
    assert ('sha256:7c2e69131a36ae2a042a339b33381c6d0d43887e2de83720eff53'
            '59e26aec866') in text


def test_redact_shapes_leave_lookalikes_alone():
    kept = ['node master-1.example.org', 'v1.35.2',
            'qwerty.0123456789zxcvbnm0',          # 17 after the dot
            'QWERTY.0123456789ZXCVBNM',           # upper case: no token
            'commit ' + 'ab' * 20,                # 40 hex digits
            'digest ' + 'cd' * 33,                # 66 hex digits
            'image@sha256:' + 'ef' * 32]
    for text in kept:
        assert secrets.redact(text) == text


def test_exception_text_is_scrubbed_of_vm_made_secrets():
    err = exceptions.RemoteCommandError(
        node='master-1', step='init', status=1,
        stderr=KUBEADM_OUTPUT)
    assert 'a8uxyaju799qwdjv' not in str(err)
    assert 'f8902e114ef1' not in str(err)


def test_stderr_tail_of_a_failed_command_is_scrubbed():
    from k8s_mgmt.ssh import client
    tail = client.stderr_tail(KUBEADM_OUTPUT)
    assert 'a8uxyaju799qwdjv' not in tail and 'f8902e114ef1' not in tail
    assert '--control-plane --certificate-key ***' in tail
