"""Errors of the command line, and the one place that maps them to exit
statuses.

A verb reports a failure by raising :class:`UserError` (or a subclass: the
lab's ``LabError`` is one) or letting a
:class:`k8s_mgmt.exceptions.MgmtDriverError` through; :func:`exit_status`
prints it as one line and gives the status ``main`` exits with. Verbs that
run long operations wrap them in :func:`reported`, which turns any failure
into a one-line UserError and keeps the rest (further lines, a traceback)
in a log file.
"""

import contextlib
import sys
import traceback

from k8s_mgmt import exceptions
from k8s_mgmt import secrets

PROG = 'k8s-mgmt'
EXIT_ERROR = 1
EXIT_INTERRUPTED = 130       # as a shell reports a command ended by SIGINT


class UserError(Exception):
    """An error reported to the user as one line (exit status 1): bad
    input, or a failed operation whose message says what to do."""


# What exit_status reports; anything else is a bug and keeps its traceback.
REPORTED = (UserError, exceptions.MgmtDriverError, KeyboardInterrupt)


def exit_status(err, stream=None):
    """Print ``err`` as the command reports it; return the exit status."""
    stream = stream or sys.stderr
    if isinstance(err, KeyboardInterrupt):
        print('%s: interrupted' % PROG, file=stream)
        return EXIT_INTERRUPTED
    print('%s: error: %s' % (PROG, secrets.redact(str(err))), file=stream)
    return EXIT_ERROR


def first_line(text, log_path):
    """The first non-blank line of ``text`` for the terminal; when there
    are more, all of them are appended to ``log_path`` and the line says
    so."""
    lines = [line for line in str(text).splitlines() if line.strip()]
    first = lines[0] if lines else type(text).__name__
    if len(lines) > 1:
        try:
            with open(log_path, 'a') as log:
                log.write('\n'.join(lines) + '\n')
            first += ' (%d more lines in %s)' % (len(lines) - 1, log_path)
        except OSError:
            first += ' (%d more lines)' % (len(lines) - 1)
    return first


@contextlib.contextmanager
def reported(what, log_path):
    """Inside, any failure of operation ``what`` becomes a one-line
    UserError: a UserError keeps its message, a driver error is prefixed
    with "<what> failed", anything else (a bug) is named by its type and
    its traceback goes to ``log_path``."""
    try:
        yield
    except UserError as err:
        raise UserError(first_line(err, log_path)) from err
    except exceptions.MgmtDriverError as err:
        raise UserError('%s failed: %s' % (what, first_line(
            secrets.redact(str(err)), log_path))) from err
    except Exception as err:
        first_line('-\n' + secrets.redact(traceback.format_exc()), log_path)
        raise UserError('%s failed: %s: %s (traceback in %s)' % (
            what, type(err).__name__,
            first_line(secrets.redact(str(err)), log_path),
            log_path)) from err
