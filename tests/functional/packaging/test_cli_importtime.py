"""``k8s-mgmt`` starts without the driver's heavy dependencies: a fresh
interpreter imports the command line, builds its parser or prints a
built-in verb's help, and the test counts the modules it loaded (never
seconds; ``python -m benchmarks.importtime`` times them)."""

import argparse
import json
import subprocess
import sys

import pytest

from benchmarks import importtime
from k8s_mgmt.cli import main as cli_main
from k8s_mgmt.cli import package as package_cli
from k8s_mgmt.cli import plan as plan_cli
from k8s_mgmt.cli import validate as validate_cli
from k8s_mgmt_lab.cli import lab as lab_cli
from k8s_mgmt_lab.cli import lab_upgrade

# What the built-in verbs' modules loaded at start-up before they imported
# the driver's modules only where a verb runs.
HEAVY = ('cryptography', 'heatclient', 'invoke', 'keystoneauth1',
         'kubernetes', 'oslo_config', 'oslo_context', 'oslo_log',
         'oslo_serialization', 'oslo_utils', 'paramiko', 'requests',
         'stevedore', 'urllib3', 'yaml')
# A command line naming a built-in verb loads no plugin either.
NOT_FOR_A_BUILT_IN_VERB = HEAVY + ('k8s_mgmt_lab',)
VERBS = [name.rpartition('.')[2] for name in cli_main.COMMANDS]
# "lab exec" enters the VM through k8s_mgmt_lab.machines.vm, which logs
# with oslo.log; it loads none of these before it runs the command.
NOT_FOR_AN_EXEC = ('cryptography', 'heatclient', 'keystoneauth1',
                   'kubernetes', 'paramiko', 'requests', 'yaml')


def sub_commands(parser):
    """{name: parser} of ``parser``'s sub-commands."""
    return {name: sub for action in parser._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, sub in action.choices.items()}


def lab_verbs():
    """Every verb of ``k8s-mgmt lab``, read from its parser."""
    parser = argparse.ArgumentParser()
    lab_cli.register(parser.add_subparsers())
    return sorted(sub_commands(sub_commands(parser)['lab']))


LOADED = ('print(json.dumps(sorted(m for m in sys.modules '
          'if m.split(".")[0] in %r)))')


def loaded_by(code, names, *argv):
    """The modules of top-level packages ``names`` that ``code`` (run by
    ``python -c``, the output of its own commands dropped) loaded."""
    script = '\n'.join([
        'import contextlib, io, json, sys',
        'with contextlib.redirect_stdout(io.StringIO()):',
        '    try:',
        '        %s' % code,
        '    except SystemExit:',
        '        pass',
        LOADED % (tuple(names),)])
    proc = subprocess.run([sys.executable, '-c', script] + list(argv),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_importing_the_command_line_loads_no_heavy_module():
    code = ('import sys, k8s_mgmt.cli.main; print(sorted(m for m in '
            'sys.modules if m.split(".")[0] in %r))' % (HEAVY,))
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == '[]'


def test_the_parser_of_the_built_in_verbs_loads_no_heavy_module():
    assert loaded_by('from k8s_mgmt.cli import main; '
                     'main.build_parser(plugins=False)', HEAVY) == []


@pytest.mark.parametrize('verb', VERBS)
def test_a_built_in_verbs_help_loads_no_heavy_module_and_no_plugin(verb):
    assert loaded_by('from k8s_mgmt.cli import main; main.main(sys.argv[1:])',
                     NOT_FOR_A_BUILT_IN_VERB, verb, '--help') == []


# The lab's plugin (k8s-mgmt-lab) is as light: its verbs import the lab
# where they run.
@pytest.mark.parametrize('argv', [[], ['lab', 'status'], ['demo']],
                         ids=' '.join)
def test_the_parser_with_the_labs_verbs_loads_no_heavy_module(argv):
    # parser_for: every plugin's verbs for no verb, else the named one's.
    loaded = loaded_by('from k8s_mgmt.cli import main; '
                       'main.parser_for(sys.argv[1:])',
                       HEAVY + ('k8s_mgmt_lab',), *argv)
    assert [m for m in loaded if not m.startswith('k8s_mgmt_lab')] == []
    assert 'k8s_mgmt_lab.cli.%s' % (argv or ['lab'])[0] in loaded


@pytest.mark.parametrize('words', [['lab'], ['demo']] + [
    ['lab', verb] for verb in lab_verbs()], ids=' '.join)
def test_a_lab_verbs_help_loads_no_heavy_module(words):
    assert loaded_by('from k8s_mgmt.cli import main; main.main(sys.argv[1:])',
                     HEAVY, *words + ['--help']) == []


def _launched(tmp_path, names, argv, code=''):
    """The modules of ``names`` that ``k8s-mgmt`` with ``argv`` loaded
    until it ran a program, and the argv and environment it ran that
    with (``code`` runs first)."""
    record = tmp_path / 'launched.json'
    stub = ('subprocess.run = lambda argv, env=None, **kwargs: open(%r, '
            '"w").write(json.dumps([argv, env])) and '
            'subprocess.CompletedProcess(argv, 0)' % str(record))
    loaded = loaded_by('; '.join(filter(None, [
        'import subprocess', stub, code, 'from k8s_mgmt.cli import main',
        'assert main.main(sys.argv[1:]) == 0'])), names, *argv)
    return loaded, json.loads(record.read_text())


def test_lab_openstack_runs_the_client_with_no_heavy_module(tmp_path):
    # The lab's record, as lab up writes it; the client's virtualenv as
    # the cache would hold it (not built).
    heat = {'auth_url': 'http://127.0.0.1:15000/v3', 'username': 'admin',
            'password': 'pw', 'project_name': 'lab-k8t',
            'user_domain_name': 'Default', 'project_domain_name': 'Default',
            'region_name': 'lab-k8t'}
    (tmp_path / 'lab.json').write_text(json.dumps({
        'heat': heat, 'openstack': {'control_plane': str(tmp_path / 'cp')}}))
    loaded, (argv, env) = _launched(
        tmp_path, HEAVY, ['lab', '--state-dir', str(tmp_path), 'openstack',
                          'stack', 'list'],
        'from k8s_mgmt_lab.openstack import venvs; venvs.ensure = '
        'lambda cache_dir, name: "/venvs/" + name')
    assert loaded == []
    assert argv[0] == '/venvs/client/bin/python'
    assert argv[3:] == ['openstack', 'stack', 'list']
    assert (env['OS_REGION_NAME'], env['OS_PASSWORD']) == ('lab-k8t', 'pw')
    assert not (tmp_path / 'cp').exists()


def test_lab_exec_runs_the_command_with_no_heavy_module(tmp_path):
    (tmp_path / 'lab-registry.json').write_text(json.dumps({
        'network': None, 'vms': {'server-1': {
            'hostname': 'master-1', 'status': 'running', 'init_pid': 4242}}}))
    loaded, (argv, env) = _launched(
        tmp_path, NOT_FOR_AN_EXEC, ['lab', '--state-dir', str(tmp_path),
                                    'exec', 'master-1', '--', 'hostname'])
    assert loaded == []
    assert argv[:3] == ['nsenter', '--target', '4242']
    assert argv[-2:] == ['--', 'hostname'] and env['HOME'] == '/root'


@pytest.mark.parametrize('name', cli_main.COMMANDS)
def test_each_verb_module_is_named_after_its_verb(name):
    # main.parser_for picks a verb's module by its name.
    parser = cli_main.build_parser(commands=(name,), plugins=False)
    verbs = [action.choices for action in parser._actions
             if isinstance(action, argparse._SubParsersAction)]
    assert [list(choices) for choices in verbs] == [[name.rpartition('.')[2]]]


def test_the_parsers_names_agree_with_the_driver():
    from k8s_mgmt import package
    from k8s_mgmt import params
    from k8s_mgmt.cli import planning
    assert validate_cli.OPERATIONS == params.OPERATIONS
    assert plan_cli.OPERATIONS == tuple(sorted(planning.OPERATIONS))
    assert (package_cli.DRIVER_ARTIFACT, package_cli.TOSCA_META) == (
        package.DRIVER_ARTIFACT, package.TOSCA_META)


def test_the_lab_parsers_names_agree_with_the_driver():
    from k8s_mgmt import modify_request
    assert lab_upgrade.CERTIFICATE_ACTIONS == (
        modify_request.CERTIFICATE_ACTIONS)


def test_importtime_reads_the_top_level_imports():
    stderr = '\n'.join([
        'import time: self [us] | cumulative | imported package',
        'import time:        96 |         96 |   _io',
        'import time:       209 |        534 | _frozen_importlib_external',
        'import time:        40 |         40 |     yaml.error',
        'import time:       300 |        340 |   yaml',
        'import time:       504 |      30297 | k8s_mgmt.cli.main',
        'a warning line'])
    assert importtime.top_level(stderr) == {
        '_frozen_importlib_external': 534, 'k8s_mgmt.cli.main': 30297}


def test_importtime_profile_takes_the_median_of_the_runs():
    runs = ['import time: 1 | %d | k8s_mgmt.cli.main\n'
            'import time: 1 | %d | site' % (cli, site)
            for cli, site in ((10, 5), (30, 7), (20, 6))]
    prof = importtime.profile('cmd', runs)
    assert (prof.module_us, prof.total_us) == (20, 26)
    assert prof.heaviest == [('k8s_mgmt.cli.main', 20), ('site', 6)]
