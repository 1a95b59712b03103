"""Run one step on many nodes at once, with a limit, and one error for all.

Inside tacker-conductor the process is monkey-patched by eventlet: real OS
threads would block the hub, so a GreenPool is used there. In the CLI (no
eventlet) a thread pool is used. This module never patches anything itself.
"""

import concurrent.futures
import threading
import time

from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import green
from k8s_mgmt import secrets

LOG = logging.getLogger(__name__)


def _name_of_node(node):
    return node.name


class _Progress(object):
    """Counts finished nodes and logs one line per node."""

    def __init__(self, operation, step, total):
        self.operation = operation
        self.step = step
        self.total = total
        self.done = 0
        self._lock = threading.Lock()

    def finished(self, name, seconds, error=None):
        with self._lock:
            self.done += 1
            done = self.done
        if error is None:
            LOG.info('[%s] %s %s: ok in %.1f s (%d/%d)', self.operation,
                     name, self.step, seconds, done, self.total)
        else:
            LOG.error('[%s] %s %s: FAILED in %.1f s (%d/%d): %s',
                      self.operation, name, self.step, seconds, done,
                      self.total, secrets.redact(str(error)))


def run_on_nodes(operation, step, nodes, fn, concurrency=None,
                 name_of=_name_of_node):
    """Run ``fn(node)`` for every node, at most ``concurrency`` at a time.

    Returns ``{name: result}`` in input order. If any node fails, every
    other node still runs to the end, then one
    :class:`~k8s_mgmt.exceptions.NodesFailed` names every failed node (its
    ``results`` attribute holds the successful nodes' results).
    """
    nodes = list(nodes)
    names = [name_of(n) for n in nodes]
    if len(set(names)) != len(names):
        raise ValueError('node names must be unique: %s' % names)
    if not nodes:
        return {}
    limit = concurrency or conf.CONF.k8s_mgmt.max_parallel_nodes
    if limit < 1:
        raise ValueError('concurrency must be at least 1, not %r' % limit)
    progress = _Progress(operation, step, len(nodes))
    outcomes = {}

    def run_one(node, name):
        started = time.monotonic()
        try:
            outcomes[name] = (True, fn(node))
        except Exception as err:  # every node's failure is reported
            outcomes[name] = (False, err)
            progress.finished(name, time.monotonic() - started, err)
        else:
            progress.finished(name, time.monotonic() - started)

    LOG.info('[%s] %s: starting on %d node(s), %d at a time', operation,
             step, len(nodes), min(limit, len(nodes)))
    if green.eventlet_is_active():
        _run_green(run_one, nodes, names, limit)
    else:
        _run_threads(run_one, nodes, names, limit)
    return _collect(operation, step, names, outcomes)


def _run_green(run_one, nodes, names, limit):
    import eventlet
    pool = eventlet.GreenPool(min(limit, len(nodes)))
    threads = [pool.spawn(run_one, node, name)
               for node, name in zip(nodes, names)]
    for thread in threads:
        thread.wait()  # run_one catches Exception; re-raise the rest


def _run_threads(run_one, nodes, names, limit):
    with concurrent.futures.ThreadPoolExecutor(
            max_workers=min(limit, len(nodes)),
            thread_name_prefix='k8s-mgmt-node') as pool:
        futures = [pool.submit(run_one, node, name)
                   for node, name in zip(nodes, names)]
        for future in futures:
            future.result()  # run_one catches Exception; re-raise the rest


def _collect(operation, step, names, outcomes):
    results = {}
    failures = []
    for name in names:
        ok, value = outcomes[name]
        if ok:
            results[name] = value
        else:
            failures.append((name, value))
    if failures:
        error = exceptions.NodesFailed('[%s] %s' % (operation, step),
                                       failures, len(names))
        error.results = results
        raise error
    return results


class Background(object):
    """``fn()`` running on its own (green) thread; :meth:`result` waits for
    it and returns its value or raises its error."""

    def __init__(self, fn):
        self._outcome = None
        if green.eventlet_is_active():
            import eventlet
            self._green = eventlet.spawn(self._run, fn)
            self._thread = None
        else:
            self._green = None
            self._thread = threading.Thread(
                target=self._run, args=(fn,), daemon=True,
                name='k8s-mgmt-background')
            self._thread.start()

    def _run(self, fn):
        try:
            self._outcome = (True, fn())
        except Exception as err:  # handed to whoever waits
            self._outcome = (False, err)

    def wait(self):
        """Wait until it is done; never raises its error."""
        if self._green is not None:
            self._green.wait()
        else:
            self._thread.join()

    def result(self):
        self.wait()
        ok, value = self._outcome
        if not ok:
            raise value
        return value
