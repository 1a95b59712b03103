"""Helpers for the tests that run scripts/*.sh as subprocesses.

The scripts run for real; only the Kubernetes binaries are stand-ins (tiny
shell scripts on a private PATH) because no kubeadm or kubectl build exists
here. Nothing is written outside pytest's temporary directories.
"""

import os
import pathlib
import shutil
import subprocess
import textwrap

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
INSTALL = REPO / 'k8s_mgmt' / 'scripts' / 'install_k8s_cluster.sh'
CONFIGURE_LB = REPO / 'k8s_mgmt' / 'scripts' / 'configure_lb.sh'
CONFIGURE_EXTERNAL_LB = (REPO / 'k8s_mgmt' / 'scripts' /
                         'configure_external_lb.sh')
LIBRARY = REPO / 'k8s_mgmt' / 'scripts' / 'k8s_mgmt_lib.sh'

TOKEN = 'abcdef.0123456789abcdef'
CERT_KEY = '3f' * 32
CA_HASH = 'sha256:' + 'c4' * 32
PROXY_PASSWORD = 'pr0xyPa55'
PROXY_URL = 'http://proxyuser:%s@proxy.example:3128' % PROXY_PASSWORD


def run_script(script, args, stdin='', env=None, timeout=30, cwd=None):
    """Run a script with bash; returns the CompletedProcess (text)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(['bash', str(script)] + list(args), input=stdin,
                          capture_output=True, text=True, env=full_env,
                          timeout=timeout, check=False, cwd=cwd)


def write_tool(bin_dir, name, body):
    path = bin_dir / name
    path.write_text('#!/bin/bash\n' + textwrap.dedent(body))
    path.chmod(0o755)
    return path


def secret_file(tmp_path, text, mode=0o600, name='secrets'):
    path = tmp_path / name
    path.write_text(text)
    path.chmod(mode)
    return path


def needs(tool):
    return pytest.mark.skipif(shutil.which(tool) is None,
                              reason='%s is not installed' % tool)
