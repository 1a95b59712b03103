"""The phase runner and the dry walk: one generator, two ways through it."""

import logging

import pytest

from k8s_mgmt.operations import phases
from k8s_mgmt.operations import run as run_mod

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
    assert '7. Join nodes  [skipped: every node is already Ready]' in text
    assert ('master-1 [ssh] bash .k8s-mgmt/install_k8s_cluster.sh init'
            in text)
    data = [p.to_dict() for p in walked]
    assert data[1]['parallel'] and data[1]['nodes'] == [
        'master-1', 'worker-1', 'worker-2']
    assert data[6] == {'title': 'Join nodes', 'nodes': [], 'parallel': False,
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
                                      'every master')
        assert op_helpers.calls(lb)[0].stdin_secrets == (
            ('auth_pass', run_mod.ReadOnlyState.PLACEHOLDER),)
        assert not (tmp_path / 'state').exists()
    finally:
        fix.cleanUp()
