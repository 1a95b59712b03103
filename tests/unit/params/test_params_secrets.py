"""Secrets in the parameter model never print, whatever prints them."""

import json
import logging

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt.secrets import Secret

import params_helpers as h

PROXY = 'http://proxyuser:Pr0xyPassw0rd@proxy.example:3128'
PEM = ('-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAKeyBody'
       '\n-----END OPENSSH PRIVATE KEY-----\n')
CLEAR = (h.PASSWORD, 'Pr0xyPassw0rd', 'KeyBody')


def _loaded():
    additional = h.base_params()
    root = additional[h.ROOT]
    root['proxy'] = {'http_proxy': PROXY, 'https_proxy': PROXY,
                     'k8s_node_cidr': '10.254.0.0/24'}
    del root['worker_node']['password']
    root['worker_node']['ssh_private_key'] = PEM
    root['storage_server'] = h.storage_section()
    return params.load_cluster_params(additional, flavour='simple')


def _assert_clear_of_secrets(text):
    for value in CLEAR:
        assert value not in text


@pytest.mark.parametrize('render', [
    str, repr, '{}'.format, '{!r}'.format, lambda p: f'{p}',
    lambda p: '%s %r' % (p, p), lambda p: str(p.to_dict()),
], ids=['str', 'repr', 'format', 'format-r', 'f-string', 'percent',
        'to_dict'])
def test_rendering_the_params_masks_secrets(render):
    loaded = _loaded()
    assert loaded.master_node.password.reveal() == h.PASSWORD  # really there
    _assert_clear_of_secrets(render(loaded))


def test_secret_fields_are_secrets():
    loaded = _loaded()
    for value in (loaded.master_node.password, loaded.proxy.http_proxy,
                  loaded.proxy.https_proxy, loaded.worker_node.ssh_private_key,
                  loaded.storage_server.password):
        assert isinstance(value, Secret)
        assert str(value) == '***'


def test_json_dumps_refuses(caplog):
    loaded = _loaded()
    with pytest.raises(TypeError):
        json.dumps(loaded.to_dict())
    with pytest.raises(TypeError):
        json.dumps(loaded.master_node.password)


def test_logging_masks(caplog):
    loaded = _loaded()
    log = logging.getLogger('k8s_mgmt.test')
    with caplog.at_level(logging.DEBUG):
        log.warning('params %s', loaded)
        log.warning('node %r password %s', loaded.master_node,
                    loaded.master_node.password)
    assert 'master_instance' in caplog.text
    _assert_clear_of_secrets(caplog.text)


def test_problems_and_warnings_never_hold_secrets():
    additional = h.base_params()
    root = additional[h.ROOT]
    root['proxy'] = {'http_proxy': 'socks5://u:Pr0xyPassw0rd@h:1',
                     'https_proxy': 'http://u:Pr0xyPassw0rd@h:port'}
    root['worker_node']['ssh_private_key'] = 'not a key KeyBody'
    root['master_node']['password'] = [h.PASSWORD]
    root['master_node']['username'] = h.PASSWORD + ' x'  # not a secret field
    with pytest.raises(exceptions.ValidationError) as info:
        params.load_cluster_params(additional, flavour='simple')
    error = info.value
    text = str(error) + repr(error.problems) + repr(error.warnings)
    assert 'Pr0xyPassw0rd' not in text and 'KeyBody' not in text
    # The password list is described by its type, never echoed.
    assert 'expected the password as a string, got a list' in text
