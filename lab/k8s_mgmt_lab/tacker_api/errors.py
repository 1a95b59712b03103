"""The one error of the Tacker client, and how Tacker's answers become its
one line.

Tacker answers a refused request with ProblemDetails (``{"title",
"status", "detail"}``), Keystone's middleware with ``{"error": {"message"}}``
and a few paths with plain text or HTML; an operation occurrence that
failed carries ProblemDetails in its ``error``. :func:`detail_of` reads
any of them, :func:`one_line` makes the text fit one line.
"""

import json
import re

from k8s_mgmt_lab.errors import LabError

# Longer details are cut here (the driver's own one line is at most 500
# characters, k8s_mgmt.exceptions.ONE_LINE_LIMIT).
DETAIL_LIMIT = 600
_TRACEBACK = 'Traceback (most recent call last):'
# A Keystone fernet token: never printed, whatever text carries one.
_FERNET_TOKEN = re.compile(r'gAAAAA[A-Za-z0-9_=-]{40,}')
_TAG = re.compile(r'<[^>]*>')


class TackerApiError(LabError):
    """A call to Tacker's API failed, or the operation it started did.

    ``operation`` says what was asked ("instantiate VNF instance X"),
    ``op_id`` the operation occurrence when there is one, ``status`` the
    HTTP status of a refused request, ``state`` the occurrence's last
    state, ``detail`` Tacker's reason on one line and ``occurrence`` the
    occurrence last read."""

    def __init__(self, operation, detail, op_id=None, status=None,
                 state=None, occurrence=None):
        self.operation = operation
        self.detail = one_line(detail)
        self.op_id = op_id
        self.status = status
        self.state = state
        self.occurrence = occurrence
        words = [operation]
        if op_id:
            words[0] += ' (op occurrence %s)' % op_id
        if status is not None:
            words.append('HTTP %d' % status)
        if state:
            words.append(state)
        words.append(self.detail or 'no detail given')
        super().__init__(': '.join(words))


def one_line(text, limit=DETAIL_LIMIT):
    """``text`` on one line: a traceback reduced to its last line, blanks
    squeezed, tokens masked, cut to ``limit`` characters."""
    if text is None:
        return ''
    text = str(text)
    if _TRACEBACK in text:
        head, _, trace = text.partition(_TRACEBACK)
        ends = [line for line in trace.splitlines()
                if line.strip() and not line.startswith((' ', '\t'))]
        text = ' '.join(part for part in (head.strip(),
                                          ends[-1] if ends else '') if part)
    text = _FERNET_TOKEN.sub('***', ' '.join(text.split()))
    if len(text) > limit:
        cut = len(text) - limit
        text = '%s... (%d more characters)' % (text[:limit].rstrip(), cut)
    return text


def detail_of(body):
    """Tacker's reason in a response body (bytes or text), as given."""
    if isinstance(body, bytes):
        body = body.decode('utf-8', 'replace')
    try:
        data = json.loads(body)
    except ValueError:
        return _TAG.sub(' ', body)
    return _detail_in(data) or body


def _detail_in(data):
    if not isinstance(data, dict):
        return None
    for key in ('detail', 'message'):
        if isinstance(data.get(key), str):
            return data[key]
    # {"error": {...}}, {"TackerError": {...}}: one wrapped fault.
    inner = [value for value in data.values() if isinstance(value, dict)]
    if len(inner) == 1:
        return _detail_in(inner[0])
    return None


def occurrence_detail(occurrence):
    """The reason a failed operation occurrence gives, or ''."""
    error = occurrence.get('error') or {}
    if isinstance(error, dict):
        return error.get('detail') or error.get('title') or ''
    return str(error)
