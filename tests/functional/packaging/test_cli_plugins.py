"""Verbs from other distributions, and how ``k8s-mgmt`` reports failures.

A real entry point is registered for the test: a ``*.dist-info`` directory
with an ``entry_points.txt`` in the ``k8s_mgmt.cli`` group, next to the
module it names, on PYTHONPATH of a ``python -m k8s_mgmt`` subprocess; no
mock of importlib.metadata. The plugin's verb fails in each way a lab verb
can, and the test reads what the command prints and its exit status.
"""

import os
import subprocess
import sys
import textwrap

import pytest

PLUGIN = textwrap.dedent('''
    """A k8s-mgmt verb for the tests."""
    import os

    from k8s_mgmt.cli import errors
    from k8s_mgmt import exceptions


    class PluginError(errors.UserError):
        """Like the lab's LabError."""


    def register(subparsers):
        verb = subparsers.add_parser('plugged', help='a verb from a plugin')
        verb.add_argument('how')
        verb.set_defaults(func=run)


    def run(args):
        log = os.environ['PLUGIN_LOG']
        if args.how == 'ok':
            print('plugged in')
            return 0
        if args.how == 'user':
            raise PluginError('the plugin refused')
        if args.how == 'interrupt':
            raise KeyboardInterrupt()
        with errors.reported('plug', log):
            if args.how == 'driver':
                raise exceptions.MgmtDriverError(
                    error_message='first line\\nsecond line')
            if args.how == 'bug':
                raise ValueError('not a number')
        return 0
    ''')
ENTRY_POINTS = '[k8s_mgmt.cli]\nplugged = k8s_test_plugin\n'
METADATA = 'Metadata-Version: 2.1\nName: k8s-test-plugin\nVersion: 1.0\n'


@pytest.fixture
def plugged(tmp_path):
    site = tmp_path / 'site'
    info = site / 'k8s_test_plugin-1.0.dist-info'
    info.mkdir(parents=True)
    (info / 'METADATA').write_text(METADATA)
    (info / 'entry_points.txt').write_text(ENTRY_POINTS)
    (site / 'k8s_test_plugin.py').write_text(PLUGIN)
    log = tmp_path / 'plugin.log'

    def run(*argv, with_plugin=True):
        env = dict(os.environ, PLUGIN_LOG=str(log))
        if with_plugin:
            env['PYTHONPATH'] = os.pathsep.join(
                [str(site)] + [p for p in env.get('PYTHONPATH', '').split(
                    os.pathsep) if p])
        return subprocess.run([sys.executable, '-m', 'k8s_mgmt'] +
                              list(argv), capture_output=True, text=True,
                              env=env, timeout=120, cwd=str(tmp_path))
    run.log = log
    return run


def test_a_plugin_verb_is_there_only_when_its_distribution_is(plugged):
    assert 'plugged' in plugged('--help').stdout
    assert 'plugged' not in plugged('--help', with_plugin=False).stdout
    done = plugged('plugged', 'ok')
    assert (done.returncode, done.stdout) == (0, 'plugged in\n')


def test_a_user_error_of_a_plugin_is_one_line_and_status_1(plugged):
    done = plugged('plugged', 'user')
    assert (done.returncode, done.stderr) == (
        1, 'k8s-mgmt: error: the plugin refused\n')


def test_a_driver_error_is_one_line_and_the_rest_goes_to_the_log(plugged):
    done = plugged('plugged', 'driver')
    assert done.returncode == 1
    assert done.stderr == (
        'k8s-mgmt: error: plug failed: An error occurred in the Kubernetes '
        'MgmtDriver: first line (1 more lines in %s)\n' % plugged.log)
    assert 'second line' in plugged.log.read_text()


def test_a_bug_is_named_and_its_traceback_goes_to_the_log(plugged):
    done = plugged('plugged', 'bug')
    assert done.returncode == 1
    assert done.stderr == (
        'k8s-mgmt: error: plug failed: ValueError: not a number '
        '(traceback in %s)\n' % plugged.log)
    assert 'Traceback' in plugged.log.read_text()


def test_an_interrupt_exits_130(plugged):
    done = plugged('plugged', 'interrupt')
    assert (done.returncode, done.stderr) == (130, 'k8s-mgmt: interrupted\n')
