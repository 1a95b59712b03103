"""The v2 management-script protocol as Tacker's v2 conductor drives it:
``python <script>`` with a pickled dict on stdin; a pickled dict on stdout
on success; on failure exit status 1 and one line on stderr, which Tacker
copies verbatim into the operation's error.detail."""

import concurrent.futures
import os
import pickle
import stat
import subprocess
import sys
import textwrap

import pytest

from k8s_mgmt.v2 import hooks as hooks_mod
from k8s_mgmt.v2 import shim

SHIM = shim.__file__


def script_dict(operation, **extra):
    found = {'operation': operation, 'request': {'flavourId': 'simple'},
             'vnf_instance': {'id': 'c1b6e0d2-9c1c-4f4e-a9a5-6c2d0e0b1a11'},
             'grant_request': None, 'grant_response': None,
             'tmp_csar_dir': '/tmp/csar', 'user_script_err_handling_data': {}}
    found.update(extra)
    return found


def run(argv, data, tmp_path):
    """The script as the conductor runs it, its configuration (state dir,
    state key) and log under ``tmp_path``: nothing of it on the machine."""
    log = tmp_path / 'v2.log'
    conf = tmp_path / 'tacker.conf'
    conf.write_text('[k8s_mgmt]\nstate_dir = %s\nstate_key_file = %s\n'
                    % (tmp_path / 'state', tmp_path / 'state.key'))
    proc = subprocess.run(
        argv, input=data, capture_output=True, timeout=60,
        env=dict(os.environ, K8S_MGMT_V2_LOG=str(log),
                 K8S_MGMT_CONFIG_FILES=str(conf)))
    return proc, log


def run_shim(data, tmp_path):
    # As the conductor runs it: its interpreter, the script's path.
    return run([sys.executable, SHIM], data, tmp_path)


def test_a_hook_with_nothing_to_do_answers_an_empty_pickle(tmp_path):
    proc, log = run_shim(pickle.dumps(script_dict(
        'change_external_connectivity_start')), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert pickle.loads(proc.stdout) == {}
    assert proc.stderr == b''
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
    assert 'v2 hook change_external_connectivity_start' in log.read_text()


@pytest.mark.parametrize('operation, request_body, words', [
    ('change_current_package_start', {'additionalParams': {
        'upgrade_type': 'RollingUpdate', 'vdu_params': [],
        'kubernetes_version': '1.x'}},
     'additionalParams.kubernetes_version: not a Kubernetes version'),
    ('modify_information_start', {'metadata': {
        'k8sMgmtUpgrade': 'latest'}},
     'metadata.k8sMgmtUpgrade: not a Kubernetes version'),
    ('modify_information_start', {'metadata': {
        'k8sMgmtCertificates': 'rotate'}},
     'metadata.k8sMgmtCertificates: expected "check" or "renew"'),
])
def test_a_bad_value_fails_in_one_line_naming_it(tmp_path, operation,
                                                 request_body, words):
    proc, _ = run_shim(pickle.dumps(script_dict(
        operation, request=request_body)), tmp_path)
    assert proc.returncode == 1
    # Nothing for Tacker beside the error (no data of a refusal).
    assert proc.stdout == b''
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and words in lines[0], lines
    assert lines[0].startswith('Invalid parameters: ')


def test_a_patch_without_an_upgrade_changes_nothing(tmp_path):
    # A rename (or any PATCH without k8sMgmtUpgrade) passes both hooks.
    for operation in ('modify_information_start', 'modify_information_end'):
        proc, _ = run_shim(pickle.dumps(script_dict(operation, request={
            'vnfInstanceName': 'renamed'})), tmp_path)
        assert proc.returncode == 0, proc.stderr


def test_an_lcm_hook_without_a_vim_connection_fails_in_one_line(tmp_path):
    # Tacker's v2 conductor always sends the instance's one OpenStack VIM
    # connection; without it nothing can be read or built. Two hooks, each
    # a process importing the driver, run side by side.
    def one(operation):
        data = script_dict(operation, request={
            'flavourId': 'simple', 'type': 'SCALE_IN',
            'additionalParams': {'k8s_cluster_installation_param': {}}})
        where = tmp_path / operation
        where.mkdir()
        return run_shim(pickle.dumps(data), where)[0]
    operations = ('instantiate_end', 'heal_start')
    with concurrent.futures.ThreadPoolExecutor(len(operations)) as pool:
        procs = list(pool.map(one, operations))
    for proc in procs:
        assert proc.returncode == 1, proc.stderr
        assert proc.stdout == b''
        lines = proc.stderr.decode().splitlines()
        assert len(lines) == 1 and 'vimConnectionInfo' in lines[0], lines


@pytest.mark.parametrize('data, words', [
    (b'', 'no input on stdin'),
    (b'not a pickle', 'stdin is not a pickled dict'),
    (pickle.dumps(['a', 'list']), 'stdin holds a list'),
    (pickle.dumps({'operation': 'heal_end'}),
     'the conductor\'s data lacks vnf_instance, request'),
    (pickle.dumps(script_dict('reboot_end')), '\'reboot_end\' is no v2 hook'),
])
def test_bad_input_is_one_line(tmp_path, data, words):
    proc, _ = run_shim(data, tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and words in lines[0], lines


def test_each_operation_hook_is_one_the_operations_run():
    from k8s_mgmt.v2 import operations
    from k8s_mgmt.v2 import modify
    assert set(hooks_mod.OPERATION_HOOKS) == set(operations.OPERATIONS)
    assert set(hooks_mod.MODIFY_HOOKS) == set(modify.OPERATIONS)


def test_the_every_hook_tacker_calls_is_in_the_table():
    table = hooks_mod.table()
    for operation in ('instantiate', 'scale', 'heal', 'terminate',
                      'modify_information', 'change_external_connectivity',
                      'change_current_package'):
        for when in ('start', 'end'):
            assert '%s_%s' % (operation, when) in table
    for operation in ('instantiate', 'scale', 'change_external_connectivity',
                      'change_current_package'):
        assert '%s_rollback_start' % operation in table


PROGRAM = textwrap.dedent('''
    import sys
    from k8s_mgmt import secrets
    from k8s_mgmt.v2 import script

    def chatty(script_dict):
        print('a library talking on stdout')
        sys.stdout.flush()
        return {'vnf_instance': {'metadata': {'k8sMgmt': 'v1'}}}

    PASSWORD = secrets.Secret('S3cr3t-pass')

    def leaky(script_dict):
        raise RuntimeError('login with S3cr3t-pass refused\\nsecond line')

    def stopped(script_dict):
        from k8s_mgmt.shared_phases import upgrade_plan
        raise upgrade_plan.UpgradeStopped(
            target='1.36.1', node='worker-2', step='Drain worker-2',
            reason='login with S3cr3t-pass refused', done='master-1',
            left='worker-2')

    script.exit_with(script.main({'chatty': chatty, 'leaky': leaky,
                                  'stopped': stopped}))
''')


def test_stdout_carries_the_pickle_alone(tmp_path):
    proc, log = run([sys.executable, '-c', PROGRAM],
                    pickle.dumps(script_dict('chatty')), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert pickle.loads(proc.stdout) == {
        'vnf_instance': {'metadata': {'k8sMgmt': 'v1'}}}
    assert 'a library talking on stdout' in log.read_text()


def test_a_crash_is_one_line_without_secret_or_traceback(tmp_path):
    proc, log = run([sys.executable, '-c', PROGRAM],
                    pickle.dumps(script_dict('leaky')), tmp_path)
    assert proc.returncode == 1
    text = proc.stderr.decode()
    assert text.count('\n') == 1 and 'Traceback' not in text
    assert 'S3cr3t-pass' not in text and 'RuntimeError: login with' in text
    assert 'Traceback' in log.read_text()
    assert 'S3cr3t-pass' not in log.read_text()


def test_a_stopped_upgrade_tells_tacker_where_beside_its_line(tmp_path):
    # Tacker's v2 conductor reads the pickle before the exit status and
    # keeps its user_script_err_handling_data with the operation's error.
    proc, _ = run([sys.executable, '-c', PROGRAM],
                  pickle.dumps(script_dict('stopped')), tmp_path)
    assert proc.returncode == 1
    assert pickle.loads(proc.stdout) == {'user_script_err_handling_data': {
        'k8sMgmtUpgrade': {'target': '1.36.1', 'stoppedAt': 'worker-2',
                           'step': 'Drain worker-2', 'done': 'master-1',
                           'left': 'worker-2'}}}
    line = proc.stderr.decode()
    assert line.startswith('Upgrade to 1.36.1 stopped at worker-2')
    assert 'S3cr3t-pass' not in line


def test_the_conductors_config_arguments_are_read_from_its_command_line(
        tmp_path):
    from k8s_mgmt.v2 import script
    # A stand-in conductor: its argv names config files, one relative to
    # its working directory, one in the --opt=value form.
    proc = subprocess.Popen(
        [sys.executable, '-c',
         'import sys; print("ready", flush=True); sys.stdin.read()',
         '--config-file', 'tacker.conf', '--config-file=/etc/c-1.conf',
         '--config-dir', '/etc/tacker/conf.d', '--debug'],
        cwd=str(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        # Started (exec'd), so /proc shows its own command line.
        assert proc.stdout.readline() == b'ready\n'
        assert script.conductor_config_args(proc.pid, environ={}) == [
            '--config-file', str(tmp_path / 'tacker.conf'),
            '--config-file', '/etc/c-1.conf',
            '--config-dir', '/etc/tacker/conf.d']
    finally:
        proc.communicate(b'')
    assert script.config_args_of(proc.pid) == []
    # Named by the operator: those files, whatever runs the script.
    assert script.conductor_config_args(proc.pid, environ={
        script.CONFIG_ENV: '/etc/tacker/tacker.conf:/etc/tacker/k.conf'}) \
        == ['--config-file', '/etc/tacker/tacker.conf',
            '--config-file', '/etc/tacker/k.conf']


def test_a_title_in_place_of_the_arguments_is_read_too(tmp_path):
    # cotyledon's master replaces its arguments with one title that holds
    # them: "tacker-conductor: master process [argv joined]". A process
    # whose only argument is such a title shows the same /proc cmdline.
    from k8s_mgmt.v2 import script
    title = ('tacker-conductor: master process [/v/bin/python -c from '
             '--config-file /etc/t.conf --config-file=c-2.conf]')
    proc = subprocess.Popen(['bash', '-c', 'exec -a "$0" cat', title],
                            cwd=str(tmp_path), stdin=subprocess.PIPE)
    try:
        for _ in script_poll():
            if (script._words(proc.pid) or [''])[0] == 'tacker-conductor:':
                break
        assert script.config_args_of(proc.pid) == [
            '--config-file', '/etc/t.conf',
            '--config-file', str(tmp_path / 'c-2.conf')]
    finally:
        proc.communicate(b'')


def script_poll():
    from k8s_mgmt.polling import Poll
    return Poll(10.0, first=0.01, maximum=0.1)
