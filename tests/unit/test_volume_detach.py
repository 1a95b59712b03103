"""Detaching the kept volume through Nova and waiting on Cinder, against a
fake keystoneauth session and a fake clock: the calls, the wait, the
failures and what they say."""

from keystoneauth1 import exceptions as ks_exc
import pytest

from k8s_mgmt import volume_detach

SERVER = 'srv-old'
VOLUME = '6f1b6c1e-2a7b-4c1d-9a55-0f3e0d1c2b3a'
DETACH_URL = '/servers/%s/os-volume_attachments/%s' % (SERVER, VOLUME)
VOLUME_URL = '/volumes/%s' % VOLUME


class Response(object):
    def __init__(self, status_code, body=None):
        self.status_code = status_code
        self._body = body
        self.headers = {}
        self.text = '' if body is None else str(body)

    def json(self):
        if self._body is None:
            raise ValueError('no body')
        return self._body


def volume(status, *servers):
    return Response(200, {'volume': {
        'id': VOLUME, 'status': status,
        'attachments': [{'server_id': s, 'volume_id': VOLUME}
                        for s in servers]}})


class FakeSession(object):
    """Answers GET /volumes/ID from a list (the last one repeats) and the
    DELETE with one response; records every call and its endpoint."""

    def __init__(self, reads, detach=None):
        self.reads = list(reads)
        self.detach = detach or Response(202)
        self.calls = []

    def get(self, url, endpoint_filter=None, raise_exc=True, timeout=None):
        self.calls.append(('GET', url, endpoint_filter['service_type']))
        assert raise_exc is False and timeout
        answer = self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def delete(self, url, endpoint_filter=None, raise_exc=True,
               timeout=None):
        self.calls.append(('DELETE', url, endpoint_filter['service_type']))
        assert endpoint_filter.get('region_name') == 'RegionTwo'
        if isinstance(self.detach, Exception):
            raise self.detach
        return self.detach


class FakeClock(object):
    def __init__(self):
        self.now = 0.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def run(session, timeout=60.0):
    clock = FakeClock()
    said = volume_detach.detach_and_wait(
        session, 'RegionTwo', 'storage-1', SERVER, VOLUME, timeout=timeout,
        clock=clock, sleep=clock.sleep)
    return said, clock


def test_an_in_use_volume_is_detached_then_waited_for_until_available():
    session = FakeSession([volume('in-use', SERVER),
                           volume('detaching', SERVER),
                           volume('detaching', SERVER),
                           volume('available')])
    said, clock = run(session)
    assert session.calls == [
        ('GET', VOLUME_URL, 'volumev3'),
        ('DELETE', DETACH_URL, 'compute'),
        ('GET', VOLUME_URL, 'volumev3'), ('GET', VOLUME_URL, 'volumev3'),
        ('GET', VOLUME_URL, 'volumev3')]
    assert said.startswith('volume %s: detached from server %s, available '
                           'after ' % (VOLUME, SERVER))
    # Backoff between the reads, no fixed sleep: two waits, growing.
    assert len(clock.slept) == 2 and clock.slept[0] <= 1.0
    assert clock.slept[1] <= 2.0


def test_an_available_volume_is_left_alone_on_a_re_run():
    session = FakeSession([volume('available')])
    said, clock = run(session)
    assert session.calls == [('GET', VOLUME_URL, 'volumev3')]
    assert said == 'volume %s: already available' % VOLUME
    assert clock.slept == []


def test_a_volume_already_detaching_is_only_waited_for():
    session = FakeSession([volume('detaching', SERVER), volume('available')])
    said, _clock = run(session)
    assert [c[0] for c in session.calls] == ['GET', 'GET']
    assert 'was detaching from server srv-old' in said


def test_a_volume_another_server_holds_is_not_taken_from_it():
    session = FakeSession([volume('in-use', 'srv-new')])
    with pytest.raises(volume_detach.VolumeDetachError) as err:
        run(session)
    assert str(err.value) == (
        'storage-1: read the volume from Cinder: volume %s: it is attached '
        'to server(s) srv-new, not (only) to the old storage server '
        'srv-old: the driver takes it from no other server' % VOLUME)
    assert [c[0] for c in session.calls] == ['GET']


def test_nova_refusing_the_detach_names_node_step_volume_and_answer():
    refusal = Response(409, {'conflictingRequest': {
        'code': 409, 'message': "Cannot 'detach_volume' instance srv-old "
                                "while it is in task_state deleting"}})
    session = FakeSession([volume('in-use', SERVER)], detach=refusal)
    with pytest.raises(volume_detach.VolumeDetachError) as err:
        run(session)
    text = str(err.value)
    assert text.startswith('storage-1: detach the volume from the old '
                           'server: volume %s: the compute API answered '
                           'DELETE os-volume_attachments of server srv-old '
                           'with 409 (Cannot ' % VOLUME)
    assert 'Traceback' not in text and '\n' not in text


def test_a_detach_that_never_ends_fails_at_the_deadline_with_the_status():
    session = FakeSession([volume('in-use', SERVER),
                           volume('detaching', SERVER)])
    with pytest.raises(volume_detach.VolumeDetachError) as err:
        run(session, timeout=30.0)
    text = str(err.value)
    assert text.startswith(
        'storage-1: wait until the volume is available: volume %s: not '
        'available within 30 s (' % VOLUME)
    assert text.endswith('last: detaching (attached to srv-old))')


def test_a_volume_in_error_fails_at_once():
    session = FakeSession([volume('in-use', SERVER),
                           volume('error_detaching', SERVER)])
    with pytest.raises(volume_detach.VolumeDetachError) as err:
        run(session)
    assert 'it went error_detaching while it was being detached' in str(
        err.value)
    assert len(session.calls) == 3


def test_a_read_that_fails_once_is_read_again():
    session = FakeSession([volume('in-use', SERVER),
                           ks_exc.ConnectFailure('connection refused'),
                           volume('available')])
    said, _clock = run(session)
    assert 'detached' in said and len(session.calls) == 4


def test_no_block_storage_endpoint_is_said_so():
    session = FakeSession([ks_exc.EndpointNotFound('volumev3 not found')])
    with pytest.raises(volume_detach.VolumeDetachError) as err:
        run(session)
    assert str(err.value).startswith(
        'storage-1: read the volume from Cinder: volume %s: the service '
        'catalog has no endpoint for it' % VOLUME)


def test_a_volume_cinder_does_not_know_fails_naming_it():
    session = FakeSession([Response(404, {'itemNotFound': {
        'message': 'Volume %s could not be found.' % VOLUME}})])
    with pytest.raises(volume_detach.VolumeDetachError) as err:
        run(session)
    assert str(err.value).startswith(
        'storage-1: read the volume from Cinder: volume %s: NotFound: '
        % VOLUME)
