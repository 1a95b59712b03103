"""The lab says in one line what the machine lacks, before making anything."""

import os
import shutil

from k8s_mgmt.cli import main as cli_main
from k8s_mgmt_lab.machines import prereq


def test_not_root_is_named(monkeypatch):
    monkeypatch.setattr(os, 'geteuid', lambda: 1000)
    assert any('needs root' in p for p in prereq.problems())


def test_missing_packages_are_named_with_the_apt_command(monkeypatch):
    monkeypatch.setattr(os, 'geteuid', lambda: 0)
    real_which = shutil.which
    monkeypatch.setattr(shutil, 'which', lambda name: None
                        if name in ('sudo', '/usr/sbin/sshd')
                        else real_which(name))
    real_exists = os.path.exists
    monkeypatch.setattr(os.path, 'exists', lambda p: False
                        if p == '/usr/sbin/sshd' else real_exists(p))
    [problem] = prereq.problems()
    assert 'openssh-server' in problem and 'sudo' in problem
    assert 'apt-get install' in problem


def test_lab_up_as_non_root_is_one_line_and_exit_1(monkeypatch, capsys):
    monkeypatch.setattr(os, 'geteuid', lambda: 1000)
    status = cli_main.main(['lab', '--state-dir', '/nonexistent/lab', 'up',
                            '--flavour', 'simple'])
    err = capsys.readouterr().err
    assert status == 1
    assert err.count('\n') == 1 and 'needs root' in err
    assert not os.path.exists('/nonexistent/lab')
