"""The events of a playbook run, read from the k8s_mgmt_events callback.

The callback (``callback_plugins/k8s_mgmt_events.py``, run by
ansible-playbook on the Ansible server) prints one line per event:
``K8SMGMT-EVENT {json}``. :func:`parse_event` reads one such line;
:class:`Progress` follows a run line by line: it logs each task start at
INFO and each failed host at WARNING, hands every event to the caller's
``on_event``, and keeps what an error or a result needs (the last task, the
failures, the recap). Lines that are not events are logged at DEBUG,
redacted. Nothing here reads Ansible's free text to decide anything.
"""

import dataclasses
import json
import re

from oslo_log import log as logging

from k8s_mgmt import secrets

LOG = logging.getLogger(__name__)

PREFIX = 'K8SMGMT-EVENT '
HOST_EVENTS = ('ok', 'changed', 'failed', 'unreachable', 'skipped')
# Recap fields as PlaybookResult names them; the callback reports Ansible's
# own names (``failures`` for ``failed``).
RECAP_FIELDS = ('ok', 'changed', 'unreachable', 'failed', 'skipped',
                'rescued', 'ignored')
_RECAP_SOURCE = {'failed': 'failures'}
MESSAGE_LIMIT = 300
_BANNER = re.compile(r'([^\w\s])\1{4,}')


@dataclasses.dataclass(frozen=True)
class TaskFailure(object):
    """One host that failed (or was unreachable) in one task."""

    host: str
    task: str
    message: str   # redacted, at most MESSAGE_LIMIT characters


def parse_event(line):
    """The event dict of a callback line, or None for any other line
    (including a damaged event line: it is logged, never trusted)."""
    if not line.startswith(PREFIX):
        return None
    try:
        event = json.loads(line[len(PREFIX):])
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get('event'),
                                                     str):
        return None
    return event


def recap_from(event):
    """{host: {RECAP_FIELDS: int}} from a ``stats`` event."""
    recap = {}
    hosts = event.get('hosts')
    if not isinstance(hosts, dict):
        return recap
    for host, counts in hosts.items():
        counts = counts if isinstance(counts, dict) else {}
        recap[str(host)] = {
            field: _count(counts.get(_RECAP_SOURCE.get(field, field)))
            for field in RECAP_FIELDS}
    return recap


def _count(value):
    return value if isinstance(value, int) and value >= 0 else 0


def short(text, limit=MESSAGE_LIMIT):
    """``text`` redacted, on one line, at most ``limit`` characters: its
    head and its tail (where the reason often is), banners of repeated
    punctuation (ssh's ``@@@@...``) left out."""
    text = _BANNER.sub('', secrets.redact(str(text)))
    text = ' '.join(text.split())
    if len(text) <= limit:
        return text
    head = limit // 3
    return text[:head] + ' ... ' + text[-(limit - head - 5):]


class Progress(object):
    """Follows one run: feed it each stdout line with :meth:`line`."""

    def __init__(self, playbook, log_prefix, on_event=None):
        self.playbook = playbook
        self.log_prefix = log_prefix
        self.on_event = on_event
        self.last_task = None
        self.failures = []
        self.recap = {}
        self.saw_recap = False

    def line(self, text):
        event = parse_event(text)
        if event is None:
            if text.strip():
                LOG.debug('%(prefix)s %(playbook)s: %(line)s',
                          {'prefix': self.log_prefix,
                           'playbook': self.playbook,
                           'line': secrets.redact(text)})
            return
        self._record(event)
        if self.on_event is not None:
            self.on_event(event)

    def _record(self, event):
        kind = event['event']
        where = {'prefix': self.log_prefix, 'playbook': self.playbook}
        if kind == 'task_start':
            self.last_task = str(event.get('task') or '')
            LOG.info('%(prefix)s %(playbook)s: TASK %(task)s',
                     dict(where, task=secrets.redact(self.last_task)))
        elif kind == 'play_start':
            LOG.info('%(prefix)s %(playbook)s: PLAY %(play)s',
                     dict(where, play=secrets.redact(str(
                         event.get('play') or ''))))
        elif kind == 'stats':
            self.recap = recap_from(event)
            self.saw_recap = True
        elif kind in ('failed', 'unreachable') and not event.get('ignored'):
            failure = TaskFailure(
                host=str(event.get('host') or '?'),
                task=short(event.get('task') or self.last_task or '?', 120),
                message=short(event.get('msg') or kind))
            self.failures.append(failure)
            LOG.warning('%(prefix)s %(playbook)s: %(host)s %(kind)s in '
                        'TASK %(task)s: %(msg)s',
                        dict(where, host=failure.host, kind=kind.upper(),
                             task=failure.task, msg=failure.message))
        elif kind in HOST_EVENTS:
            LOG.debug('%(prefix)s %(playbook)s: %(host)s %(kind)s',
                      dict(where, host=event.get('host'), kind=kind))

    def failed_hosts(self):
        """Hosts with failures: from the events, and from the recap (which
        also counts hosts whose failure event was lost)."""
        hosts = [f.host for f in self.failures]
        for host, counts in sorted(self.recap.items()):
            if (counts['failed'] or counts['unreachable']) and \
                    host not in hosts:
                hosts.append(host)
        return hosts
