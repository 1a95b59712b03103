# k8s-mgmt lab: an Ansible callback that records every playbook run on the
# lab's Ansible server (lab-only audit, not part of kubespray or k8s-mgmt).
"""Appends one JSON line per ``ansible-playbook`` run to AUDIT_LOG.

Loaded without being enabled (``CALLBACK_NEEDS_ENABLED = False``) from
Ansible's system plugin directory, so no ansible.cfg or environment setting
of the caller turns it off. Each line holds the playbook, ``--limit``, the
extra vars as given, the hosts of the play recap, the hosts tasks were
delegated to, and the connection settings in effect (host-key checking,
SSH arguments, private key file) as the ssh connection plugin reads them.
"""

import json
import os
import sys
import time

from ansible import constants as C
from ansible import context
from ansible.plugins.callback import CallbackBase

AUDIT_LOG = os.environ.get('K8S_MGMT_LAB_AUDIT_LOG',
                           '/var/log/k8s-mgmt-lab/playbook-runs.jsonl')
SSH_OPTIONS = ('host_key_checking', 'ssh_args', 'ssh_common_args',
               'ssh_extra_args', 'private_key_file', 'password')
# Inventory variables that change how a host is reached.
HOST_VARS = ('ansible_host_key_checking', 'ansible_ssh_host_key_checking',
             'ansible_ssh_common_args', 'ansible_ssh_extra_args',
             'ansible_ssh_args', 'ansible_ssh_private_key_file',
             'ansible_password', 'ansible_ssh_pass', 'ansible_become_password')
SECRET_VARS = ('ansible_password', 'ansible_ssh_pass',
               'ansible_become_password')


def _ssh_option(name):
    try:
        value = C.config.get_config_value(name, plugin_type='connection',
                                          plugin_name='ssh')
    except Exception as err:  # an unknown option in this Ansible version
        return 'unreadable: %s' % err
    if name == 'password':
        return value is not None
    return value


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'notification'
    CALLBACK_NAME = 'k8s_mgmt_lab_audit'
    CALLBACK_NEEDS_ENABLED = False

    def __init__(self):
        super().__init__()
        self._record = {'started': time.time(), 'cwd': os.getcwd(),
                        'argv': list(sys.argv)}
        self._delegated = set()
        self._connected = set()
        self._host_vars = {}
        self._names = {}

    def v2_playbook_on_play_start(self, play):
        # Delegated results name the target by address: map it back to
        # the inventory host.
        inventory = play.get_variable_manager()._inventory
        for host in inventory.hosts.values():
            address = host.get_vars().get('ansible_host')
            if address:
                self._names.setdefault(str(address), host.get_name())

    def v2_playbook_on_start(self, playbook):
        args = context.CLIARGS
        self._record.update(
            playbook=playbook._file_name,
            limit=args.get('subset'),
            extra_vars=list(args.get('extra_vars') or ()),
            inventory=list(args.get('inventory') or ()),
            become=bool(args.get('become')),
            become_user=args.get('become_user'),
            ssh=dict((name, _ssh_option(name)) for name in SSH_OPTIONS))

    def _note(self, result, *args, **kwargs):
        host = result._host.get_name()
        delegated = result._result.get('_ansible_delegated_vars') or {}
        target = (delegated.get('ansible_delegated_host') or
                  delegated.get('ansible_host'))
        if delegated and target:
            self._delegated.add(self._names.get(str(target), str(target)))
        elif result._task.action not in _LOCAL_ACTIONS:
            self._connected.add(host)
        if host not in self._host_vars:
            found = {}
            for group in result._host.get_groups():
                found.update(group.get_vars())
            found.update(result._host.get_vars())
            self._host_vars[host] = dict(
                (k, '<set>' if k in SECRET_VARS else found[k])
                for k in HOST_VARS if k in found)

    v2_runner_on_ok = _note
    v2_runner_on_failed = _note
    v2_runner_on_unreachable = _note

    def v2_playbook_on_stats(self, stats):
        summary = dict((host, stats.summarize(host))
                       for host in sorted(stats.processed))
        self._record.update(
            ended=time.time(), hosts=sorted(stats.processed),
            connected=sorted(self._connected),
            delegated_to=sorted(self._delegated),
            host_vars=self._host_vars, recap=summary,
            failed=any(s['failures'] or s['unreachable']
                       for s in summary.values()))
        line = json.dumps(self._record, sort_keys=True, default=str)
        with open(AUDIT_LOG, 'a') as handle:
            handle.write(line + '\n')


# Actions that run on the controller and open no connection to the host.
_LOCAL_ACTIONS = frozenset(
    prefix + name for prefix in ('', 'ansible.builtin.',
                                 'ansible.legacy.')
    for name in ('assert', 'fail', 'debug', 'set_fact', 'meta', 'pause',
                 'add_host', 'group_by', 'include_vars', 'include_tasks',
                 'include_role', 'import_tasks', 'import_role'))
