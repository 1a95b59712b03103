"""The few exceptions k8s-mgmt raises, each a message template.

Every message passes through :func:`k8s_mgmt.secrets.redact` so no secret can
reach an exception, a log line built from it, or Tacker's error details.
"""

from k8s_mgmt import secrets


class MgmtDriverError(Exception):
    """Base error; ``message`` is a %-template filled from keyword args."""

    message = ('An error occurred in the Kubernetes MgmtDriver: '
               '%(error_message)s')

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        try:
            text = self.message % kwargs
        except (KeyError, TypeError, ValueError):
            text = '%s: %r' % (self.message, sorted(kwargs))
        self.msg = secrets.redact(text)
        super().__init__(self.msg)

    def __str__(self):
        return self.msg

    def handling_data(self):
        """What Tacker's v2 API keeps with a failed operation
        (``error.userScriptErrHandlingData``, public): a dict of plain
        values, or None."""
        return None

    def shorten(self, text):
        """Make ``text`` (:func:`one_line`) the message, keeping the full
        one as ``full_text``."""
        self.full_text = self.msg
        self.msg = text
        self.args = (text,)


def _one_line_path(path):
    """A problem's path as one line: a control or format character that
    reached it (a key of a request's map) is shown escaped."""
    path = str(path)
    return path if path.isprintable() else repr(path)[1:-1]


class ValidationError(MgmtDriverError):
    """Bad input. ``problems`` is a list of ``(path, message)`` pairs."""

    message = 'Invalid parameters (%(count)d problem(s)):\n%(details)s'

    def __init__(self, problems):
        self.problems = [(_one_line_path(p), secrets.redact(m))
                         for p, m in problems]
        details = '\n'.join('%s: %s' % pm for pm in self.problems)
        super().__init__(count=len(self.problems), details=details)


class TopologyError(MgmtDriverError):
    message = 'Cannot read the cluster topology from Heat: %(reason)s'


class SSHError(MgmtDriverError):
    message = '%(node)s: %(step)s: %(reason)s'


class SSHAuthError(SSHError):
    message = ('%(node)s: %(step)s: authentication failed for user '
               '%(user)s (not retried): %(reason)s')


class HostKeyMismatch(SSHError):
    message = ('%(node)s: %(step)s: host key for server %(server_id)s '
               'changed: %(change)s (pinned %(pinned)s, offered %(offered)s); '
               'refusing to connect. If the change is legitimate (a rebuilt '
               'VM, a planned key rotation), check the new key out of band, '
               'then run "k8s-mgmt hostkeys add %(server_id)s --key '
               '\'<type> <base64>\' --replace --file %(pin_file)s", or '
               '"k8s-mgmt hostkeys remove %(server_id)s --file %(pin_file)s" '
               'to verify it again on the next connection')


class RemoteCommandError(SSHError):
    message = ('%(node)s: %(step)s: exit status %(status)s; last stderr '
               'lines:\n%(stderr)s')


class SSHTimeout(SSHError):
    """The SSH server did not answer a request (``what``) in time."""

    message = '%(node)s: %(step)s: %(what)s: no answer within %(timeout).1f s'


class CommandTimeout(SSHTimeout):
    message = '%(node)s: %(step)s: no exit after %(timeout).1f s'


class NodesFailed(MgmtDriverError):
    """One error for a step that failed on one or more nodes."""

    message = '%(step)s failed on %(count)d of %(total)d node(s):%(details)s'

    def __init__(self, step, failures, total):
        # failures: list of (node_name, exception)
        self.step = step
        self.failures = failures
        if len(failures) == 1:
            # On the first line, which is what a terminal shows.
            details = ' %s: %s' % failures[0]
        else:
            details = ''.join('\n- %s: %s' % (name, err)
                              for name, err in failures)
        super().__init__(step=step, count=len(failures), total=total,
                         details=details)


class KubernetesAPIError(MgmtDriverError):
    message = 'Kubernetes API %(endpoint)s: %(what)s: %(reason)s'


# Longer one-line errors are cut here: what Tacker's error.detail and a
# terminal show whole.
ONE_LINE_LIMIT = 500
_TRACEBACK_LINE = ('Traceback (most recent call last)', 'File "')


def one_line(err, limit=ONE_LINE_LIMIT):
    """``err`` as one line: the node, the step and the cause, for Tacker's
    ``error.detail`` (the full text goes to the driver's log). A command's
    stderr gives its last line only (never a traceback's), a step that
    failed on several nodes one part per node, bad input one part per
    problem."""
    if isinstance(err, NodesFailed):
        text = '%s failed on %d of %d node(s): %s' % (
            err.step, len(err.failures), err.kwargs.get('total', 0),
            '; '.join('%s: %s' % (name, one_line(e, limit))
                      for name, e in err.failures))
    elif isinstance(err, RemoteCommandError):
        tail = [line.strip() for line in
                str(err.kwargs.get('stderr') or '').splitlines()
                if line.strip() and
                not line.strip().startswith(_TRACEBACK_LINE)]
        text = '%s: %s: exit status %s%s' % (
            err.kwargs.get('node'), err.kwargs.get('step'),
            err.kwargs.get('status'), ': ' + tail[-1] if tail else '')
    elif isinstance(err, ValidationError):
        text = 'Invalid parameters: ' + '; '.join(
            '%s: %s' % problem for problem in err.problems)
    else:
        text = str(err)
    text = secrets.redact(' '.join(text.split()))
    if len(text) > limit:
        text = text[:limit].rstrip() + '...'
    return text
