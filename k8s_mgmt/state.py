"""Per-instance state on the driver's host: ``<state_dir>/<vnf_instance_id>/``.

What an operation must find again on a re-run or a later operation lives
here: the pinned host keys of the instance's VMs, the VRRP password of its
load balancers, which master was initialised, and (outside Tacker) the
kubeconfig and VIM config of the cluster. Every file is written atomically
with mode 0600 in a 0700 directory, because most of them hold secrets.
"""

import json
import os
import re
import secrets as pysecrets
import string
import tempfile

from k8s_mgmt import conf
from k8s_mgmt import secrets

HOST_KEYS = 'host_keys.json'
VRRP_PASSWORD = 'vrrp_password'
CLUSTER = 'cluster.json'
KUBECONFIG = 'kubeconfig'
VIM_CONFIG = 'vim_config.yaml'

# keepalived cuts PASS authentication at 8 characters (configure_lb.sh).
VRRP_PASSWORD_LENGTH = 8
_VRRP_ALPHABET = string.ascii_letters + string.digits
_SAFE_ID = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$')


class InstanceState(object):
    """The state directory of one VNF instance."""

    def __init__(self, vnf_instance_id, base_dir=None):
        if not isinstance(vnf_instance_id, str) or \
                not _SAFE_ID.match(vnf_instance_id):
            # It becomes a directory name: no '/', no '..'.
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
        os.makedirs(self.path, mode=0o700, exist_ok=True)
        os.chmod(self.path, 0o700)

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
        return self.file(name)

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
