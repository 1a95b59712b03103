"""How fast instantiate fails when the request's node password is wrong.

On a fresh ``simple`` lab (``--workers``, 16 by default; the lab's VMs keep
their right password), the instantiate request handed to the driver
carries a wrong ``password`` for ``master_node`` and ``worker_node`` in its
additionalParams. Measured: the seconds from the driver's first hook
(``instantiate_start``) until it raises. Checked: the driver fails in its
"Connect to every node" phase with an authentication error for every node
(``NodesFailed`` of ``SSHAuthError``), the message says "authentication
failed", neither the message nor any log line shows the password, and no
VM accepted an SSH connection (nothing was touched). Target: at most 3 s.

The lab keeps the request it was built with: the wrong one is only what
this run gives the driver. Needs root; the lab is torn down afterwards,
also after a failure or Ctrl-C.

    sudo .venv/bin/python -m benchmarks.wrong_password [--workers 16]
"""

import argparse
import contextlib
import copy
import logging
import re
import secrets as pysecrets
import sys
import time

from k8s_mgmt import exceptions
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import drivers
from k8s_mgmt_lab.conductor import lcm

from benchmarks import operations
from benchmarks import report

PHASE = 'Connect to every node'
PARAMS = 'k8s_cluster_installation_param'
NODE_GROUPS = ('master_node', 'worker_node')
FAILED_PHASE = re.compile(r' <== (.+?): FAILED after ')
DEFAULT_WORKERS = 16


class HookClock(object):
    """The flavour's driver, noting when its first hook was called."""

    def __init__(self, driver):
        self.driver = driver
        self.started = None

    def instantiate_start(self, **kwargs):
        self.started = time.monotonic()
        return self.driver.instantiate_start(**kwargs)

    def instantiate_end(self, **kwargs):
        return self.driver.instantiate_end(**kwargs)


class Capture(logging.Handler):
    """Every record of the driver's loggers, kept for the checks."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        try:
            self.messages.append(record.getMessage())
        except Exception:  # a broken record must not end the benchmark
            self.messages.append(str(record.msg))


@contextlib.contextmanager
def driver_logs():
    """The driver's log records, captured and kept off the terminal (the
    benchmark prints the error itself)."""
    logger = logging.getLogger('k8s_mgmt')
    handler = Capture()
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


def with_password(body, password):
    """A copy of the request body whose node groups log in with
    ``password``."""
    wrong = copy.deepcopy(body)
    params = wrong['additionalParams'][PARAMS]
    for group in NODE_GROUPS:
        if group in params:
            params[group]['password'] = password
    return wrong


def restore_request(settings, body):
    """Put back the request the lab was built with (lcm.instantiate
    records the body it was given)."""
    record = manager.read_record(settings)
    if record is not None and record.get('request') != body:
        record['request'] = body
        manager.write_record(settings.lab_file, record)


def failed_phase(messages):
    """The last phase the driver logged as FAILED, or None."""
    found = None
    for message in messages:
        match = FAILED_PHASE.search(message)
        if match:
            found = match.group(1)
    return found


def problems_of(err, phase, messages, password, nodes, accepted):
    """What the failure did not do that it should."""
    problems = []
    if err is None:
        return ['the driver did not fail']
    text = str(err)
    if phase != PHASE:
        problems.append('failed in phase %r, not %r' % (phase, PHASE))
    if not isinstance(err, exceptions.NodesFailed):
        problems.append('raised %s, not NodesFailed' % type(err).__name__)
    else:
        not_auth = [name for name, cause in err.failures
                    if not isinstance(cause, exceptions.SSHAuthError)]
        if not_auth:
            problems.append('not an authentication error on %s'
                            % ', '.join(not_auth))
        if len(err.failures) != nodes:
            problems.append('%d of %d nodes named' % (len(err.failures),
                                                      nodes))
    if 'authentication failed' not in text.lower():
        problems.append('the message does not say "authentication failed"')
    if password in text:
        problems.append('the message shows the password')
    if any(password in m for m in messages):
        problems.append('a log line shows the password')
    if accepted:
        problems.append('a VM accepted %d SSH connection(s)' % accepted)
    return problems


def measure(lab, workers=None):
    """Instantiate on ``lab`` (up, not instantiated) with a wrong node
    password: a report.WrongPassword. The lab's request is left as it
    was, so a real instantiate can follow."""
    settings = lab.settings
    record = lcm.read_lab(settings)
    body = copy.deepcopy(manager.lab_request(record))
    password = 'wrong-' + pysecrets.token_urlsafe(12)
    nodes = len(lab.topology().all_nodes())
    clock = HookClock(drivers.load(settings.package_dir, record['flavour']))
    before = lab.accepted()
    err = None
    try:
        with driver_logs() as logs:
            try:
                lcm.instantiate(settings, driver=clock,
                                request_body=with_password(body, password))
            except Exception as caught:  # the error is what we measure
                err = caught
            ended = time.monotonic()
    finally:
        restore_request(settings, body)
    after = lab.accepted()
    accepted = sum(after[s] - before.get(s, 0) for s in after)
    phase = failed_phase(logs.messages)
    seconds = ended - clock.started if clock.started else float('inf')
    return report.WrongPassword(
        workers=workers if workers is not None else nodes - 1,
        seconds=seconds,
        error=('%s: %s' % (type(err).__name__, err)) if err else '(none)',
        phase=phase,
        problems=problems_of(err, phase, logs.messages, password, nodes,
                             accepted))


def run(lab, workers):
    """A fresh simple lab of ``workers`` workers, measured, torn down."""
    try:
        lab.up('simple', workers=workers)
        return measure(lab, workers)
    finally:
        lab.down()


def parse(argv):
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks.wrong_password')
    parser.add_argument('--workers', type=int, default=DEFAULT_WORKERS,
                        help='workers of the simple lab')
    parser.add_argument('--verbose', action='store_true',
                        help='log the lab\'s steps')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)

    def show(wrong):
        print(report.wrong_password_line(wrong))
        return [report.wrong_password_target(wrong)]
    return operations.run_alone(args.verbose, 0.5, 0.5,
                                lambda lab: run(lab, args.workers), show)


if __name__ == '__main__':
    sys.exit(main())
