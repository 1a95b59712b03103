"""The lab's Tacker client against a fake Tacker on 127.0.0.1 (a static
token, no Keystone): the requests it sends, what it reads back, its
timeouts and its one-line errors. Operation occurrences:
test_tacker_api_op_occs.py."""

import json
import socket
import time
import zipfile

import pytest
from keystoneauth1 import plugin
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from k8s_mgmt_lab.openstack import state
from k8s_mgmt_lab.tacker_api import client
from k8s_mgmt_lab.tacker_api import errors
from k8s_mgmt_lab.tacker_api.errors import TackerApiError
from tests.unit.lab.fake_tacker import TOKEN


def tacker_of(fake, token=TOKEN, **kwargs):
    """A client whose session holds a static token for the fake's URL."""
    kwargs.setdefault('backoff', (0.001, 0.01))
    auth = token_endpoint.Token(fake.url, token)
    return client.Tacker(ks_session.Session(auth=auth), **kwargs)


@pytest.fixture
def tacker(fake):
    return tacker_of(fake)


@pytest.fixture
def csar(tmp_path):
    path = tmp_path / 'package.zip'
    with zipfile.ZipFile(path, 'w') as archive:
        archive.writestr('TOSCA-Metadata/TOSCA.meta', 'TOSCA-Meta-File: 1\n')
    return path


def _one_line(error):
    text = str(error)
    assert '\n' not in text and 'Traceback' not in text
    return text


# -- VNF packages --------------------------------------------------------
def test_onboard_creates_uploads_the_zip_and_waits_for_onboarded(
        fake, tacker, csar):
    package = tacker.packages.onboard(str(csar), deadline=5,
                                      user_data={'lab': 'yes'})
    assert package['onboardingState'] == 'ONBOARDED'
    assert package['operationalState'] == 'ENABLED'
    method, path, _, headers, body = fake.requests[0]
    assert (method, path) == ('POST', '/vnfpkgm/v1/vnf_packages')
    assert json.loads(body) == {'userDefinedData': {'lab': 'yes'}}
    assert headers['X-Auth-Token'] == TOKEN
    method, path, _, headers, body = fake.requests[1]
    assert (method, path) == (
        'PUT', '/vnfpkgm/v1/vnf_packages/%s/package_content' % package['id'])
    assert headers['Content-Type'] == 'application/zip'
    assert body == csar.read_bytes()
    # UPLOADING (the upload's answer), then PROCESSING, then ONBOARDED;
    # then its content, which Tacker still has.
    assert fake.calls('GET') == [
        ('GET', '/vnfpkgm/v1/vnf_packages/%s' % package['id'])] * 2 + [
        ('GET', '/vnfpkgm/v1/vnf_packages/%s/package_content'
         % package['id'])]


def test_content_tacker_refuses_fails_in_one_line(fake, tacker, csar):
    fake.onboarding = ['PROCESSING', 'PROCESSING', 'CREATED']
    with pytest.raises(TackerApiError) as caught:
        tacker.packages.onboard(str(csar), deadline=5)
    package_id = next(iter(fake.packages))
    assert _one_line(caught.value) == (
        'onboard VNF package %s: CREATED: Tacker refused the content: the '
        'package is CREATED again (tacker-conductor.log says why)'
        % package_id)
    assert caught.value.state == 'CREATED'


def test_onboarding_that_never_ends_stops_at_the_deadline(
        fake, tacker, csar):
    fake.onboarding = ['PROCESSING'] * 100000
    started = time.monotonic()
    with pytest.raises(TackerApiError, match=r': PROCESSING: still '
                                             r'PROCESSING after 0.2 s$'):
        tacker.packages.onboard(str(csar), deadline=0.2)
    assert time.monotonic() - started < 4


def test_a_second_upload_gets_tackers_conflict(fake, tacker, csar):
    package = tacker.packages.onboard(str(csar), deadline=5)
    with pytest.raises(TackerApiError) as caught:
        tacker.packages.upload(package['id'], str(csar))
    assert str(caught.value) == (
        'upload VNF package {0}: HTTP 409: VNF Package {0} onboarding '
        'state is not CREATED'.format(package['id']))
    assert caught.value.status == 409


def test_show_list_disable_and_delete_a_package(fake, tacker, csar):
    package = tacker.packages.onboard(str(csar), deadline=5)
    assert tacker.packages.show(package['id'])['id'] == package['id']
    assert [p['id'] for p in tacker.packages.list()] == [package['id']]
    with pytest.raises(TackerApiError, match='HTTP 409: .* cannot be '
                                             'deleted as .* ENABLED'):
        tacker.packages.delete(package['id'])
    assert tacker.packages.disable(package['id']) == {
        'operationalState': 'DISABLED'}
    assert json.loads(fake.requests[-1][4]) == {
        'operationalState': 'DISABLED'}
    tacker.packages.delete(package['id'])
    assert fake.calls()[-1] == ('DELETE', '/vnfpkgm/v1/vnf_packages/%s'
                                % package['id'])
    with pytest.raises(TackerApiError) as caught:
        tacker.packages.show(package['id'])
    assert str(caught.value) == (
        'show VNF package {0}: HTTP 404: Can not find requested vnf '
        'package: {0}'.format(package['id']))


def test_lists_ask_for_every_record_and_pass_the_filter(fake, tacker):
    tacker.packages.list(filter='(eq,onboardingState,ONBOARDED)')
    tacker.instances.list()
    tacker.op_occs.list(filter='(eq,operationState,FAILED_TEMP)')
    assert [r[2] for r in fake.requests] == [
        {'all_records': 'yes', 'filter': '(eq,onboardingState,ONBOARDED)'},
        {'all_records': 'yes'},
        {'all_records': 'yes', 'filter': '(eq,operationState,FAILED_TEMP)'}]


# -- VNF instances -------------------------------------------------------
def _onboarded(tacker, csar):
    return tacker.packages.onboard(str(csar), deadline=5)


def test_create_show_list_and_delete_an_instance(fake, tacker, csar):
    vnfd_id = _onboarded(tacker, csar)['vnfdId']
    instance = tacker.instances.create(vnfd_id, name='lab', description='d',
                                       metadata={'owner': 'lab'})
    assert json.loads(fake.requests[-1][4]) == {
        'vnfdId': vnfd_id, 'vnfInstanceName': 'lab',
        'vnfInstanceDescription': 'd', 'metadata': {'owner': 'lab'}}
    assert instance['instantiationState'] == 'NOT_INSTANTIATED'
    assert tacker.instances.show(instance['id']) == instance
    assert tacker.instances.list() == [instance]
    bare = tacker.instances.create(vnfd_id)
    assert json.loads(fake.requests[-1][4]) == {'vnfdId': vnfd_id}
    tacker.instances.delete(instance['id'])
    tacker.instances.delete(bare['id'])
    assert tacker.instances.list() == []


def test_an_unknown_vnfd_is_tackers_404_in_one_line(tacker):
    with pytest.raises(TackerApiError) as caught:
        tacker.instances.create('0f6c7f60-0000-4000-8000-000000000000')
    assert str(caught.value) == (
        'create VNF instance of VNFD 0f6c7f60-0000-4000-8000-000000000000: '
        'HTTP 404: Can not find requested to NFVO, vnf package info: '
        'vnfdId=[0f6c7f60-0000-4000-8000-000000000000]')


def test_each_lcm_call_sends_its_body_and_returns_the_op_id(
        fake, tacker, csar):
    instance = tacker.instances.create(_onboarded(tacker, csar)['vnfdId'])
    request = {'flavourId': 'simple', 'additionalParams': {'k': 'v'},
               'vimConnectionInfo': [{'id': 'v', 'vimId': 'vim',
                                      'vimType': 'openstack'}]}
    started = [
        tacker.instances.instantiate(instance['id'], request),
        tacker.instances.scale(instance['id'], 'SCALE_OUT', 'worker_instance',
                               steps=2, additional_params={'x': 1}),
        tacker.instances.heal(instance['id'], ['c1', 'c2'], cause='lab',
                              additional_params={'keep': True}),
        tacker.instances.heal(instance['id']),
        tacker.instances.terminate(instance['id'], 'GRACEFUL',
                                   graceful_timeout=60.0),
        tacker.instances.terminate(instance['id'])]
    posts = [(r[1].rsplit('/', 1)[1], json.loads(r[4]))
             for r in fake.requests[-6:]]
    assert posts == [
        ('instantiate', request),
        ('scale', {'type': 'SCALE_OUT', 'aspectId': 'worker_instance',
                   'numberOfSteps': 2, 'additionalParams': {'x': 1}}),
        ('heal', {'vnfcInstanceId': ['c1', 'c2'], 'cause': 'lab',
                  'additionalParams': {'keep': True}}),
        ('heal', {}),
        ('terminate', {'terminationType': 'GRACEFUL',
                       'gracefulTerminationTimeout': 60}),
        ('terminate', {'terminationType': 'FORCEFUL'})]
    # The ids of the occurrences Tacker made, read from a Location on its
    # configured endpoint (localhost:9890), not the address called.
    assert started == list(fake.occurrences)
    assert [o['operation'] for o in fake.occurrences.values()] == [
        'INSTANTIATE', 'SCALE', 'HEAL', 'HEAL', 'TERMINATE', 'TERMINATE']


def test_a_patch_and_a_change_of_package(fake, tacker, csar):
    instance = tacker.instances.create(_onboarded(tacker, csar)['vnfdId'])
    patched = tacker.instances.update(instance['id'], {'metadata': {
        'k8sMgmtCertificates': 'renew'}})
    method, path, _query, headers, body = fake.requests[-1]
    assert (method, path.rsplit('/', 1)[1]) == ('PATCH', instance['id'])
    assert headers['Content-Type'] == 'application/merge-patch+json'
    assert json.loads(body) == {'metadata': {'k8sMgmtCertificates':
                                             'renew'}}
    assert fake.occurrences[patched]['operation'] == 'MODIFY_INFO'
    assert tacker.instances.show(instance['id'])['metadata'] == {
        'k8sMgmtCertificates': 'renew'}
    changed = tacker.instances.change_vnfpkg(instance['id'], 'vnfd-2', {
        'upgrade_type': 'RollingUpdate', 'vdu_params': []})
    assert json.loads(fake.requests[-1][4]) == {
        'vnfdId': 'vnfd-2', 'additionalParams': {
            'upgrade_type': 'RollingUpdate', 'vdu_params': []}}
    assert fake.occurrences[changed]['operation'] == 'CHANGE_VNFPKG'


def test_a_202_without_location_is_one_line(fake, tacker, csar):
    instance = tacker.instances.create(_onboarded(tacker, csar)['vnfdId'])
    fake.lcm_location = False
    with pytest.raises(TackerApiError) as caught:
        tacker.instances.heal(instance['id'])
    assert str(caught.value) == (
        "heal VNF instance %s: Tacker accepted it but named no operation "
        "occurrence (Location: '')" % instance['id'])


def test_wrong_arguments_are_refused_before_any_request(fake, tacker):
    with pytest.raises(ValueError, match='termination type'):
        tacker.instances.terminate('i', 'SOFT')
    with pytest.raises(ValueError, match='scale type'):
        tacker.instances.scale('i', 'UP', 'a')
    assert fake.requests == []


def test_instantiate_of_a_missing_instance_is_one_line(tacker):
    with pytest.raises(TackerApiError) as caught:
        tacker.instances.instantiate('no-such-vnf', {'flavourId': 'simple'})
    assert _one_line(caught.value) == (
        'instantiate VNF instance no-such-vnf: HTTP 404: Can not find '
        'requested vnf instance: no-such-vnf')
    assert caught.value.op_id is None


# -- endpoint, authentication, timeouts ----------------------------------
class _NoCatalog(plugin.BaseAuthPlugin):
    """A token whose catalog has no Tacker."""

    def get_token(self, session, **kwargs):
        return TOKEN

    def get_endpoint(self, session, **kwargs):
        return None


def test_an_explicit_url_wins_over_the_catalog(fake):
    session = ks_session.Session(auth=_NoCatalog())
    tacker = client.Tacker(session, url=fake.url)
    assert tacker.endpoint() == fake.url
    assert tacker.instances.list() == []


def test_a_catalog_without_tacker_says_so(fake):
    tacker = client.Tacker(ks_session.Session(auth=_NoCatalog()))
    with pytest.raises(TackerApiError) as caught:
        tacker.instances.list()
    assert str(caught.value) == (
        'list VNF instances: Keystone\'s catalog has no nfv-orchestration '
        'endpoint in RegionOne (is Tacker in the control plane?)')
    with pytest.raises(TackerApiError, match='^find Tacker: Keystone'):
        tacker.endpoint()
    assert fake.requests == []


def test_a_token_tacker_refuses_is_one_line(fake):
    with pytest.raises(TackerApiError) as caught:
        tacker_of(fake, token='stale').packages.list()
    assert str(caught.value) == (
        'list VNF packages: HTTP 401: The request you have made requires '
        'authentication.')
    assert 'stale' not in str(caught.value)


def test_a_request_tacker_does_not_answer_times_out(fake):
    fake.hold = {'/vnflcm/v1/vnf_instances'}
    tacker = tacker_of(fake, timeout=0.2)
    started = time.monotonic()
    with pytest.raises(TackerApiError) as caught:
        tacker.instances.list()
    assert time.monotonic() - started < 4
    assert str(caught.value) == ('list VNF instances: no answer within '
                                 '0.2 s')


def test_a_get_whose_connection_breaks_is_sent_once_more(fake, tacker):
    fake.drop = {'/vnflcm/v1/vnf_instances': 1}
    assert tacker.instances.list() == []
    assert fake.calls() == [('GET', '/vnflcm/v1/vnf_instances')] * 2
    fake.drop = {'/vnflcm/v1/vnf_instances': 2}
    with pytest.raises(TackerApiError) as caught:
        tacker.instances.list()
    assert str(caught.value) == ('list VNF instances: cannot connect: Remote '
                                 'end closed connection without response')


def test_a_post_whose_connection_breaks_is_not_sent_again(fake, tacker):
    fake.drop = {'/vnfpkgm/v1/vnf_packages': 1}
    with pytest.raises(TackerApiError, match='^create VNF package: cannot '
                                             'connect: Remote end closed'):
        tacker.packages.create()
    assert fake.calls() == [('POST', '/vnfpkgm/v1/vnf_packages')]


def test_no_tacker_listening_is_one_line():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    session = ks_session.Session(auth=_NoCatalog())
    tacker = client.Tacker(session, url='http://127.0.0.1:%d/' % port)
    with pytest.raises(TackerApiError) as caught:
        tacker.packages.list()
    assert _one_line(caught.value) == (
        'list VNF packages: cannot connect: Connection refused')


def test_the_planes_admin_password_never_shows(tmp_path):
    class Plane(object):
        layout = state.Layout(str(tmp_path))

    with pytest.raises(TackerApiError, match='never started'):
        client.Tacker.for_plane(Plane())
    state.ports(Plane.layout, {'keystone': 1, 'mariadb': 2, 'epmd': 3,
                               'rabbitmq': 4, 'rabbitmq_dist': 5,
                               'heat_api': 6})
    password = state.secrets(Plane.layout)['admin']
    tacker = client.Tacker.for_plane(Plane(), url='http://127.0.0.1:1/')
    # Keystone on port 1 does not answer: the error names no password.
    with pytest.raises(TackerApiError) as caught:
        tacker.packages.list()
    assert password not in str(caught.value)
    assert str(caught.value).startswith('list VNF packages: cannot connect')
    # Any text Tacker answers with has the password masked.
    echoed = TackerApiError('show VNF package p', 'bad: %s' % password)
    assert str(echoed) == 'show VNF package p: bad: ***'


# -- one line out of anything Tacker answers -----------------------------
def test_one_line_keeps_the_last_line_of_a_traceback():
    detail = ('Failed to instantiate:\nTraceback (most recent call last):\n'
              '  File "x.py", line 1, in f\n    boom()\n'
              'k8s_mgmt.exceptions.MgmtDriverError: master-1: install: '
              'exit 1\n')
    assert errors.one_line(detail) == (
        'Failed to instantiate: k8s_mgmt.exceptions.MgmtDriverError: '
        'master-1: install: exit 1')


def test_one_line_cuts_long_details_and_masks_tokens():
    token = 'gAAAAAB' + 'x' * 120
    text = errors.one_line('token %s then %s' % (token, 'word ' * 200))
    assert token not in text and text.startswith('token *** then word')
    full = len('token *** then ' + 'word ' * 199 + 'word')
    assert text.endswith('... (%d more characters)'
                         % (full - errors.DETAIL_LIMIT))
    assert len(text) < errors.DETAIL_LIMIT + 40


@pytest.mark.parametrize('body, detail', [
    (b'{"title": "Conflict", "status": 409, "detail": "in use"}', 'in use'),
    (b'{"error": {"code": 401, "message": "no token"}}', 'no token'),
    (b'{"TackerError": {"type": "X", "message": "bad"}}', 'bad'),
    (b'<html><body><h1>405 Method Not Allowed</h1></body></html>',
     '405 Method Not Allowed'),
    (b'{"unexpected": 1}', '{"unexpected": 1}')])
def test_detail_of_each_shape_tacker_answers_with(body, detail):
    assert errors.one_line(errors.detail_of(body)) == detail


def test_the_v2_api_its_paths_and_version_header(fake, csar):
    """``api='v2'``: the LCM calls go to /vnflcm/v2 with the Version
    header v2 requires; packages stay v1's API, without it; a rollback,
    which v2 answers without a Location, waits on the same occurrence."""
    tacker = tacker_of(fake, api='v2')
    instance = tacker.instances.create(_onboarded(tacker, csar)['vnfdId'])
    op_id = tacker.instances.instantiate(instance['id'], {
        'flavourId': 'simple',
        'vimConnectionInfo': {'vim1': {'vimId': 'v', 'vimType': 'x'}}})
    assert tacker.op_occs.wait(op_id, 10)['operationState'] == 'COMPLETED'
    lcm = [(m, p, h) for m, p, _, h, _ in fake.requests
           if p.startswith('/vnflcm/')]
    assert lcm and all(p.startswith('/vnflcm/v2/') for _, p, _ in lcm)
    assert all(h.get('Version') == '2.0.0' for _, _, h in lcm)
    packages = [h for _, p, _, h, _ in fake.requests
                if p.startswith('/vnfpkgm/')]
    assert packages and not [h for h in packages if 'Version' in h]
    fake.outcome = ['STARTING', 'PROCESSING', 'FAILED_TEMP']
    failed = tacker.instances.scale(instance['id'], 'SCALE_OUT', 'w')
    with pytest.raises(TackerApiError):
        tacker.op_occs.wait(failed, 10)
    assert tacker.op_occs.rollback(failed) == failed
    assert tacker.op_occs.wait(failed, 10, expect='ROLLED_BACK')[
        'operationState'] == 'ROLLED_BACK'
    # Without the header Tacker's v2 refuses, as the fake does.
    v1_client = tacker_of(fake)
    with pytest.raises(TackerApiError) as caught:
        v1_client.rest.json('list', 'GET', 'vnflcm/v2/vnf_instances')
    assert 'HTTP 400' in str(caught.value)
