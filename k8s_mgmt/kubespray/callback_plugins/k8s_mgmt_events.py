"""Ansible stdout callback of k8s-mgmt: one JSON event per line.

k8s-mgmt uploads this file to the Ansible server and selects it with
ANSIBLE_STDOUT_CALLBACK=k8s_mgmt_events, so that the driver follows a
playbook run from data instead of from Ansible's human output. Each event is
one line: the prefix ``K8SMGMT-EVENT`` then a JSON object whose ``event`` is
``playbook_start``, ``play_start``, ``task_start``, a per-host result
(``ok``, ``changed``, ``failed``, ``unreachable``, ``skipped``) or
``stats`` (the play recap). Messages are cut short: the driver logs them and
puts them in its errors, never the whole module output.

It runs inside ansible-playbook on the Ansible server (ansible-core 2.17),
imported from the path in ANSIBLE_CALLBACK_PLUGINS; it needs nothing but
ansible-core.
"""

import json

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = '''
name: k8s_mgmt_events
type: stdout
short_description: one JSON event per line, for k8s-mgmt
description:
  - Prints playbook, play and task starts, each host's result and the
    final recap as single-line JSON objects after a fixed prefix.
'''

PREFIX = 'K8SMGMT-EVENT '
# The driver cuts messages to ~300 characters, keeping head and tail (the
# reason often comes last); this only bounds the event line.
MESSAGE_LIMIT = 2000
RECAP_FIELDS = ('ok', 'changed', 'unreachable', 'failures', 'skipped',
                'rescued', 'ignored')


def _short(text, limit=MESSAGE_LIMIT):
    text = ' '.join(str(text).split())
    if len(text) <= limit:
        return text
    return text[:limit // 4] + ' ... ' + text[-(limit - limit // 4 - 5):]


def _message(result):
    """A short text saying what a task result said."""
    data = result._result
    for key in ('msg', 'reason', 'stderr', 'module_stderr', 'stdout'):
        value = data.get(key)
        if value:
            if isinstance(value, (list, dict)):
                value = json.dumps(value, sort_keys=True)
            return _short(value)
    if 'rc' in data:
        return 'exit status %s' % data['rc']
    return ''


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'stdout'
    CALLBACK_NAME = 'k8s_mgmt_events'

    def __init__(self):
        super().__init__()
        self._task = None

    def _emit(self, event, **fields):
        fields['event'] = event
        self._display.display(PREFIX + json.dumps(fields, sort_keys=True))

    def _host_event(self, event, result, **fields):
        self._emit(event, host=result._host.get_name(),
                   task=result._task.get_name() or self._task,
                   msg=_message(result), **fields)

    def v2_playbook_on_start(self, playbook):
        self._emit('playbook_start', playbook=playbook._file_name)

    def v2_playbook_on_play_start(self, play):
        self._emit('play_start', play=play.get_name())

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task = task.get_name()
        self._emit('task_start', task=self._task)

    def v2_playbook_on_handler_task_start(self, task):
        self._task = task.get_name()
        self._emit('task_start', task=self._task, handler=True)

    def v2_runner_on_ok(self, result):
        changed = bool(result._result.get('changed'))
        self._host_event('changed' if changed else 'ok', result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._host_event('failed', result, ignored=bool(ignore_errors))

    def v2_runner_on_unreachable(self, result):
        self._host_event('unreachable', result)

    def v2_runner_on_skipped(self, result):
        self._host_event('skipped', result)

    def v2_playbook_on_no_hosts_matched(self):
        self._emit('no_hosts_matched')

    def v2_playbook_on_stats(self, stats):
        hosts = {}
        for host in sorted(stats.processed):
            summary = stats.summarize(host)
            hosts[host] = {field: summary.get(field, 0)
                           for field in RECAP_FIELDS}
        self._emit('stats', hosts=hosts)
