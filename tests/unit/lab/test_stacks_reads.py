"""How the lab's Heat client sends its requests: reads are tried again
when the server closed the kept-alive connection without an answer;
writes are not (Heat might have acted on them)."""

from k8s_mgmt_lab.openstack import stacks


class RecordingSession(object):
    def __init__(self):
        self.calls = []

    def request(self, url, method, **kwargs):
        self.calls.append((method, url, kwargs))
        return None


def test_reads_retry_on_a_dropped_connection_and_writes_do_not():
    session = RecordingSession()
    heat = stacks.Stacks(session, region_name='lab-x')
    heat._call('GET', '/stacks/s/1')
    heat._call('POST', '/stacks', json={})
    heat._call('GET', '/stacks/s/1', connect_retries=0)
    (get_m, _, get_kw), (post_m, _, post_kw), (_, _, own_kw) = session.calls
    assert get_kw['connect_retries'] == stacks.READ_RETRIES > 0
    assert 'connect_retries' not in post_kw
    assert own_kw['connect_retries'] == 0
    assert get_kw['headers'] == {'X-Region-Name': 'lab-x'}
