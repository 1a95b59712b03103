"""Per-instance state that every tacker-conductor reads the same.

Tacker runs several conductors, and each operation lands on whichever takes
it from the queue. What a later operation must find again (the pinned host
keys of the instance's VMs, which master was initialised, the VRRP
password of its load balancers: :data:`SHARED_FILES` of the state
directory) therefore lives in Tacker's database, in the VNF instance's
``metadata`` under :data:`METADATA_KEY`, sealed with the state key
(:mod:`k8s_mgmt.state_key`, the same file on every conductor host):

* sealed, because the metadata is shown to every reader of the instance
  (``openstack vnflcm show``) and can be changed by any member of its
  project (``openstack vnflcm update``): the seal hides the VRRP password
  and makes a changed or swapped value fail to open, so a pin can never be
  replaced through the API. The sealed document names its instance; one
  copied from another instance is refused.
* the local state directory is a cache: each hook first rewrites it from
  the database (:meth:`SharedState.pull`), and every change the hook makes
  to it is sealed and saved at once (:meth:`SharedState.push`, through
  :func:`k8s_mgmt.state_watch.changed`), so a conductor killed mid-operation
  leaves what it had learnt for the next one. A local state found with
  nothing in the database (written before this version) is saved there
  once.

Outside Tacker (the CLI, the lab's own conductor, tests with plain dicts)
there is no database: the state directory is the only home, as before.
"""

import contextlib
import json
import threading

from cryptography import fernet
from oslo_log import log as logging

from k8s_mgmt import exceptions
from k8s_mgmt import state as state_mod
from k8s_mgmt import state_key
from k8s_mgmt import state_watch

LOG = logging.getLogger(__name__)

METADATA_KEY = 'k8sMgmtState'
FORMAT = 'v1'
SHARED_FILES = (state_mod.HOST_KEYS, state_mod.VRRP_PASSWORD,
                state_mod.CLUSTER, state_mod.REQUEST_PARAMS,
                state_mod.REGISTRY)
# What the instance shows every reader of it, unsealed: nothing secret.
# Tacker keeps metadata as a dict of strings: one key per value.
PUBLIC_REGISTRY_PREFIX = 'k8sMgmtRegistry'


class SharedStateError(exceptions.MgmtDriverError):
    message = ('shared state of VNF instance %(instance)s (its metadata '
               '"%(key)s" in Tacker\'s database): %(problem)s')


def unseal(key, instance, value):
    """The files ``value`` seals for ``instance`` (a VNF instance id), opened
    with ``key`` (a state_key.StateKey); SharedStateError saying why not."""
    parts = value.split('.', 2) if isinstance(value, str) else ()
    if len(parts) != 3 or parts[0] != FORMAT:
        raise _error(instance, 'is not a value this driver wrote (%s.<key '
                     'id>.<token> expected); was it changed through the '
                     'API?' % FORMAT)
    sealed_with, token = parts[1], parts[2]
    if sealed_with != key.key_id:
        raise _error(instance, (
            'was sealed with the state key %s, and this conductor\'s %s (%s) '
            'is another one: copy the key file from a conductor host that '
            'has key %s' % (sealed_with, key.path, key.key_id, sealed_with)))
    try:
        document = json.loads(key.open(token))
    except (fernet.InvalidToken, ValueError):
        raise _error(instance, 'does not open with the state key %s (%s): it '
                     'was changed after it was sealed'
                     % (key.path, key.key_id))
    if not isinstance(document, dict) or \
            document.get('instance') != instance:
        raise _error(instance, 'was sealed for VNF instance %s' % (
            document.get('instance') if isinstance(document, dict)
            else None))
    files = document.get('files')
    if not isinstance(files, dict) or not all(
            name in SHARED_FILES and isinstance(text, str)
            for name, text in files.items()):
        raise _error(instance, 'holds files this driver does not keep')
    return files


def _error(instance, problem):
    return SharedStateError(instance=instance, key=METADATA_KEY,
                            problem=problem)


class InstanceMetadata(object):
    """The sealed value in a Tacker (v1) VnfInstance's ``vnf_metadata``.

    The field is a dict of strings that Tacker saves only when it is
    assigned anew (a change inside the dict goes unnoticed), so every put
    assigns a new dict and saves the instance at once."""

    def __init__(self, vnf_instance):
        self.vnf_instance = vnf_instance

    @staticmethod
    def usable(vnf_instance):
        """True for a Tacker versioned object that can save itself."""
        return (callable(getattr(vnf_instance, 'save', None)) and
                callable(getattr(vnf_instance, 'obj_what_changed', None)) and
                'vnf_metadata' in getattr(vnf_instance, 'fields', ()))

    def get(self):
        metadata = self.vnf_instance.vnf_metadata or {}
        return metadata.get(METADATA_KEY)

    def put(self, value):
        """Save ``value`` (None: remove the key)."""
        metadata = dict(self.vnf_instance.vnf_metadata or {})
        if value is None:
            if METADATA_KEY not in metadata:
                return
            del metadata[METADATA_KEY]
        else:
            metadata[METADATA_KEY] = value
        self.vnf_instance.vnf_metadata = metadata
        self.vnf_instance.save()


class V2Metadata(object):
    """The sealed value in the ``metadata`` of a VnfInstanceV2 as Tacker's
    v2 conductor hands it to a script (a dict). Nothing can be saved from
    the script: Tacker saves the instance the script returns when the
    operation completes, so ``put`` changes the dict, and the hook returns
    it (:mod:`k8s_mgmt.v2.operations`)."""

    def __init__(self, vnf_instance):
        self.vnf_instance = vnf_instance

    def get(self):
        return (self.vnf_instance.get('metadata') or {}).get(METADATA_KEY)

    def put(self, value):
        metadata = dict(self.vnf_instance.get('metadata') or {})
        if value is None:
            metadata.pop(METADATA_KEY, None)
        else:
            metadata[METADATA_KEY] = value
        self.vnf_instance['metadata'] = metadata


class SharedState(object):
    """The shared copy of one instance's state, and its local cache."""

    def __init__(self, local, home, key):
        self.local = local          # state.InstanceState
        self.home = home            # InstanceMetadata (get/put)
        self.key = key              # state_key.StateKey
        self.instance = local.vnf_instance_id
        self._lock = threading.Lock()
        self._saved = None          # the files last pushed or pulled

    def _local_files(self):
        files = {}
        for name in SHARED_FILES:
            text = self.local.read(name)
            if text is not None:
                files[name] = text
        return files

    def seal(self, files):
        document = json.dumps({'instance': self.instance, 'files': files},
                              sort_keys=True).encode('utf-8')
        return '%s.%s.%s' % (FORMAT, self.key.key_id, self.key.seal(document))

    def open(self, value):
        """The files ``value`` seals; SharedStateError saying why not."""
        return unseal(self.key, self.instance, value)

    def pull(self):
        """Rewrite the local cache from the database; a local state with
        nothing in the database is saved there (once)."""
        with self._lock:
            value = self.home.get()
            if value is None:
                files = self._local_files()
                if files:
                    LOG.info('VNF instance %s: saving its local state (%s) '
                             'into Tacker\'s database, where every '
                             'conductor finds it', self.instance,
                             ', '.join(sorted(files)))
                    self._put(files)
                else:
                    self._saved = {}
                return
            files = self.open(value)
            for name in SHARED_FILES:
                if name in files:
                    if self.local.read(name) != files[name]:
                        self.local.write(name, files[name])
                else:
                    self.local.remove(name)
            self._saved = files

    def push(self):
        """Seal and save the local state if it changed since the last
        pull or push (no local state: the key is removed)."""
        with self._lock:
            files = self._local_files()
            if files != self._saved:
                self._put(files)

    def _put(self, files):
        self.home.put(self.seal(files) if files else None)
        self._saved = files


def publish(vnf_instance, values):
    """Show ``values`` (strings, public) in the instance's metadata, for
    ``openstack vnflcm show``: a v1 instance is saved at once; a v2
    instance (a dict) goes back to Tacker with the hook's result. False
    when there is no instance to show them on."""
    if InstanceMetadata.usable(vnf_instance):
        metadata = dict(vnf_instance.vnf_metadata or {})
        if any(metadata.get(key) != value for key, value in values.items()):
            metadata.update(values)
            vnf_instance.vnf_metadata = metadata
            vnf_instance.save()
        return True
    if isinstance(vnf_instance, dict):
        metadata = dict(vnf_instance.get('metadata') or {})
        metadata.update(values)
        vnf_instance['metadata'] = metadata
        return True
    return False


def drop_metadata(vnf_instance, keys):
    """Remove ``keys`` from the instance's metadata (a request handled:
    it is not run again by a later change). v1 objects are saved at once;
    a dict loses them from ``metadata`` and ``vnf_metadata``."""
    if InstanceMetadata.usable(vnf_instance):
        metadata = dict(vnf_instance.vnf_metadata or {})
        if any(key in metadata for key in keys):
            for key in keys:
                metadata.pop(key, None)
            vnf_instance.vnf_metadata = metadata
            vnf_instance.save()
        return
    if isinstance(vnf_instance, dict):
        for name in ('metadata', 'vnf_metadata'):
            if isinstance(vnf_instance.get(name), dict):
                vnf_instance[name] = {k: v for k, v in
                                      vnf_instance[name].items()
                                      if k not in keys}


def home_of(vnf_instance):
    """Where ``vnf_instance``'s state is shared, or None (no Tacker)."""
    if InstanceMetadata.usable(vnf_instance):
        return InstanceMetadata(vnf_instance)
    return None


@contextlib.contextmanager
def shared(ctx, home=None):
    """The hook call's shared state, pulled; every change pushed as it is
    made and once more at the end, whatever the outcome. None (and the
    local directory alone) outside Tacker. ``home``: where it is kept
    (default: the v1 instance's metadata, :func:`home_of`)."""
    home = home or home_of(ctx.vnf_instance)
    if home is None:
        yield None
        return
    local = state_mod.InstanceState(ctx.vnf_instance_id)
    sync = SharedState(local, home, state_key.load_or_create())
    sync.pull()
    try:
        with state_watch.watched(local.path, sync.push):
            yield sync
    except BaseException:
        try:
            sync.push()
        except Exception as err:    # the hook's own error goes on
            LOG.error('VNF instance %s: saving its shared state failed: '
                      '%s', ctx.vnf_instance_id, exceptions.one_line(err))
        raise
    sync.push()
