"""``k8s-mgmt certs check``: the recorded certificates, from this host's
state cache or from the sealed metadata ``openstack vnflcm show`` prints;
exit status 3 when one expires soon."""

import datetime
import json

import pytest

from k8s_mgmt import shared_state
from k8s_mgmt import state as state_mod
from k8s_mgmt import state_key
from k8s_mgmt.cli import main as cli_main
from tests.helpers.driver_paths import driver_paths

INSTANCE = '5d7c2f1e-0b1c-4b53-8e8e-1d2f3a4b5c6d'


def _in(days):
    return (datetime.datetime.now(datetime.timezone.utc) +
            datetime.timedelta(days=days)).isoformat()


RECORD = {'certificates': {
    'master-1': {'apiserver': _in(300), 'ca': _in(3600)},
    'master-2': {'apiserver': _in(12), 'ca': _in(3600)}},
    'certificates_read': '2026-11-28T10:00:00+00:00'}


@pytest.fixture
def paths(tmp_path):
    with driver_paths(tmp_path / 'state', tmp_path / 'state.key'):
        state_key.create(str(tmp_path / 'state.key'))
        yield tmp_path


def test_the_state_cache_shows_each_master_and_what_expires(paths,
                                                            capsys):
    state_mod.InstanceState(INSTANCE).write_json(state_mod.CLUSTER, RECORD)
    status = cli_main.main(['certs', 'check', INSTANCE])
    out = capsys.readouterr().out
    assert status == 3, out
    lines = out.splitlines()
    assert lines[0].split()[:3] == ['MASTER', 'CERTIFICATE', 'EXPIRES']
    assert [line.split()[0::4] for line in lines[1:5]] == [
        ['master-1', 'ok'], ['master-1', 'ok'], ['master-2', 'renew'],
        ['master-2', 'ok']]
    assert 'read them on 2026-11-28T10:00:00+00:00' in lines[-1]
    # Nothing within 5 days: all is well.
    assert cli_main.main(['certs', 'check', INSTANCE, '--days', '5']) == 0


def test_the_sealed_metadata_of_vnflcm_show(paths, capsys, tmp_path):
    key = state_key.load()
    sealer = shared_state.SharedState(
        state_mod.InstanceState(INSTANCE, base_dir=str(tmp_path / 'x')),
        None, key)
    shown = {'ID': INSTANCE, 'VNF Instance Metadata': {
        shared_state.METADATA_KEY: sealer.seal({
            state_mod.CLUSTER: json.dumps(RECORD)})}}
    saved = tmp_path / 'show.json'
    saved.write_text(json.dumps(shown))
    status = cli_main.main(['certs', 'check', INSTANCE, '--instance',
                            str(saved), '--json'])
    found = json.loads(capsys.readouterr().out)
    assert status == 3
    assert [(r['master'], r['certificate'], r['state']) for r in found] == [
        ('master-1', 'apiserver', 'ok'), ('master-1', 'ca', 'ok'),
        ('master-2', 'apiserver', 'renew'), ('master-2', 'ca', 'ok')]


def test_nothing_recorded_says_how_to_read_them(paths, capsys, tmp_path):
    assert cli_main.main(['certs', 'check', INSTANCE]) == 1
    err = capsys.readouterr().err
    assert 'no certificates are recorded' in err
    assert '"k8sMgmtCertificates": "check"' in err
    bad = tmp_path / 'other.json'
    bad.write_text(json.dumps({'VNF Instance Metadata': {
        shared_state.METADATA_KEY: 'v1.other.token'}}))
    assert cli_main.main(['certs', 'check', INSTANCE, '--instance',
                          str(bad)]) == 1
    assert 'was sealed with the state key other' in capsys.readouterr().err
