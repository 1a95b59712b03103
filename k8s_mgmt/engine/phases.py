"""An operation is an ordered list of phases; one runner, one dry walk.

An operation is written as a generator that yields :class:`Phase` values in
order and receives each phase's result back::

    def build(op):
        topology = yield op.read_topology()
        yield Phase('Connect to every node', nodes=names(topology),
                    action=lambda: op.sessions.connect_all(...))
        ...

A phase carries a plain-sentence title, the nodes it runs on, its remote
work as data (:class:`Work`: the commands, uploads and API calls, with
secrets masked) and whether that work runs on the nodes at the same time.
The operation decides from the facts it has (the topology, what earlier
phases read) whether a phase runs (``skip`` gives the reason when not) and
on which nodes, before the phase runs.

:func:`run` executes the list: it logs ``==> <title>`` before each phase
and ``<== <title>: done in N s`` after, stops at the first failure (the
error is thrown into the operation, which may handle it, e.g. to try
another master) and logs a summary. :func:`walk` goes through the same
generator without connecting anywhere: each phase's ``assume`` stands in
for its result. So the dry run (``k8s-mgmt plan``) and the real run are the
same code, and their titles match line for line.
"""

import dataclasses
import functools
import typing

from k8s_mgmt import parallel
from k8s_mgmt import secrets
from k8s_mgmt.engine import phase_log


@dataclasses.dataclass(frozen=True)
class Work:
    """One piece of remote work, as data.

    ``node`` is where it runs (None: from the driver itself, e.g. a Heat
    or Kubernetes API call); ``kind`` is ``ssh``, ``sftp``, ``kubernetes``,
    ``heat``, ``nova``, ``cinder``, ``tacker`` or ``local``; ``text`` is
    what runs, secrets masked; ``stdin`` names the secrets sent on the
    command's stdin.
    """

    node: typing.Optional[str]
    kind: str
    text: str
    stdin: tuple = ()
    # The ScriptCall this work runs, if it is one (for tests and callers
    # that look at argv and stdin secrets; never shown).
    source: typing.Any = dataclasses.field(default=None, compare=False,
                                           repr=False)

    def to_dict(self):
        found = {'node': self.node, 'kind': self.kind, 'run': self.text}
        if self.stdin:
            found['stdin'] = list(self.stdin)
        return found

    def line(self):
        where = self.node or 'driver'
        extra = ' (stdin: %s)' % ', '.join(self.stdin) if self.stdin else ''
        return '%s [%s] %s%s' % (where, self.kind, self.text, extra)


def command_work(node, command):
    """An :class:`~k8s_mgmt.ssh.Command` on ``node``, secrets masked."""
    return Work(node, 'ssh', command.display())


def script_work(call, remote_dir):
    """A :class:`~k8s_mgmt.engine.scripts.ScriptCall` as work."""
    return Work(call.node, 'ssh', call.command(remote_dir).display(),
                tuple(key for key, _value in call.stdin_secrets),
                source=call)


def api_work(text, kind='kubernetes'):
    return Work(None, kind, secrets.redact(text))


@dataclasses.dataclass(frozen=True)
class Phase:
    """One titled phase of an operation.

    ``action`` does the work and returns the phase's result (it is not
    called by the dry run); ``assume`` is the result the dry run takes
    instead. A phase with ``skip`` set is logged as skipped, with that
    reason, and its result is ``assume``. A ``background`` phase starts
    and the operation goes on at once: its result is a
    :class:`~k8s_mgmt.parallel.Background` whose ``result()`` a later
    phase waits for (the dry run gets ``assume``).
    """

    title: str
    action: typing.Optional[typing.Callable[[], typing.Any]] = None
    nodes: tuple = ()
    work: tuple = ()
    parallel: bool = False
    assume: typing.Any = None
    skip: typing.Optional[str] = None
    background: bool = False

    def __post_init__(self):
        if self.skip is None and self.action is None:
            raise ValueError('phase %r has neither an action nor a reason '
                             'to skip' % self.title)

    def to_dict(self):
        found = {'title': self.title, 'nodes': list(self.nodes),
                 'parallel': self.parallel,
                 'commands': [w.to_dict() for w in self.work]}
        if self.skip is not None:
            found['skipped'] = self.skip
        if self.background:
            found['background'] = True
        return found


def skipped(title, reason, assume=None):
    return Phase(title, skip=reason, assume=assume)


def wait_for(title, started, running):
    """The phase that waits for the background phase ``started`` and
    gives its result (``running``: what the runner handed back for it;
    the dry run gets ``started``'s assumed result)."""
    return Phase(title, nodes=started.nodes, action=lambda: running.result(),
                 assume=started.assume)


def run(operation, prefix):
    """Run the phases ``operation`` yields; return what it returns."""
    log = phase_log.PhaseLog(prefix)
    try:
        return _drive(operation, log)
    finally:
        operation.close()
        log.summary()


def _drive(operation, log):
    started = []
    try:
        phase = next(operation)
        while True:
            if phase.skip is not None:
                log.skip(phase.title, phase.skip)
                phase = operation.send(phase.assume)
                continue
            if phase.background:
                log.announce(phase.title)
                started.append(parallel.Background(functools.partial(
                    log.run, phase.title, phase.action, announced=True)))
                phase = operation.send(started[-1])
                continue
            try:
                result = log.run(phase.title, phase.action)
            except Exception as err:
                # The operation may handle it (and go on with other
                # phases); if it does not, the error comes back out here.
                phase = operation.throw(err)
                continue
            phase = operation.send(result)
    except StopIteration as stop:
        # Work started in the background ends with the operation; a failure
        # nobody waited for is still the operation's failure.
        for work in started:
            work.result()
        return stop.value
    finally:
        # After a failure: no remote work may outlive the operation (its
        # sessions close next); the failure already logged is the one
        # raised.
        for work in started:
            work.wait()


def walk(operation):
    """The phases ``operation`` yields, without running any (a dry run)."""
    phases = []
    try:
        phase = next(operation)
        while True:
            phases.append(phase)
            phase = operation.send(phase.assume)
    except StopIteration:
        return phases
    finally:
        operation.close()


def log_lines(phases):
    """The ``==>`` titles a real run logs for these phases, in order."""
    return ['%s: skipped (%s)' % (p.title, p.skip) if p.skip is not None
            else p.title for p in phases]


def render_text(phases):
    """The plan for people: per phase the nodes and commands, in order."""
    lines = []
    for number, phase in enumerate(phases, 1):
        head = '%d. %s' % (number, phase.title)
        if phase.skip is not None:
            head += '  [skipped: %s]' % phase.skip
        elif phase.parallel and len(phase.nodes) > 1:
            head += '  [parallel on %d nodes]' % len(phase.nodes)
        if phase.background and phase.skip is None:
            head += '  [in the background: the next phases go on]'
        lines.append(head)
        if phase.nodes:
            lines.append('   nodes: %s' % ', '.join(phase.nodes))
        for item in phase.work:
            lines.append('   - %s' % item.line())
    return '\n'.join(lines)
