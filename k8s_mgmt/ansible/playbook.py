"""One ansible-playbook run on the Ansible server: argv, environment,
streamed events, errors.

A :class:`PlaybookCall` is data (the playbook, ``--limit``, extra vars), so
``k8s-mgmt plan`` shows exactly what :func:`run` sends. The run's
environment makes host-key checking real whatever kubespray's own
ansible.cfg says: it sets ``host_key_checking = False`` and ssh_args with
``UserKnownHostsFile=/dev/null``, and OpenSSH takes the first value of an
option, so arguments appended later cannot undo that; ANSIBLE_SSH_ARGS
replaces ssh_args instead. Output is read line by line as it arrives
(:mod:`k8s_mgmt.ansible.events`); success and failure come from the
callback's events and recap and the exit status, never from free text.
"""

import dataclasses
import json
import posixpath
import re
import secrets as pysecrets
import shlex
import time

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt.ansible import events
from k8s_mgmt.ansible.events import TaskFailure  # noqa: F401 (re-export)
from k8s_mgmt.ssh import client
from k8s_mgmt.ssh.command import Command

INVENTORY_FILE = 'hosts.yaml'
KNOWN_HOSTS_FILE = 'known_hosts'
KEY_FILE = 'id_ed25519'
CALLBACK_DIR = 'callback_plugins'
CALLBACK_NAME = 'k8s_mgmt_events'
# ansible-core's default callback plugin path (DEFAULT_CALLBACK_PLUGIN_PATH),
# which setting ANSIBLE_CALLBACK_PLUGINS would otherwise replace.
DEFAULT_CALLBACK_PATHS = ('~/.ansible/plugins/callback',
                          '/usr/share/ansible/plugins/callback')
CONTROL_DIR = 'cp'
# ssh makes its control socket as <dir>/<10 hex chars from Ansible> plus a
# 17-character temporary suffix, within the 107 characters of a socket path;
# <dir> is cp/<run id> (9 characters) in the inventory directory.
_RUN_ID_LEN = 8
_CONTROL_DIR_MAX = 107 - 1 - 10 - 17
# The remote `timeout` sends TERM at the deadline and KILL this much later;
# the driver's own wait ends after both, as a backstop.
KILL_AFTER = 10
_DRIVER_GRACE = KILL_AFTER + 20
_TIMED_OUT = (124, 137)   # `timeout` after TERM, after KILL

_VAR_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_PLAIN_VALUE = re.compile(r'^[A-Za-z0-9_.,:/@+-]*$')
_HOST = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*$')
_PLAYBOOK = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_./-]*\.ya?ml$')


@dataclasses.dataclass(frozen=True)
class PlaybookCall(object):
    """One ansible-playbook invocation, relative to kubespray_root_path."""

    playbook: str
    limit: tuple = ()
    extra_vars: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, 'limit', tuple(self.limit))
        object.__setattr__(self, 'extra_vars', tuple(
            tuple(pair) for pair in self.extra_vars))
        if not isinstance(self.playbook, str) or \
                not _PLAYBOOK.match(self.playbook) or \
                '..' in self.playbook.split('/'):
            raise ValueError('PlaybookCall.playbook must be a relative '
                             'path of a .yml/.yaml file in the kubespray '
                             'directory, not %r' % (self.playbook,))
        for host in self.limit:
            if not isinstance(host, str) or not _HOST.match(host):
                raise ValueError('PlaybookCall.limit: not a host name: %r'
                                 % (host,))
        for pair in self.extra_vars:
            if len(pair) != 2 or not isinstance(pair[0], str) or \
                    not _VAR_NAME.match(pair[0]) or \
                    not isinstance(pair[1], str):
                raise ValueError('PlaybookCall.extra_vars: expected (name, '
                                 'str value) pairs, got %r' % (pair,))

    def argv(self, inventory_path):
        argv = ['ansible-playbook', '-i', inventory_path, '--become',
                '--become-user=root']
        if self.limit:
            argv.append('--limit=%s' % ','.join(self.limit))
        for name, value in self.extra_vars:
            argv += ['-e', extra_var(name, value)]
        return argv + [self.playbook]

    def display(self, inventory_path):
        return ' '.join(shlex.quote(a) for a in self.argv(inventory_path))


def extra_var(name, value):
    """The ``-e`` argument of one extra var. A plain value is ``name=value``;
    any other is a one-key YAML mapping with the value tagged ``!unsafe``,
    so that Ansible neither splits it (``key=value`` parsing stops at
    spaces) nor renders Jinja in it."""
    if _PLAIN_VALUE.match(value) and value:
        return '%s=%s' % (name, value)
    return '{"%s": !unsafe %s}' % (name, json.dumps(value,
                                                    ensure_ascii=False))


def environment(inventory_dir, run_id=None):
    """The environment of every run for the inventory in ``inventory_dir``:
    host keys checked against its known_hosts, its key pair, our callback.

    ``run_id`` gives the run its own directory of SSH master connections:
    a master lives on for ControlPersist after its run, and a later run
    must not reach a healed VM (same address, new machine) through the
    master connected to the VM it replaced."""
    path = posixpath.normpath(inventory_dir)
    control_dir = posixpath.join(path, CONTROL_DIR)
    if run_id is not None:
        if not re.fullmatch(r'[0-9a-f]{%d}' % _RUN_ID_LEN, run_id):
            raise ValueError('run id must be %d hex digits, not %r'
                             % (_RUN_ID_LEN, run_id))
        control_dir = posixpath.join(control_dir, run_id)
    if not path.startswith('/') or re.search(r'[\s"\'\\]', path):
        raise ValueError('inventory directory must be an absolute path '
                         'without spaces or quotes, not %r' % inventory_dir)
    ssh_args = [
        '-o', 'ControlMaster=auto', '-o', 'ControlPersist=60s',
        '-o', 'UserKnownHostsFile=%s' % posixpath.join(path,
                                                       KNOWN_HOSTS_FILE),
        '-o', 'GlobalKnownHostsFile=/dev/null',
        '-o', 'StrictHostKeyChecking=yes',
    ]
    env = {
        'ANSIBLE_HOST_KEY_CHECKING': 'True',
        'ANSIBLE_SSH_ARGS': ' '.join(ssh_args),
        'ANSIBLE_PRIVATE_KEY_FILE': posixpath.join(path, KEY_FILE),
        'ANSIBLE_STDOUT_CALLBACK': CALLBACK_NAME,
        # Ours first, then Ansible's default plugin directories, so the
        # callbacks an operator installed there (and enabled in
        # ansible.cfg) still run beside ours.
        'ANSIBLE_CALLBACK_PLUGINS': ':'.join(
            (posixpath.join(path, CALLBACK_DIR),) + DEFAULT_CALLBACK_PATHS),
        'ANSIBLE_NOCOLOR': '1',
        'ANSIBLE_RETRY_FILES_ENABLED': 'False',
    }
    # This cluster's connections share no master connection with another
    # cluster's, where the socket path fits; else Ansible's default
    # directory (a master is only reused for the same address and user).
    if len(control_dir) <= _CONTROL_DIR_MAX:
        env['ANSIBLE_SSH_CONTROL_PATH_DIR'] = control_dir
    return env


def new_run_id():
    return pysecrets.token_hex(_RUN_ID_LEN // 2)


def command(call, *, root, inventory_dir, timeout, run_id=None):
    """The remote command of one run (see :func:`run`); each run gets its
    own SSH master connections (``run_id``, default: a new one)."""
    inventory_path = posixpath.join(inventory_dir, INVENTORY_FILE)
    return (Command(*call.argv(inventory_path))
            .with_env(**environment(inventory_dir, run_id or new_run_id()))
            .time_limit(timeout, kill_after=KILL_AFTER)
            .in_dir(root))


@dataclasses.dataclass(frozen=True)
class PlaybookResult(object):
    """What one run did. ``recap``: {host: {ok, changed, unreachable,
    failed, skipped, rescued, ignored}}."""

    playbook: str
    recap: dict
    failures: tuple
    seconds: float

    @property
    def touched(self):
        """The hosts the run did anything on (those in the recap)."""
        return frozenset(self.recap)


class PlaybookFailed(exceptions.SSHError):
    """A playbook run failed: names each failed host and task."""

    message = ('%(node)s: %(step)s: %(playbook)s failed (exit status '
               '%(status)s)%(details)s')

    def __init__(self, node, playbook, status, progress, stderr='',
                 seconds=0.0, **kwargs):
        self.playbook = playbook
        self.failures = tuple(progress.failures)
        self.result = PlaybookResult(playbook, progress.recap, self.failures,
                                     seconds)
        lines = ['- %s: TASK %s: %s' % (f.host, f.task, f.message)
                 for f in self.failures]
        listed = {f.host for f in self.failures}
        lines += ['- %s: failed or unreachable (play recap)' % host
                  for host in progress.failed_hosts() if host not in listed]
        if lines:
            details = ':\n' + '\n'.join(lines)
        elif stderr.strip():
            details = '; last stderr lines:\n' + client.stderr_tail(stderr)
        elif not progress.saw_recap:
            details = '; no play recap (the k8s_mgmt_events callback ' \
                      'reported none)'
        else:
            details = ''
        kwargs.setdefault('step', 'playbook')
        super().__init__(node=node, playbook=playbook, status=status,
                         details=details, **kwargs)


class PlaybookTimeout(PlaybookFailed):
    """A playbook run outlived its deadline and was stopped."""

    message = ('%(node)s: %(step)s: %(playbook)s did not finish within '
               '%(timeout).0f s and was stopped; last task started: '
               '%(task)s')

    def __init__(self, node, playbook, progress, timeout, seconds=0.0):
        super().__init__(node, playbook, 'timeout', progress,
                         seconds=seconds, timeout=timeout,
                         task=events.short(progress.last_task or
                                           '(none yet)', 120))


def run(session, call, *, root, inventory_dir, timeout, log_prefix,
        on_event=None):
    """Run ``call`` with ``session`` (an SSHSession to the Ansible server)
    in kubespray directory ``root`` for the inventory in ``inventory_dir``.

    Streams the output as it arrives: ``on_event(event)`` gets each event
    of the callback (dicts, see :mod:`k8s_mgmt.ansible.events`). Returns
    a PlaybookResult; raises PlaybookFailed on a nonzero exit status (or a
    run without a recap) and PlaybookTimeout after ``timeout`` seconds
    (default playbook_timeout), the run then stopped on the server too.
    """
    timeout = timeout or conf.CONF.k8s_mgmt.playbook_timeout
    cmd = command(call, root=root, inventory_dir=inventory_dir,
                  timeout=timeout)
    progress = events.Progress(call.playbook, log_prefix, on_event)
    started = time.monotonic()
    try:
        result = session.run(cmd, step='playbook ' + call.playbook,
                             timeout=timeout + _DRIVER_GRACE, check=False,
                             on_line=progress.line)
    except exceptions.CommandTimeout:
        raise PlaybookTimeout(session.node, call.playbook, progress,
                              timeout, time.monotonic() - started)
    seconds = time.monotonic() - started
    if result.status in _TIMED_OUT and seconds >= timeout:
        raise PlaybookTimeout(session.node, call.playbook, progress, timeout,
                              seconds)
    if result.status != 0 or not progress.saw_recap:
        raise PlaybookFailed(session.node, call.playbook, result.status,
                             progress, stderr=result.stderr,
                             seconds=seconds)
    return PlaybookResult(call.playbook, progress.recap,
                          tuple(progress.failures), seconds)
