"""Keystone and Heat requests end by ``api_timeout`` with a named error.

Real python-heatclient and keystoneauth on the client side; the endpoints
are loopback servers that accept the connection and never answer
(tests/helpers/silent_server.py), or the Keystone/Heat double
(fake_heat.py) whose catalog points Heat at such a server.
"""

import time

import pytest
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3
from oslo_config import fixture as cfg_fixture

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.topology import heat
from tests.helpers import silent_server
from tests.unit.topology import fake_heat
from tests.unit.topology import heat_fixtures as hf

TIMEOUT = 1.0


@pytest.fixture
def short_api_timeout():
    fix = cfg_fixture.Config(conf.CONF)
    fix.setUp()
    fix.config(api_timeout=TIMEOUT, group='k8s_mgmt')
    yield
    fix.cleanUp()


def _read(auth_url, stack_id='stack-1', spec=None):
    session = heat.session_from_settings(
        auth_url=auth_url, username='nfv_user',
        password=secrets.Secret('devstack'), project_name='nfv')
    return heat.HeatReader(session, region_name='RegionOne').read_topology(
        spec or hf.k8s_spec(), stack_id)


def _timed(call, *args):
    started = time.monotonic()
    with pytest.raises(exceptions.TopologyError) as caught:
        call(*args)
    return time.monotonic() - started, str(caught.value)


def test_session_timeout_defaults_to_api_timeout(short_api_timeout):
    session = heat.session_from_settings(
        'http://127.0.0.1:1/v3', 'u', secrets.Secret('p'), 'nfv')
    assert session.timeout == TIMEOUT
    vim_session, _ = heat.session_for_vim({
        'auth_url': 'http://127.0.0.1:1/v3', 'username': 'u',
        'password': 'p', 'project_name': 'nfv'})
    assert vim_session.timeout == TIMEOUT


def test_silent_keystone_ends_naming_keystone(short_api_timeout):
    with silent_server.SilentServer() as silent:
        took, text = _timed(_read, silent.url + '/identity/v3')
        assert silent.accepted >= 1
    assert took < 3 * TIMEOUT
    assert 'Keystone' in text and 'authenticate at' in text
    assert 'no answer within 1 s' in text
    assert 'devstack' not in text


def test_silent_heat_ends_naming_heat_and_the_call(short_api_timeout):
    fx = hf.load('simple')
    with silent_server.SilentServer() as silent:
        with fake_heat.FakeHeat(fx, heat_base=silent.url) as fake:
            took, text = _timed(_read, fake.auth_url, fx['stack_id'])
        assert b'/resources' in bytes(silent.received)
    assert took < 3 * TIMEOUT
    assert 'Heat: list resources of stack %s' % fx['stack_id'] in text
    assert 'no answer within 1 s' in text


def test_a_session_made_without_timeout_gets_one(short_api_timeout):
    fx = hf.load('simple')
    with silent_server.SilentServer() as silent:
        with fake_heat.FakeHeat(fx, heat_base=silent.url) as fake:
            auth = v3.Password(auth_url=fake.auth_url, username='nfv_user',
                               password='devstack', project_name='nfv',
                               user_domain_name='Default',
                               project_domain_name='Default')
            session = ks_session.Session(auth=auth)  # no timeout at all
            reader = heat.HeatReader(session)
            assert session.timeout == TIMEOUT
            took, text = _timed(reader.read_topology, hf.k8s_spec(),
                                fx['stack_id'])
    assert took < 3 * TIMEOUT and 'Heat: list resources' in text


def test_silent_resource_shows_end_naming_each_resource(short_api_timeout):
    fx = hf.load('simple')
    spec = hf.k8s_spec(cluster_cp='masterNode_CP1')
    with fake_heat.FakeHeat(fx) as fake:
        fake.silent_shows.set()
        took, text = _timed(_read, fake.auth_url, fx['stack_id'], spec)
    # The shows run concurrently: all of them end within one timeout.
    assert took < 3 * TIMEOUT
    assert 'Heat: show' in text and 'resource(s) failed' in text
    assert 'masterNode_CP1 in stack' in text
    assert text.count('no answer within 1 s') >= 2
