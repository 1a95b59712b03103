"""Per-instance state on the driver's host: ``<state_dir>/<vnf_instance_id>/``.

Inside Tacker this directory is a cache of what Tacker's database holds
for the instance (:mod:`k8s_mgmt.shared_state`): any conductor may run the
next operation.

What an operation must find again on a re-run or a later operation lives
here: the pinned host keys of the instance's VMs, the VRRP password of its
load balancers, which master was initialised, and (outside Tacker) the
kubeconfig and VIM config of the cluster. Every file is written atomically
with mode 0600 in a 0700 directory, because most of them hold secrets. The
state directory itself is 0700 too: the driver creates it, and every
missing directory above it, that way, and tightens one it owns that is
open to others (with a warning).
"""

import json
import os
import stat
import re
import secrets as pysecrets
import string
import tempfile

from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import private_dirs
from k8s_mgmt import secrets
from k8s_mgmt.state_watch import changed

LOG = logging.getLogger(__name__)

HOST_KEYS = 'host_keys.json'
VRRP_PASSWORD = 'vrrp_password'
CLUSTER = 'cluster.json'
KUBECONFIG = 'kubeconfig'
VIM_CONFIG = 'vim_config.yaml'
# The instantiate request's cluster parameters, where Tacker keeps none
# (its v2 API): scale and heal requests then resend no password.
REQUEST_PARAMS = 'request_params.json'
# The registry VNF: its address, its CA (public) and its volume's id.
REGISTRY = 'registry.json'

# keepalived cuts PASS authentication at 8 characters (configure_lb.sh).
VRRP_PASSWORD_LENGTH = 8
_VRRP_ALPHABET = string.ascii_letters + string.digits
_SAFE_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,127}')
# The shared pin file (ssh.hostkeys.default_path) and its lock.
_PIN_FILES = (HOST_KEYS, HOST_KEYS + '.lock')
# State directories already warned about, so the warning comes once.
_LEFT_OPEN = set()


def _made_by_the_driver(base_dir):
    """True when every entry of ``base_dir`` is one the driver makes: an
    instance's directory, or the shared pin file with its lock and temp
    files. Only such a directory is the driver's to tighten."""
    for entry in os.scandir(base_dir):
        if entry.is_dir(follow_symlinks=False):
            if not _SAFE_ID.fullmatch(entry.name):
                return False
        elif not (entry.is_file(follow_symlinks=False) and (
                entry.name in _PIN_FILES or
                entry.name.startswith('.host_keys.'))):
            return False
    return True


def own_state_dir(base_dir):
    """Make the driver's state directory exist with mode 0700.

    An existing one that is open to others is tightened to 0700, with a
    warning, when this user owns it and it holds only what the driver
    makes; otherwise (a shared directory such as /tmp) it is left as it
    is, with a warning."""
    private_dirs.make_private_dirs(base_dir)
    info = os.stat(base_dir)
    mode = stat.S_IMODE(info.st_mode)
    if not mode & 0o077:
        return
    if info.st_uid == os.geteuid() and _made_by_the_driver(base_dir):
        os.chmod(base_dir, private_dirs.PRIVATE_DIR_MODE)
        LOG.warning('State directory %s was mode %04o; set to %04o: it '
                    'holds pinned host keys and cluster credentials',
                    base_dir, mode, private_dirs.PRIVATE_DIR_MODE)
    elif base_dir not in _LEFT_OPEN:
        _LEFT_OPEN.add(base_dir)
        LOG.warning('State directory %s is mode %04o and holds files the '
                    'driver did not make, or belongs to another user: left '
                    'as it is; each instance\'s directory in it is %04o',
                    base_dir, mode, private_dirs.PRIVATE_DIR_MODE)


def instance_id_problem(value):
    """Why ``value`` cannot name an instance's state directory, or None.

    It becomes a directory name, a VIM name and part of log lines: ASCII
    letters, digits, ".", "_" and "-", at most 128, no leading "." or
    "-"."""
    if not isinstance(value, str) or not _SAFE_ID.fullmatch(value):
        return ('not usable as a directory name (ASCII letters, digits, '
                '".", "_", "-", at most 128, starting with a letter or '
                'digit)')
    return None


class InstanceState(object):
    """The state directory of one VNF instance."""

    def __init__(self, vnf_instance_id, base_dir=None):
        if instance_id_problem(vnf_instance_id) is not None:
            raise ValueError('unusable VNF instance id for a state dir: %r'
                             % (vnf_instance_id,))
        self.vnf_instance_id = vnf_instance_id
        self.base_dir = base_dir or conf.CONF.k8s_mgmt.state_dir
        self.path = os.path.join(self.base_dir, vnf_instance_id)

    def file(self, name):
        return os.path.join(self.path, name)

    def host_key_file(self):
        """CONF.k8s_mgmt.host_key_file when set (shared), else ours."""
        return conf.CONF.k8s_mgmt.host_key_file or self.file(HOST_KEYS)

    def ensure_dir(self):
        own_state_dir(self.base_dir)
        private_dirs.make_private_dirs(self.path)
        os.chmod(self.path, private_dirs.PRIVATE_DIR_MODE)

    def write(self, name, text):
        """Write ``text`` (str or Secret) atomically, mode 0600."""
        self.ensure_dir()
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix='.' + name + '.')
        try:
            with os.fdopen(fd, 'w') as handle:
                os.fchmod(handle.fileno(), 0o600)
                handle.write(secrets.reveal(text))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.file(name))
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        changed(self.file(name))
        return self.file(name)

    def remove(self, name):
        """Remove the file ``name``; True when it existed."""
        try:
            os.unlink(self.file(name))
        except FileNotFoundError:
            return False
        changed(self.file(name))
        return True

    def read(self, name, default=None):
        try:
            with open(self.file(name)) as handle:
                return handle.read()
        except FileNotFoundError:
            return default

    def read_json(self, name):
        text = self.read(name)
        return json.loads(text) if text else {}

    def write_json(self, name, data):
        return self.write(name, json.dumps(data, indent=1, sort_keys=True))

    def vrrp_password(self):
        """The cluster's VRRP password: made once, then always the same.

        Every master must use the same one, and a re-run must not change
        it (that would reload keepalived on every master for nothing).
        """
        stored = (self.read(VRRP_PASSWORD) or '').strip()
        if stored:
            return secrets.Secret(stored)
        made = ''.join(pysecrets.choice(_VRRP_ALPHABET)
                       for _ in range(VRRP_PASSWORD_LENGTH))
        self.write(VRRP_PASSWORD, made + '\n')
        return secrets.Secret(made)

    def cluster_record(self):
        return self.read_json(CLUSTER)

    def update_cluster_record(self, **fields):
        record = self.cluster_record()
        record.update(fields)
        self.write_json(CLUSTER, record)
        return record
