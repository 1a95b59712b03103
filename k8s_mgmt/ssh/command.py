"""Remote commands as data: an argv that is quoted when rendered.

Nothing in k8s-mgmt pastes user values into shell text. A remote command is a
:class:`Command` built from an argv whose elements are ``str`` or
:class:`~k8s_mgmt.secrets.Secret`; every element is quoted with
:func:`shlex.quote` when rendered. Shell features (pipes, ``&&``, ``||``,
redirects, environment variables, sudo) are asked for through methods, so the
only unquoted shell text ever produced is the fixed operators written here.

Two renderings exist:

* :meth:`render` - the real shell text, secrets revealed. Only the SSH layer
  calls it, at the moment the command is sent.
* :meth:`display` - the same text with every secret shown as ``***``, for
  logs and error messages.

Commands are immutable: every method returns a new command.
"""

import math
import re
import shlex

from k8s_mgmt import secrets

_ENV_NAME = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_SUDO_USER = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*$')


def _word(value, reveal):
    """Quote one argv element; a Secret shows as *** unless revealed."""
    if isinstance(value, secrets.Secret):
        return shlex.quote(value.reveal()) if reveal else secrets.MASK
    return shlex.quote(value)


def _check_word(value):
    if isinstance(value, secrets.Secret):
        return value
    if isinstance(value, str):
        if '\x00' in value:
            raise ValueError('a command argument cannot contain a NUL byte')
        return value
    raise TypeError('command arguments are str or Secret, not %s'
                    % type(value).__name__)


class ShellCommand(object):
    """Base of every command; holds the composition methods."""

    def _text(self, reveal):
        raise NotImplementedError

    def _secrets(self):
        raise NotImplementedError

    def render(self):
        """The shell text to send, secrets revealed. Never log this."""
        return self._text(reveal=True)

    def display(self):
        """The shell text with secrets masked, safe for logs and errors."""
        return secrets.redact(self._text(reveal=False), extra=self._secrets())

    def secrets(self):
        """Every Secret used in this command (for redacting its output)."""
        return list(self._secrets())

    # Composition -----------------------------------------------------------

    def pipe(self, other):
        """``self | other``. The exit status is ``other``'s (no pipefail)."""
        return _Compound('|', self, _as_command(other))

    def and_then(self, other):
        """``self && other``: run ``other`` only if ``self`` succeeded."""
        return _Compound('&&', self, _as_command(other))

    def or_else(self, other):
        """``self || other``: run ``other`` only if ``self`` failed."""
        return _Compound('||', self, _as_command(other))

    def redirect_stdout(self, path, append=False):
        """Send stdout to remote file ``path`` (written by the shell's user).

        Redirects apply to what was built so far: call :meth:`sudo` after
        this to make root write the file.
        """
        return _Redirected(self, '>>' if append else '>', _check_word(path))

    def redirect_stderr(self, path, append=False):
        """Send stderr to remote file ``path``."""
        return _Redirected(self, '2>>' if append else '2>', _check_word(path))

    def redirect_stdin(self, path):
        """Read stdin from remote file ``path``."""
        return _Redirected(self, '<', _check_word(path))

    def merge_stderr(self):
        """``2>&1``: stderr goes wherever stdout goes."""
        return _Redirected(self, '2>&1', None)

    def with_env(self, **env):
        """Run with environment variables set (through ``env``)."""
        return _Wrapped(self, _env_argv(env))

    def in_dir(self, path):
        """``cd <path> && self``: run in remote directory ``path``."""
        return _Compound('&&', Command('cd', '--', path), self)

    def time_limit(self, seconds, kill_after=10):
        """Run under coreutils ``timeout``: TERM to the command's whole
        process group after ``seconds``, KILL ``kill_after`` seconds later
        if it is still there; the exit status is then 124 (137 after KILL).
        """
        for name, value in (('seconds', seconds), ('kill_after', kill_after)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or value <= 0:
                raise ValueError('time_limit %s must be a number > 0, not %r'
                                 % (name, value))
        # Whole seconds, rounded up: never an exponent ('1e+06').
        return _Wrapped(self, ['timeout', '-k', '%ds' % math.ceil(kill_after),
                               '%ds' % math.ceil(seconds)])

    def sudo(self, user=None):
        """Run as root (or ``user``) through non-interactive ``sudo -n``."""
        argv = ['sudo', '-n']
        if user is not None:
            if not _SUDO_USER.match(user):
                raise ValueError('not a user name: %r' % user)
            argv += ['-u', user]
        return _Wrapped(self, argv + ['--'])

    def __str__(self):
        return self.display()

    def __repr__(self):
        return '<%s %s>' % (type(self).__name__, self.display())


def _as_command(other):
    if not isinstance(other, ShellCommand):
        raise TypeError('expected a Command, got %s (build it with '
                        'Command(*argv))' % type(other).__name__)
    return other


def _env_argv(env):
    argv = ['env']
    for name in sorted(env):
        if not _ENV_NAME.match(name):
            raise ValueError('not an environment variable name: %r' % name)
        value = env[name]
        if isinstance(value, secrets.Secret):
            argv.append(_EnvSecret(name, value))
        else:
            argv.append('%s=%s' % (name, _check_word(value)))
    return argv


class _EnvSecret(object):
    """``NAME=<secret>`` as one argv element that masks its value."""

    def __init__(self, name, secret):
        self.name = name
        self.secret = secret

    def word(self, reveal):
        if reveal:
            return shlex.quote('%s=%s' % (self.name, self.secret.reveal()))
        return '%s=%s' % (self.name, secrets.MASK)


class Command(ShellCommand):
    """A simple command: ``Command('kubeadm', 'join', endpoint, ...)``."""

    def __init__(self, *argv):
        if not argv:
            raise ValueError('a command needs at least a program name')
        self.argv = tuple(_check_word(a) for a in argv)

    def _text(self, reveal):
        return ' '.join(_word(a, reveal) for a in self.argv)

    def _secrets(self):
        return [a for a in self.argv if isinstance(a, secrets.Secret)]


class _Compound(ShellCommand):
    def __init__(self, operator, left, right):
        self.operator = operator
        self.left = left
        self.right = right

    def _text(self, reveal):
        return '%s %s %s' % (self.left._text(reveal), self.operator,
                             self.right._text(reveal))

    def _secrets(self):
        return self.left._secrets() + self.right._secrets()


class _Redirected(ShellCommand):
    def __init__(self, inner, operator, target):
        self.inner = inner
        self.operator = operator
        self.target = target

    def _text(self, reveal):
        inner = self.inner._text(reveal)
        if isinstance(self.inner, _Compound):
            # Group so the redirect applies to the whole list, not its tail.
            inner = '{ %s; }' % inner
        if self.target is None:
            return '%s %s' % (inner, self.operator)
        return '%s %s %s' % (inner, self.operator,
                             _word(self.target, reveal))

    def _secrets(self):
        found = self.inner._secrets()
        if isinstance(self.target, secrets.Secret):
            found.append(self.target)
        return found


class _Wrapped(ShellCommand):
    """``prefix... <inner>``: sudo or env in front of a command.

    A simple command is appended as plain argv; anything with shell syntax
    goes through ``sh -c`` so that sudo/env cover all of it (``sudo a | b``
    would only elevate ``a``; ``sudo a > f`` would open ``f`` as the user).
    """

    def __init__(self, inner, prefix):
        self.inner = inner
        self.prefix = list(prefix)

    def _text(self, reveal):
        words = [p.word(reveal) if isinstance(p, _EnvSecret)
                 else _word(p, reveal) for p in self.prefix]
        if isinstance(self.inner, (Command, _Wrapped)):
            words.append(self.inner._text(reveal))
        else:
            inner = self.inner._text(reveal)
            words += ['sh', '-c', shlex.quote(inner)]
        return ' '.join(words)

    def _secrets(self):
        found = self.inner._secrets()
        found += [p.secret for p in self.prefix if isinstance(p, _EnvSecret)]
        return found
