"""The lab's Nova: os-getConsoleOutput through a real keystoneauth session,
shaped like real Nova (``{"output": ...}``, 404 ``itemNotFound``)."""

import json
import urllib.error
import urllib.request

from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session
import pytest

from k8s_mgmt_lab import api
from k8s_mgmt.ssh import console_keys

PASSWORD = 'lab-nova-pw'


@pytest.fixture
def served(make_cloud):
    cloud, stack_id = make_cloud('simple', workers=1)
    server, base_url = api.serve(cloud, password=PASSWORD)
    auth = v3.Password(auth_url=base_url + '/v3', username='admin',
                       password=PASSWORD, project_name='admin',
                       user_domain_name='Default',
                       project_domain_name='Default')
    session = ks_session.Session(auth=auth)
    ids = [s['server_id'] for s in cloud.servers(stack_id)]
    assert len(ids) == 2
    yield cloud, ids, server, session
    server.stop()


def _post(session, server_id, body):
    return session.post('/servers/%s/action' % server_id, json=body,
                        endpoint_filter={'service_type': 'compute',
                                         'interface': 'public'},
                        raise_exc=False)


def test_catalog_has_compute_at_v2_1(served):
    _, _, server, session = served
    url = session.get_endpoint(service_type='compute', interface='public')
    assert url == server.base_url + '/v2.1'


def test_console_output_of_a_server(served, tmp_path):
    cloud, ids, _, session = served
    text = ''.join('line %d\n' % n for n in range(5))
    cloud.console_overrides[ids[0]] = text
    reply = _post(session, ids[0], {'os-getConsoleOutput': {'length': -1}})
    assert reply.status_code == 200
    assert reply.json() == {'output': text}
    reply = _post(session, ids[0], {'os-getConsoleOutput': {'length': 2}})
    assert reply.json() == {'output': 'line 3\nline 4\n'}
    reply = _post(session, ids[0], {'os-getConsoleOutput': {}})
    assert reply.json() == {'output': text}
    assert console_keys.fetch_console(session, ids[0]) == text


def test_server_without_vm_has_no_fingerprints(served):
    _, ids, _, session = served
    text = console_keys.fetch_console(session, ids[1])
    assert 'has no VM behind it' in text
    assert not console_keys.parse_console(text).found


def test_unknown_server_is_404_item_not_found(served):
    _, _, _, session = served
    reply = _post(session, 'no-such-server', {'os-getConsoleOutput': {}})
    assert reply.status_code == 404
    assert reply.json() == {'itemNotFound': {
        'code': 404, 'message': 'Instance no-such-server could not be '
                                'found.'}}
    with pytest.raises(console_keys.ConsoleUnavailable) as info:
        console_keys.fetch_console(session, 'no-such-server')
    assert str(info.value) == (
        'the compute API answered os-getConsoleOutput with 404 (Instance '
        'no-such-server could not be found.)')


def test_bad_requests(served):
    _, ids, _, session = served
    reply = _post(session, ids[0], {'os-stop': None})
    assert reply.status_code == 400 and 'badRequest' in reply.json()
    reply = _post(session, ids[0], {'os-getConsoleOutput': {'length': -5}})
    assert reply.status_code == 400


def test_a_token_is_required(served):
    _, ids, server, _ = served
    request = urllib.request.Request(
        '%s/v2.1/servers/%s/action' % (server.base_url, ids[0]),
        data=json.dumps({'os-getConsoleOutput': {}}).encode(),
        headers={'Content-Type': 'application/json',
                 'X-Auth-Token': 'forged'})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 401


def test_console_file_beside_the_state_file(served, tmp_path):
    # How a test makes the console of a lab served by another process lie.
    cloud, ids, _, session = served
    folder = tmp_path / 'console'
    folder.mkdir()
    (folder / ids[1]).write_text('lying console\n')
    assert console_keys.fetch_console(session, ids[1]) == 'lying console\n'
