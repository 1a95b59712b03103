"""Fixtures for the script tests: stand-in Kubernetes tools on a PATH."""

import os

import pytest

from tests.functional.scripts.script_helpers import write_tool


@pytest.fixture
def fake_bin(tmp_path):
    """A PATH dir with stand-in kubeadm/kubelet/kubectl of version 1.35.2.

    Each stand-in appends its argv to ``argv.log`` so tests can prove no
    secret ever reaches a command line.
    """
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    log = tmp_path / 'argv.log'
    record = 'printf "%%s %%s\\n" "$(basename "$0")" "$*" >> %s\n' % log
    write_tool(bin_dir, 'kubeadm', record + '''
        case "$1 $2" in
            "version -o") echo v1.35.2 ;;
        esac
        ''')
    write_tool(bin_dir, 'kubelet', record + 'echo "Kubernetes v1.35.2"\n')
    write_tool(bin_dir, 'kubectl', record +
               'echo "Client Version: v1.35.2"\n')
    return bin_dir


@pytest.fixture
def script_env(fake_bin):
    return {'PATH': '%s:%s' % (fake_bin, os.environ['PATH'])}
