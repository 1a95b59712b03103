"""The lab's stand-ins start light: a lab join runs about 15 of them per VM
and 8 parallel joins share 2 cores, so the commands that only print (or only
manage a pid file) must not import cryptography, PyYAML or the HTTP stack.
Run exactly as the lab's wrappers run them (python -S -P, explicit path)."""

import os
import subprocess
import sys

import pytest

from k8s_mgmt_lab import kube

HEAVY = ('cryptography', 'yaml', 'http.client', 'ssl')


def imported_modules(module, *args):
    env = dict(os.environ, PYTHONPATH=kube.python_path())
    argv = kube.python_argv(module, *args)
    proc = subprocess.run([argv[0], '-X', 'importtime'] + argv[1:], env=env,
                          capture_output=True, text=True, timeout=60)
    names = {line.rsplit('|', 1)[1].strip() for line in
             proc.stderr.splitlines() if line.startswith('import time:')}
    return proc, names


@pytest.mark.parametrize('command', [
    ('kubeadm', 'version', '-o', 'short'), ('kubectl', 'version', '--client'),
    ('kubelet', '--version'), ('systemctl', 'is-enabled', 'kubelet')])
def test_printing_commands_import_nothing_heavy(command):
    proc, names = imported_modules(*command)
    # is-enabled answers 1 for "disabled"; anything else is a crash.
    assert proc.returncode in (0, 1), proc.stderr[-500:]
    assert 'k8s_mgmt_lab.kube' in names and proc.stdout
    assert not names & set(HEAVY)


def test_site_is_skipped_and_the_path_is_explicit():
    env = dict(os.environ, PYTHONPATH=kube.python_path())
    code = 'import sys, yaml, cryptography; print("site" in sys.modules)'
    argv = [sys.executable] + list(kube.PYTHON_FLAGS) + ['-c', code]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == 'False'


def test_the_layer_brings_the_stand_ins_bytecode(tmp_path):
    """Every stand-in start would compile its modules again otherwise: the
    VMs see the source tree read-only."""
    import importlib.util
    import shutil
    from k8s_mgmt_lab.kube import layer
    package = tmp_path / 'pkg'
    package.mkdir()
    (package / 'mod.py').write_text('VALUE = 1\n')
    layer.compile_standins([str(package)])
    assert os.path.exists(importlib.util.cache_from_source(
        str(package / 'mod.py')))
    # write_layer compiles this tree's stand-ins and the driver's modules.
    for name in ('k8s_mgmt_lab.kube.kubectl', 'k8s_mgmt.polling'):
        cached = importlib.util.cache_from_source(
            importlib.util.find_spec(name).origin)
        shutil.rmtree(os.path.dirname(cached), ignore_errors=True)
    layer.write_layer(str(tmp_path / 'layer'))
    for name in ('k8s_mgmt_lab.kube.kubectl', 'k8s_mgmt.polling'):
        assert os.path.exists(importlib.util.cache_from_source(
            importlib.util.find_spec(name).origin)), name
    wrapper = (tmp_path / 'layer' / 'usr/local/bin/systemctl').read_text()
    assert 'PYTHONPYCACHEPREFIX' not in wrapper
    assert 'PYTHONPYCACHEPREFIX' not in layer.package_payload()(
        'kubectl', '1.35.1')
