"""The phase runner and the dry walk: one generator, two ways through it."""

import logging

import pytest

from k8s_mgmt.engine import phases
from k8s_mgmt.engine import run as run_mod

import op_helpers

Phase = phases.Phase


def _operation(calls, fail_on=None, handle=False):
    """A three-phase operation that records which actions ran."""
    def act(name):
        def action():
            calls.append(name)
            if name == fail_on:
                raise RuntimeError('%s broke' % name)
            return name.upper()
        return action

    def build():
        first = yield Phase('First', action=act('first'), assume='ASSUMED')
        try:
            second = yield Phase('Second', action=act('second'))
        except RuntimeError:
            if not handle:
                raise
            second = yield Phase('Second again', action=act('again'))
        yield phases.skipped('Skipped one', 'nothing to do')
        third = yield Phase('Third', action=act('third'))
        return [first, second, third]
    return build()


def test_run_executes_in_order_and_returns_the_operation_result(caplog):
    caplog.set_level(logging.INFO, logger='k8s_mgmt')
    calls = []
    result = phases.run(_operation(calls), '[test x]')
    assert calls == ['first', 'second', 'third']
    assert result == ['FIRST', 'SECOND', 'THIRD']
    starts = [r.getMessage() for r in caplog.records
              if ' ==> ' in r.getMessage()]
    assert starts == ['[test x] ==> First', '[test x] ==> Second',
                      '[test x] ==> Skipped one: skipped (nothing to do)',
                      '[test x] ==> Third']


def test_run_stops_at_the_first_failure():
    calls = []
    with pytest.raises(RuntimeError, match='second broke'):
        phases.run(_operation(calls, fail_on='second'), '[test x]')
    assert calls == ['first', 'second']


def test_the_operation_may_handle_a_failure_and_go_on():
    calls = []
    result = phases.run(_operation(calls, fail_on='second', handle=True),
                        '[test x]')
    assert calls == ['first', 'second', 'again', 'third']
    assert result == ['FIRST', 'AGAIN', 'THIRD']


def test_walk_runs_no_action_and_feeds_assumptions():
    calls = []
    walked = phases.walk(_operation(calls))
    assert calls == []
    assert phases.log_lines(walked) == [
        'First', 'Second', 'Skipped one: skipped (nothing to do)', 'Third']


def test_a_phase_needs_an_action_or_a_reason_to_skip():
    with pytest.raises(ValueError, match='Nothing'):
        Phase('Nothing')


def test_text_and_json_renderings_mark_parallel_groups_and_skips():
    topo = op_helpers.topology(1, 2)
    params = op_helpers.sample_params('simple')
    walked = op_helpers.plan(params, topo, ready={'master-1', 'worker-1',
                                                  'worker-2'})
    text = phases.render_text(walked)
    assert '2. Connect to every node  [parallel on 3 nodes]' in text
    assert '9. Join nodes  [skipped: every node is already Ready]' in text
    assert ('master-1 [ssh] bash .k8s-mgmt/install_k8s_cluster.sh init'
            in text)
    data = [p.to_dict() for p in walked]
    assert data[1]['parallel'] and data[1]['nodes'] == [
        'master-1', 'worker-1', 'worker-2']
    assert data[8] == {'title': 'Join nodes', 'nodes': [], 'parallel': False,
                       'commands': [],
                       'skipped': 'every node is already Ready'}


def test_a_dry_run_writes_no_state(tmp_path):
    from oslo_config import fixture as cfg_fixture
    from k8s_mgmt import conf
    fix = cfg_fixture.Config(conf.CONF)
    fix.setUp()
    try:
        fix.config(group='k8s_mgmt', state_dir=str(tmp_path / 'state'))
        topo = op_helpers.topology(3, 1, vip='10.254.0.100')
        walked = op_helpers.plan(op_helpers.sample_params('complex'), topo)
        lb = op_helpers.phase(walked, 'Configure the load balancer on '
                                      'master-1')
        assert op_helpers.calls(lb)[0].stdin_secrets == (
            ('auth_pass', run_mod.ReadOnlyState.PLACEHOLDER),)
        assert not (tmp_path / 'state').exists()
    finally:
        fix.cleanUp()


def _background_operation(events, fail_background=False, fail_after=False,
                          wait=True):
    """A background phase that can only finish once the phase after it
    has started: proof that the operation did not wait for it."""
    def background():
        assert events['next_started'].wait(10)
        if fail_background:
            raise RuntimeError('background broke')
        events['background_done'].set()
        return 'BG'

    def after():
        events['next_started'].set()
        if fail_after:
            raise RuntimeError('after broke')
        return 'NEXT'

    def build():
        pending = yield Phase('In the background', action=background,
                              background=True, assume='ASSUMED')
        nxt = yield Phase('Meanwhile', action=after)
        if not wait:
            return [nxt]
        got = yield Phase('Wait for it', action=lambda: pending.result())
        return [nxt, got]
    return build()


def _events():
    import threading
    return {'next_started': threading.Event(),
            'background_done': threading.Event()}


def test_a_background_phase_runs_while_the_next_phases_go_on():
    events = _events()
    assert phases.run(_background_operation(events), '[t]') == [
        'NEXT', 'BG']


def test_a_background_failure_reaches_the_phase_waiting_for_it():
    with pytest.raises(RuntimeError, match='background broke'):
        phases.run(_background_operation(_events(), fail_background=True),
                   '[t]')


def test_a_background_failure_nobody_waited_for_fails_the_operation():
    with pytest.raises(RuntimeError, match='background broke'):
        phases.run(_background_operation(_events(), fail_background=True,
                                         wait=False), '[t]')


def test_after_a_failure_the_background_work_ends_before_the_run_does():
    events = _events()
    with pytest.raises(RuntimeError, match='after broke'):
        phases.run(_background_operation(events, fail_after=True), '[t]')
    # The runner returned only once the background phase had finished.
    assert events['background_done'].is_set()


def test_a_dry_walk_hands_the_background_phase_its_assumption():
    walked = phases.walk(_background_operation(_events()))
    assert [p.title for p in walked] == ['In the background', 'Meanwhile',
                                         'Wait for it']
    text = phases.render_text(walked)
    assert '1. In the background  [in the background' in text
    assert phases.Phase('x', action=len, background=True).to_dict()[
        'background'] is True
