"""The driver's reading of the scripts' JSON stdout: straight into Secrets,
and anything missing or misshapen is the driver's own error naming node,
step and field, never a KeyError and never a value."""

import json

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.engine import script_output

TOKEN = 'q1w2e3.r4t5y6u7i8o9p0a1'
KEY = '7a' * 32
HASH = 'sha256:' + '5c' * 32
CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'
SA_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ2aW0ifQ.c2ln'


def join_output(**fields):
    data = {'token': TOKEN, 'ca_cert_hash': HASH, 'certificate_key': KEY}
    data.update(fields)
    return json.dumps({k: v for k, v in data.items() if v is not None})


def test_join_data_is_parsed_into_secrets():
    join = script_output.JoinData.from_output('master-1', 'print-join',
                                              join_output(), need_key=True)
    assert isinstance(join.token, secrets.Secret)
    assert isinstance(join.certificate_key, secrets.Secret)
    assert join.token.reveal() == TOKEN and join.ca_cert_hash == HASH
    simple = script_output.JoinData.from_output(
        'master-1', 'print-join', join_output(certificate_key=None))
    assert simple.certificate_key is None


@pytest.mark.parametrize('stdout, need_key, expected', [
    (join_output(token=None), False, "'token' is missing"),
    (join_output(ca_cert_hash=None), False, "'ca_cert_hash' is missing"),
    (join_output(certificate_key=None), True,
     "'certificate_key' is missing"),
    (join_output(token='Bad.Token'), False,
     "'token' is not a bootstrap token"),
    (join_output(token=['x']), False, "'token' is not a bootstrap token"),
    (join_output(ca_cert_hash='5c' * 32), False,
     "'ca_cert_hash' is not sha256:<64 hex digits>"),
    (join_output(certificate_key='zz'), False,
     "'certificate_key' is not 64 hex digits"),
    ('[1, 2]', False, 'JSON list instead of an object'),
    ('kubeadm join 10.0.0.1:6443 --token ' + TOKEN, False,
     'no JSON ('),
    ('', False, 'no JSON (0 characters on stdout)'),
])
def test_bad_join_output_names_node_step_and_field(stdout, need_key,
                                                   expected):
    with pytest.raises(exceptions.SSHError) as err:
        script_output.JoinData.from_output('master-1', 'print-join', stdout,
                                           need_key=need_key)
    text = str(err.value)
    assert text.startswith('master-1: print-join: unexpected script '
                           'output: ')
    assert expected in text
    for value in (TOKEN, KEY, 'Bad.Token'):
        assert value not in text


def test_every_problem_is_named_at_once():
    with pytest.raises(exceptions.SSHError) as err:
        script_output.JoinData.from_output('m', 'print-join', '{}',
                                           need_key=True)
    assert ("'token' is missing; 'ca_cert_hash' is missing; "
            "'certificate_key' is missing") in str(err.value)


def test_vim_credentials_are_parsed_and_checked():
    creds = script_output.VimCredentials.from_output(
        'master-1', 'token-secret',
        json.dumps({'token': SA_TOKEN, 'ca_cert': CA}))
    assert creds.token.reveal() == SA_TOKEN and creds.ca_cert == CA
    for data, expected in (({'ca_cert': CA}, "'token' is missing"),
                           ({'token': SA_TOKEN}, "'ca_cert' is missing"),
                           ({'token': 'a b', 'ca_cert': CA},
                            "'token' is not a bearer token"),
                           ({'token': SA_TOKEN, 'ca_cert': 'x'},
                            "'ca_cert' is not a PEM certificate")):
        with pytest.raises(exceptions.SSHError) as err:
            script_output.VimCredentials.from_output(
                'master-1', 'token-secret', json.dumps(data))
        assert expected in str(err.value)
        assert 'master-1: token-secret:' in str(err.value)
        assert SA_TOKEN not in str(err.value)


def test_ip_json_of_an_unexpected_shape_falls_back():
    from k8s_mgmt.shared_phases import cluster
    good = json.dumps([{'addr_info': [{'local': '10.0.0.5',
                                       'prefixlen': 24}]}])
    assert cluster.prefix_of(good, '10.0.0.5') == 24
    assert cluster.prefix_of(good, '10.0.0.6') is None
    for odd in ('', 'not json', '{"addr_info": []}', '[1, "x"]',
                '[{"addr_info": {"local": "10.0.0.5"}}]',
                '[{"addr_info": [{"local": "10.0.0.5", "prefixlen": "x"}]}]'):
        assert cluster.prefix_of(odd, '10.0.0.5') is None
