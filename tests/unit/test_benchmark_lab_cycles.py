"""benchmarks.lab_cycles without a lab: a failed command ends its cycle
(the lab taken down), the count of failed cycles is printed and sets the
exit status."""

import subprocess

from benchmarks import lab_cycles


def _fake_lab(fail_on):
    calls = []

    def lab(*args, env=None):
        calls.append(args[0])
        code = 1 if (args[0], len(calls)) in fail_on else 0
        return subprocess.CompletedProcess(args, code, '',
                                           'line 1\nlab up failed: boom\n')
    return lab, calls


def test_every_cycle_ran_and_none_failed(monkeypatch, capsys):
    lab, calls = _fake_lab(set())
    monkeypatch.setattr(lab_cycles, 'lab', lab)
    assert lab_cycles.main(['--count', '2']) == 0
    assert calls == ['down'] + ['up', 'instantiate', 'down'] * 2
    out = capsys.readouterr().out
    assert 'failed cycles: 0 of 2' in out and out.count(' ok\n') == 2


def test_a_failed_up_takes_the_lab_down_and_is_counted(monkeypatch, capsys):
    # The 2nd call is the first cycle's up.
    lab, calls = _fake_lab({('up', 2)})
    monkeypatch.setattr(lab_cycles, 'lab', lab)
    assert lab_cycles.main(['--count', '2']) == 1
    assert calls == ['down', 'up', 'down', 'up', 'instantiate', 'down']
    out = capsys.readouterr().out
    assert 'up exited 1: line 1 | lab up failed: boom' in out
    assert 'failed cycles: 1 of 2' in out
