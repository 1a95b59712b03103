"""A key manager for Tacker that keeps its secrets in files (no Barbican).

Tacker 16's Kubernetes VIM driver stores each VIM's fernet key in a key
manager and refuses to register a Kubernetes VIM without one
(``VimEncryptKeyError: Barbican must be enabled``); the MgmtDriver
registers the cluster it builds as such a VIM. Tacker loads its key
manager from ``[key_manager] api_class``, so the harness names this class
there: each secret is a file (mode 0600) named by a new UUID under
``<state_path>/key_manager``.
"""

import os

from oslo_config import cfg
from oslo_utils import uuidutils

from tacker.keymgr import key_manager

SUBDIR = 'key_manager'


class Secret(object):
    """What ``get`` returns: Tacker reads ``payload``."""

    def __init__(self, payload):
        self.payload = payload


class FileKeyManager(key_manager.KeyManager):

    def __init__(self, auth_url):
        self.auth_url = auth_url    # unused: there is no service to call
        self.directory = os.path.join(cfg.CONF.state_path, SUBDIR)

    def _path(self, secret_id):
        if not uuidutils.is_uuid_like(secret_id):
            raise KeyError(secret_id)
        return os.path.join(self.directory, secret_id)

    def store(self, context, managed_object, expiration=None):
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        secret_id = uuidutils.generate_uuid()
        data = (managed_object.encode() if isinstance(managed_object, str)
                else managed_object)
        fd = os.open(self._path(secret_id),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, 'wb') as handle:
            handle.write(data)
        return secret_id

    def get(self, context, managed_object_id, metadata_only=False):
        try:
            with open(self._path(managed_object_id), 'rb') as handle:
                data = handle.read()
        except FileNotFoundError:
            raise KeyError(managed_object_id)
        return Secret(None if metadata_only else data)

    def delete(self, context, managed_object_id):
        try:
            os.unlink(self._path(managed_object_id))
        except FileNotFoundError:
            raise KeyError(managed_object_id)
