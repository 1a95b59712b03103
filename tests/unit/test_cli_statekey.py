"""``k8s-mgmt statekey create|id``: one key file for every conductor."""

import os
import stat

from k8s_mgmt import conf
from k8s_mgmt.cli import main


def _run(capsys, *argv):
    status = main.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_create_then_id_and_never_a_second_key(capsys, tmp_path):
    path = str(tmp_path / 'tacker' / 'state.key')
    status, out, _ = _run(capsys, 'statekey', 'create', '--file', path)
    assert status == 0 and 'copy it (mode 0600) to every' in out
    made = out.split()[3]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert _run(capsys, 'statekey', 'id', '--file', path)[1] == made + '\n'
    status, _, err = _run(capsys, 'statekey', 'create', '--file', path)
    assert status == 1 and 'exists already' in err
    assert _run(capsys, 'statekey', 'id', '--file', path)[1] == made + '\n'


def test_the_configured_file_is_the_default(capsys, tmp_path):
    path = str(tmp_path / 'state.key')
    config = tmp_path / 'tacker.conf'
    config.write_text('[k8s_mgmt]\nstate_key_file = %s\n' % path)
    try:
        status, out, _ = _run(capsys, 'statekey', 'create', '--config-file',
                              str(config))
    finally:
        conf.CONF.reset()
        conf.CONF.clear()
    assert status == 0 and os.path.exists(path)
    status, _, err = _run(capsys, 'statekey', 'id', '--file',
                          str(tmp_path / 'missing.key'))
    assert status == 1 and 'does not exist' in err
