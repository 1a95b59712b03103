"""The benchmarks' pure logic: floors, tables, targets, exit status, the
wrong-password checks and the plot's fallback. No lab, no root."""

import json
import os

import pytest

from benchmarks import cpu
from benchmarks import plot
from benchmarks import report
from benchmarks import wrong_password
from k8s_mgmt import exceptions


def row(name='op', wall=1.0, floor=1.0, ssh=1, rss=100.0):
    return report.Row(name, wall, floor, ssh, rss)


def points(*walls, floor=5.0):
    return [report.SweepPoint(n, w, floor)
            for n, w in zip((1, 2, 4, 8, 16, 32), walls)]


def test_floor_single_master_counts_one_join_whatever_the_workers():
    assert report.instantiate_floor(3, 2, 0.1) == pytest.approx(5.1)
    assert report.instantiate_floor(3, 2, 0.1, workers=32) == \
        pytest.approx(5.1)


def test_floor_ha_masters_join_one_at_a_time():
    assert report.instantiate_floor(3, 6, 0.1, masters=3, workers=2) == \
        pytest.approx(15.1)
    assert report.instantiate_floor(3, 2, 0.1, masters=2, workers=2) == \
        pytest.approx(5.1)


def test_floor_ha_short_joins_wait_for_etcd_health_interval():
    # The second master joins; each later one ends no sooner than the
    # health interval after the one before (its member add waits for it,
    # and the rest of its join follows the add).
    assert report.instantiate_floor(3, 2, 0.1, masters=3, workers=2) == \
        pytest.approx(3 + 2 + report.ETCD_HEALTH_INTERVAL + 0.1)
    assert report.instantiate_floor(3, 2, 0.1, masters=5, workers=2) == \
        pytest.approx(3 + 2 + 3 * report.ETCD_HEALTH_INTERVAL + 0.1)


def test_floor_without_workers_is_the_init():
    assert report.instantiate_floor(3, 2, 0.1, workers=0) == \
        pytest.approx(3.1)


def test_ratio_without_floor_is_infinite():
    assert row(floor=0).ratio == float('inf')


def test_table_has_a_header_and_a_line_per_row():
    lines = report.table([row('instantiate simple (16 workers)', 6.0, 5.0,
                              1, 123.4)]).splitlines()
    assert lines[0].split() == ['operation', 'wall', 's', 'floor', 's',
                                'ratio', 'ssh/node', 'RSS', 'MB']
    assert lines[1].split()[-5:] == ['6.00', '5.00', '1.20', '1', '123']


def test_sweep_table_ratios_against_the_fewest_workers():
    lines = report.sweep_table(points(4.0, 5.0, 8.0)).splitlines()
    assert 'x 1 worker' in lines[0]
    assert [line.split()[-1] for line in lines[1:]] == ['1.00', '1.25',
                                                        '2.00']


def test_sweep_target_compares_most_to_fewest_workers():
    text, holds = report.sweep_target(points(10, 11, 12, 12, 12, 13))
    assert holds and '32 workers' in text and '1.30 x' in text
    assert report.sweep_target(points(10, 11, 12, 12, 12, 13.1))[1] is \
        False


def test_sweep_target_needs_two_points():
    assert report.sweep_target(points(10))[1] is None


def wrong(seconds=0.5, problems=()):
    return report.WrongPassword(16, seconds, 'NodesFailed: ...',
                                wrong_password.PHASE, list(problems))


def test_targets_all_met():
    held = report.targets([row(wall=1.1)], points(10, 12), wrong())
    assert [h for _t, h in held] == [True, True, True, True]
    assert report.exit_status(held) == 0


def test_targets_not_met_exit_2_but_smoke_0():
    held = report.targets([row(wall=1.3, ssh=2)], points(10, 14),
                          wrong(seconds=3.5))
    assert [h for _t, h in held] == [False, False, False, False]
    assert report.exit_status(held) == 2
    assert report.exit_status(held, smoke=True) == 0


def test_wrong_password_with_a_problem_is_not_met():
    assert report.wrong_password_target(wrong(problems=['x']))[1] is False


def test_unmeasured_targets_say_so_and_fail_a_full_run():
    held = report.targets([], [], None)
    assert all(h is None for _t, h in held)
    assert report.target_lines(held).count('not measured') == len(held)
    assert report.exit_status(held) == 2


def test_failure_exits_1_even_in_smoke():
    held = report.targets([row()], points(1, 1), wrong())
    assert report.exit_status(held, [('sweep', 'boom')], smoke=True) == 1


def test_rss_target_only_when_asked():
    assert len(report.targets([row()])) == 4
    held = report.targets([row()], rss=row('rss', rss=150),
                          rss_wanted=True)
    assert held[-1][1] is True and 'rss' in held[-1][0]
    assert report.targets([row()], rss=row(rss=250),
                          rss_wanted=True)[-1][1] is False
    assert report.targets([row()], rss_wanted=True)[-1][1] is None


def test_short_error_keeps_the_first_lines():
    error = 'NodesFailed: 4 nodes:\n- a\n- b\n- c'
    assert report.short_error(error, lines=2) == [
        'NodesFailed: 4 nodes:', '- a', '... 2 more line(s) like these']
    assert report.short_error('one line') == ['one line']


def test_wrong_password_line_shows_phase_and_problems():
    text = report.wrong_password_line(wrong(problems=['no phase']))
    assert 'failed after 0.50 s' in text
    assert wrong_password.PHASE in text
    assert 'PROBLEM: no phase' in text


def test_target_lines_words():
    text = report.target_lines([('a', True), ('b', False), ('c', None)])
    assert text.splitlines() == ['target: a: met', 'target: b: NOT met',
                                 'target: c: not measured']


# -- wrong password ----------------------------------------------------------

def body():
    params = {'master_node': {'username': 'ubuntu', 'password': 'ubuntu'},
              'worker_node': {'username': 'ubuntu', 'password': 'ubuntu'}}
    return {'additionalParams': {wrong_password.PARAMS: params}}


def test_with_password_changes_a_copy():
    original = body()
    changed = wrong_password.with_password(original, 'nope')
    params = changed['additionalParams'][wrong_password.PARAMS]
    assert params['master_node']['password'] == 'nope'
    assert params['worker_node']['password'] == 'nope'
    assert original == body()


def test_failed_phase_is_the_last_logged_failure():
    messages = ['[i] ==> Connect to every node',
                '[i] <== Read the topology from Heat: FAILED after 0.1 s: x',
                '[i] <== Connect to every node: FAILED after 0.2 s: y']
    assert wrong_password.failed_phase(messages) == wrong_password.PHASE
    assert wrong_password.failed_phase(['[i] <== a: done in 1 s']) is None


def auth_failed(nodes):
    return exceptions.NodesFailed('connect', [
        (n, exceptions.SSHAuthError(node=n, step='connect', user='u',
                                    reason='Authentication failed.'))
        for n in nodes], len(nodes))


def test_problems_none_for_the_expected_failure():
    err = auth_failed(['m', 'w'])
    assert wrong_password.problems_of(err, wrong_password.PHASE, [], 'pw-x',
                                      2, 0) == []


def test_problems_named():
    err = auth_failed(['m'])
    problems = wrong_password.problems_of(
        err, 'Upload the scripts', ['login with pw-x'], 'pw-x', 2, 1)
    assert any('phase' in p for p in problems)
    assert any('1 of 2 nodes' in p for p in problems)
    assert any('log line' in p for p in problems)
    assert any('accepted 1' in p for p in problems)


def test_problems_when_not_an_auth_error_or_no_error():
    err = exceptions.NodesFailed('connect', [
        ('m', exceptions.SSHError(node='m', step='connect', reason='down'))],
        1)
    problems = wrong_password.problems_of(err, wrong_password.PHASE, [],
                                          'pw', 1, 0)
    assert any('not an authentication error on m' in p for p in problems)
    assert any('authentication failed' in p for p in problems)
    assert wrong_password.problems_of(None, None, [], 'pw', 1, 0) == [
        'the driver did not fail']


# -- plot ---------------------------------------------------------------------

def test_plot_skipped_without_matplotlib(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(plot, 'pyplot', lambda: None)
    path = str(tmp_path / 'p.png')
    assert plot.plot(points(1, 2), path, 3, 2) is None
    assert 'matplotlib is not installed' in capsys.readouterr().out
    assert not os.path.exists(path)


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip('matplotlib')
    path = str(tmp_path / 'images' / 'p.png')
    assert plot.plot(points(7, 7.5, 8), path, 3, 2) == path
    with open(path, 'rb') as handle:
        assert handle.read(8) == b'\x89PNG\r\n\x1a\n'
    cpu_path = str(tmp_path / 'images' / 'cpu.png')
    assert plot.plot([report.SweepPoint(1, 6.0, 5.0, 2.0, 0.1, 2),
                      report.SweepPoint(2, 6.1, 5.0, 2.4, 0.1, 2)],
                     cpu_path, 3, 2) == cpu_path


def test_plot_reads_what_the_sweep_saves(tmp_path):
    from benchmarks import sweep
    path = str(tmp_path / 'sweep.json')
    sweep.save(path, points(7, 8), 3.0, 2.0)
    with open(path) as handle:
        assert json.load(handle)['points'][1]['workers'] == 2
    assert plot.load(path) == (points(7, 8), 3.0, 2.0)
    # A sweep with CPU figures keeps them; the plot draws their bound too.
    with_cpu = [report.SweepPoint(1, 6.0, 5.0, cpu=2.0, own_cpu=0.1,
                                  cores=2),
                report.SweepPoint(32, 13.0, 5.0, cpu=21.0, own_cpu=0.9,
                                  cores=2)]
    sweep.save(path, with_cpu, 3.0, 2.0)
    assert plot.load(path) == (with_cpu, 3.0, 2.0)


def test_scale_in_floor_is_heat_and_its_api_requests():
    # No SSH: Heat's answer, then cordon, list pods, delete, in order.
    assert report.scale_in_floor(0.05, 0.01, 0.02) == pytest.approx(
        0.05 + 0.01 + 2 * 0.02)
    # cordon and delete write, the pod listing reads
    assert (report.SCALE_IN_READS, report.SCALE_IN_WRITES) == (1, 2)


def test_busy_cpu_from_proc_stat_leaves_idle_iowait_and_guest_out():
    hz = os.sysconf('SC_CLK_TCK')
    text = ('cpu  100 20 30 4000 500 6 7 8 90 10\n'
            'cpu0 50 10 15 2000 250 3 3 4 45 5\n')
    # user nice system irq softirq steal; guest is inside user already.
    assert cpu.busy_seconds(text) == pytest.approx((100 + 20 + 30 + 6 + 7
                                                    + 8) / hz)
    with pytest.raises(ValueError):
        cpu.busy_seconds('intr 1 2 3\n')


def test_usage_between_samples_and_the_least_wall_it_allows():
    usage = cpu.between(cpu.Sample(10.0, 1.0), cpu.Sample(34.0, 4.0))
    assert (usage.machine, usage.own) == (24.0, 3.0)
    assert usage.least_wall(2) == 12.0


def test_sweep_table_and_note_show_what_the_cores_allow():
    points = [report.SweepPoint(1, 6.0, 5.0, cpu=3.0, own_cpu=1.0, cores=2),
              report.SweepPoint(32, 16.0, 5.0, cpu=26.0, own_cpu=4.0,
                                cores=2)]
    table = report.sweep_table(points)
    assert 'cpu/cores s' in table.splitlines()[0]
    assert table.splitlines()[2].split()[-3:] == ['26.00', '4.00', '13.00']
    note = report.sweep_cpu_note(points)
    assert 'no run of that work takes less than 13.00 s' in note
    assert 'the target is 7.80 s' in note
    # Without CPU figures (a saved sweep of before): no columns, no note.
    plain = [report.SweepPoint(1, 6.0, 5.0), report.SweepPoint(32, 16.0, 5.0)]
    assert 'cpu' not in report.sweep_table(plain)
    assert report.sweep_cpu_note(plain) is None


def test_hook_cpu_brackets_the_two_hooks():
    calls = []

    class Driver(object):
        name = 'inner'

        def instantiate_start(self, **kwargs):
            calls.append(('start', kwargs))

        def instantiate_end(self, **kwargs):
            calls.append(('end', kwargs))
            # CPU inside the bracket, more than os.times()' resolution.
            first = sum(os.times()[:2])
            while sum(os.times()[:2]) - first < 0.05:
                pass
    timed = cpu.HookCPU(Driver())
    assert timed.usage is None
    timed.instantiate_start(context=None)
    timed.instantiate_end(context=None)
    assert calls == [('start', {'context': None}), ('end', {'context': None})]
    assert timed.name == 'inner'
    # Both clocks tick in 10 ms steps, each on its own count.
    assert timed.usage.own >= 0.04 and timed.usage.machine > 0


def test_the_upgrade_benchmark_sums_what_must_happen_in_order():
    import logging
    from benchmarks import upgrade
    timings = upgrade.Timings()
    for line in ('[upgrade i] <== Check every node for the upgrade to 1.36: '
                 'done in 3.0 s',
                 '[upgrade i] <== Drain master-2: done in 1.5 s',
                 '[upgrade i] <== Upgrade the control plane on master-2 '
                 '(kubeadm upgrade apply v1.36.1): done in 10.0 s',
                 '[upgrade i] <== Wait until master-2 is Ready with kubelet '
                 '1.36.1: done in 2.0 s',
                 '[upgrade i] <== Put master-2 behind HAProxy again: done in '
                 '1.0 s',
                 '[upgrade i] <== Upgrade worker-1, worker-2 (kubeadm '
                 'upgrade node): done in 10.5 s'):
        timings.emit(logging.LogRecord('x', logging.INFO, 'f', 1, line, (),
                                       None))
    assert timings.serial_seconds() == 24.0
