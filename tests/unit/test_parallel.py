"""run_on_nodes with plain threads and under eventlet monkey-patching.

Concurrency is proven with barriers that only open when the expected number
of tasks run at the same moment (a missing task makes the barrier time out),
never with timing assertions.
"""

import collections
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import threading

import pytest
from oslo_config import fixture as config_fixture

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import green
from k8s_mgmt import parallel
from k8s_mgmt import secrets

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
Node = collections.namedtuple('Node', 'name value')


def _nodes(count, prefix='worker'):
    return [Node('%s-%02d' % (prefix, i), i) for i in range(1, count + 1)]


class _ActiveCounter(object):
    def __init__(self):
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0

    def __enter__(self):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)

    def __exit__(self, *exc_info):
        with self.lock:
            self.active -= 1


def test_all_nodes_run_at_once_and_results_keep_input_order():
    nodes = _nodes(6)
    barrier = threading.Barrier(6, timeout=20)

    def task(node):
        barrier.wait()  # opens only when all six run together
        return node.value * 10

    results = parallel.run_on_nodes('instantiate', 'join', reversed(nodes),
                                    task, concurrency=6)
    assert list(results) == [n.name for n in reversed(nodes)]
    assert results['worker-03'] == 30


def test_concurrency_limit_is_reached_and_never_exceeded():
    counter = _ActiveCounter()
    barrier = threading.Barrier(3, timeout=20)

    def task(node):
        with counter:
            barrier.wait()  # groups of exactly three pass
        return node.name

    results = parallel.run_on_nodes('scale', 'install', _nodes(9), task,
                                    concurrency=3)
    assert len(results) == 9
    assert counter.peak == 3


def test_default_concurrency_comes_from_config():
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    try:
        fixture.config(group='k8s_mgmt', max_parallel_nodes=2)
        counter = _ActiveCounter()
        barrier = threading.Barrier(2, timeout=20)

        def task(node):
            with counter:
                barrier.wait()

        parallel.run_on_nodes('heal', 'drain', _nodes(6), task)
        assert counter.peak == 2
    finally:
        fixture.cleanUp()


def test_every_failure_is_collected_and_other_nodes_finish():
    started = []
    lock = threading.Lock()

    def task(node):
        with lock:
            started.append(node.name)
        if node.value in (2, 4):
            raise RuntimeError('disk full on %s' % node.name)
        return 'ok-%d' % node.value

    with pytest.raises(exceptions.NodesFailed) as info:
        parallel.run_on_nodes('instantiate', 'join', _nodes(5), task,
                              concurrency=2)
    error = info.value
    assert sorted(started) == [n.name for n in _nodes(5)]
    assert [name for name, _ in error.failures] == ['worker-02', 'worker-04']
    assert error.results == {'worker-01': 'ok-1', 'worker-03': 'ok-3',
                             'worker-05': 'ok-5'}
    text = str(error)
    assert text.startswith('[instantiate] join failed on 2 of 5 node(s)')
    assert '- worker-02: disk full on worker-02' in text
    assert '- worker-04: disk full on worker-04' in text


def test_progress_lines_and_redacted_failures(caplog):
    caplog.set_level(logging.INFO, logger='k8s_mgmt')
    token = secrets.Secret('tok-9f8e7d6c5b4a')

    def task(node):
        if node.name == 'worker-03':
            raise RuntimeError('join with %s refused' % token.reveal())
        return True

    with pytest.raises(exceptions.NodesFailed) as info:
        parallel.run_on_nodes('instantiate', 'join', _nodes(4), task,
                              concurrency=1)
    lines = [r.getMessage() for r in caplog.records
             if r.name == 'k8s_mgmt.parallel']
    ok = [ln for ln in lines if ': ok in ' in ln]
    assert len(ok) == 3
    for line in ok:
        assert re.fullmatch(r'\[instantiate\] worker-0[124] join: ok in '
                            r'\d+\.\d s \([1-4]/4\)', line), line
    failed = [ln for ln in lines if 'FAILED' in ln]
    assert len(failed) == 1
    assert re.fullmatch(r'\[instantiate\] worker-03 join: FAILED in \d+\.\d '
                        r's \(3/4\): join with \*\*\* refused', failed[0])
    assert 'tok-9f8e7d6c5b4a' not in caplog.text
    assert 'tok-9f8e7d6c5b4a' not in str(info.value)


def test_empty_and_duplicate_names():
    assert parallel.run_on_nodes('terminate', 'reset', [], lambda n: 1) == {}
    with pytest.raises(ValueError):
        parallel.run_on_nodes('terminate', 'reset',
                              [Node('a', 1), Node('a', 2)], lambda n: 1)


def test_name_of_and_plain_values():
    results = parallel.run_on_nodes('x', 'y', ['10.0.0.1', '10.0.0.2'],
                                    lambda ip: ip[::-1], concurrency=2,
                                    name_of=lambda ip: ip)
    assert results == {'10.0.0.1': '1.0.0.01', '10.0.0.2': '2.0.0.01'}


def test_plain_threads_when_eventlet_is_not_patching():
    assert not green.eventlet_is_active()
    seen = parallel.run_on_nodes('x', 'y', _nodes(2),
                                 lambda n: threading.current_thread().name,
                                 concurrency=2)
    assert all(name.startswith('k8s-mgmt-node') for name in seen.values())


EVENTLET_SCRIPT = textwrap.dedent('''
    import eventlet
    eventlet.monkey_patch()  # as tacker-conductor does, before anything

    import json
    import threading

    import greenlet

    from k8s_mgmt import exceptions
    from k8s_mgmt import green
    from k8s_mgmt import parallel

    class Node(object):
        def __init__(self, name):
            self.name = name

    out = {'green': green.eventlet_is_active()}

    all_at_once = threading.Barrier(5, timeout=20)
    def together(node):
        all_at_once.wait()
        return type(greenlet.getcurrent()).__name__
    out['together'] = parallel.run_on_nodes(
        'instantiate', 'join', [Node('w%d' % i) for i in range(5)],
        together, concurrency=5)

    lock = threading.Lock()
    state = {'active': 0, 'peak': 0}
    threes = threading.Barrier(3, timeout=20)
    def bounded(node):
        with lock:
            state['active'] += 1
            state['peak'] = max(state['peak'], state['active'])
        threes.wait()
        with lock:
            state['active'] -= 1
        if node.name == 'w4':
            raise RuntimeError('boom')
    try:
        parallel.run_on_nodes('scale', 'install',
                              [Node('w%d' % i) for i in range(9)],
                              bounded, concurrency=3)
    except exceptions.NodesFailed as err:
        out['failed'] = [name for name, _ in err.failures]
        out['succeeded'] = sorted(err.results)
    out['peak'] = state['peak']
    print(json.dumps(out))
''')


def test_under_eventlet_monkey_patching():
    env = dict(os.environ, PYTHONPATH=REPO, PYTHONWARNINGS='ignore')
    proc = subprocess.run([sys.executable, '-c', EVENTLET_SCRIPT], cwd=REPO,
                          env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out['green'] is True
    assert set(out['together'].values()) == {'GreenThread'}
    assert list(out['together']) == ['w%d' % i for i in range(5)]
    assert out['peak'] == 3
    assert out['failed'] == ['w4']
    assert len(out['succeeded']) == 8
