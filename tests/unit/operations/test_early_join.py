"""The join data line of init -R, caught as it arrives (early_join)."""

import json

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import parallel
from k8s_mgmt.shared_phases import early_join

TOKEN = 'abcdef.0123456789abcdef'
HASH = 'sha256:' + 'ab' * 32
KEY = 'cd' * 32


def _line(**join):
    return early_join.LINE_PREFIX + json.dumps(join)


def test_the_first_line_of_the_report_gives_the_join_data():
    catch = early_join.JoinLine('master-1', 'init', need_key=True)
    catch('[k8s-mgmt] ==> kubeadm init')  # not the line: ignored
    catch(_line(token=TOKEN, ca_cert_hash=HASH, certificate_key=KEY))
    catch(', "vim": {"token": "later"}}')
    assert catch.arrived.is_set()
    join = catch.wait(parallel.Background(lambda: None))
    assert join.token.reveal() == TOKEN and join.ca_cert_hash == HASH
    assert join.certificate_key.reveal() == KEY
    # The whole report is still one JSON object.
    whole = '\n'.join([_line(token=TOKEN, ca_cert_hash=HASH),
                       ', "vim": {"token": "t"}}'])
    assert json.loads(whole)['join']['token'] == TOKEN


def test_a_bad_line_is_named_without_its_secrets():
    catch = early_join.JoinLine('master-1', 'init', need_key=True)
    catch(_line(token=TOKEN, ca_cert_hash=HASH))  # no key for a master
    with pytest.raises(exceptions.SSHError) as err:
        catch.wait(parallel.Background(lambda: None))
    assert "'certificate_key' is missing" in str(err.value)
    assert TOKEN not in str(err.value)
    garbled = early_join.JoinLine('master-1', 'init', need_key=False)
    garbled(early_join.LINE_PREFIX + '{"token": "%s", ' % TOKEN)
    with pytest.raises(exceptions.SSHError) as err:
        garbled.wait(parallel.Background(lambda: None))
    assert 'no JSON object' in str(err.value) and TOKEN not in str(err.value)


def test_an_init_that_fails_first_gives_its_own_error():
    catch = early_join.JoinLine('master-1', 'init', need_key=False)

    def init():
        try:
            raise exceptions.RemoteCommandError(
                node='master-1', step='init', status=1, stderr='boom')
        finally:
            catch.arrived.set()  # as early_join's run_first does
    running = parallel.Background(init)
    with pytest.raises(exceptions.RemoteCommandError):
        catch.wait(running)


def test_an_init_that_ends_without_the_line_is_an_output_error():
    catch = early_join.JoinLine('master-1', 'init', need_key=False)

    def init():
        catch.arrived.set()
        return 'done'
    with pytest.raises(exceptions.SSHError,
                       match='no join data line before the end'):
        catch.wait(parallel.Background(init))
