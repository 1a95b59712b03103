"""The lab's registry: what the lab made, recorded before it is made.

``<state_dir>/lab-registry.json`` holds the lab network and every VM (its
short name, IP, netns, PIDs, status); ``cleanup`` reads it to tear a lab
down, also after the process that made it crashed. The state dir carries a
marker file so that nothing but a lab's own directory is ever removed.
"""

import contextlib
import fcntl
import json
import os
import threading

from k8s_mgmt_lab.errors import LabError

REGISTRY = 'lab-registry.json'
MARKER = '.k8s-mgmt-lab'
_thread_lock = threading.Lock()


def claim_state_dir(state_dir):
    """Make ``state_dir`` this lab's (teardown removes only marked dirs);
    a non-empty directory that is not already a lab's is refused."""
    if (os.path.isdir(state_dir) and os.listdir(state_dir) and
            not os.path.exists(os.path.join(state_dir, MARKER))):
        raise LabError('%s exists and is not a lab state dir (no %s); '
                       'pick another --state-dir' % (state_dir, MARKER))
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    open(os.path.join(state_dir, MARKER), 'a').close()


class Registry(object):
    """JSON record of the lab's network and VMs; thread- and process-safe."""

    def __init__(self, state_dir):
        self.state_dir = os.path.abspath(state_dir)
        self.path = os.path.join(self.state_dir, REGISTRY)

    @contextlib.contextmanager
    def _locked(self):
        os.makedirs(self.state_dir, exist_ok=True)
        open(os.path.join(self.state_dir, MARKER), 'a').close()
        with _thread_lock, open(self.path + '.lock', 'a') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            data = self._load()
            yield data
            tmp = self.path + '.tmp'
            with open(tmp, 'w') as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)

    def _load(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            return {'network': None, 'vms': {}}

    def read(self):
        with _thread_lock:
            return self._load()

    def set_network(self, record):
        with self._locked() as data:
            data['network'] = record

    def update_vm(self, vm_id, **fields):
        with self._locked() as data:
            data['vms'][vm_id].update(fields)

    def claim_vm(self, vm_id, candidates, record):
        """Record a new VM under the first short name no other VM uses."""
        with self._locked() as data:
            if vm_id in data['vms']:
                raise LabError('lab VM %s exists already' % vm_id)
            for other in data['vms'].values():
                if other['ip'] == record['ip']:
                    raise LabError('lab IP %s is already used by VM %s'
                                   % (record['ip'], other.get('hostname')))
            used = {r['short'] for r in data['vms'].values()}
            short = next(c for c in candidates if c not in used)
            data['vms'][vm_id] = dict(record, short=short)
            return short

    def drop_vm(self, vm_id):
        with self._locked() as data:
            data['vms'].pop(vm_id, None)
