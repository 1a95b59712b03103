"""A control plane's state directory: where each file lies, the ports it
listens on and the passwords it made, both chosen on its first start and
recorded there (0600), so later starts and other processes find them."""

import base64
import json
import os
import secrets as random_secrets
import socket

# Every port a control plane listens on, by its use.
PORT_NAMES = ('mariadb', 'epmd', 'rabbitmq', 'rabbitmq_dist', 'keystone',
              'heat_api')
# The ports of the lab's Nova, Neutron, Cinder and Glance stand-ins
# (iaas.serve), recorded beside the others when first asked for. Apart
# from PORT_NAMES, so a control plane given its ports keeps exactly them.
IAAS_PORT_NAMES = ('nova', 'neutron', 'cinder', 'glance')
# The ports of tacker-server and of barbican-api (its key manager),
# recorded beside the others by a plane that runs Tacker
# (ControlPlane(tacker=True)).
TACKER_PORT_NAMES = ('tacker', 'barbican')
# Every password a control plane makes, by its user, and Barbican's
# master key (KEK) of its simple_crypto plugin.
SECRET_NAMES = ('admin', 'keystone_db', 'heat_db', 'rabbitmq', 'heat',
                'heat_domain_admin', 'tacker_db', 'tacker', 'barbican_db',
                'barbican', 'barbican_kek')


def _fernet_key():
    """32 random bytes, URL-safe base64: a key Fernet (which Barbican's
    simple_crypto plugin wraps each project's key with) accepts."""
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


# How a secret is made when it is not a password.
SECRET_MAKERS = {'barbican_kek': _fernet_key}


class Layout(object):
    """The paths under one control plane's state directory."""

    def __init__(self, state_dir):
        self.root = os.path.abspath(state_dir)
        self.run = os.path.join(self.root, 'run')
        self.logs = os.path.join(self.root, 'logs')
        self.mariadb = os.path.join(self.root, 'mariadb')
        self.mariadb_data = os.path.join(self.mariadb, 'data')
        self.mariadb_cnf = os.path.join(self.mariadb, 'my.cnf')
        self.mariadb_socket = os.path.join(self.run, 'mariadb.sock')
        self.rabbitmq = os.path.join(self.root, 'rabbitmq')
        self.keystone_etc = os.path.join(self.root, 'keystone')
        self.heat_etc = os.path.join(self.root, 'heat')
        self.tacker_etc = os.path.join(self.root, 'tacker')
        # What Tacker keeps: VIM keys, packages, its glance_store files.
        self.tacker_data = os.path.join(self.tacker_etc, 'data')
        # barbican.conf (found there by Barbican as ~/barbican.conf),
        # its paste pipeline and gunicorn.conf.py; its secrets are rows
        # of its database.
        self.barbican_etc = os.path.join(self.root, 'barbican')
        self.ports = os.path.join(self.root, 'ports.json')
        self.secrets = os.path.join(self.root, 'secrets.json')
        self.openrc = os.path.join(self.root, 'openrc')
        self.bootstrapped = os.path.join(self.root, 'bootstrapped')


def write_private(path, text):
    """Write ``path`` readable by its owner only, from its creation on."""
    fd = os.open(path + '.tmp', os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                 0o600)
    with os.fdopen(fd, 'w') as handle:
        handle.write(text)
    os.replace(path + '.tmp', path)


def _load(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def port_free(port):
    """Whether nothing listens on 127.0.0.1:``port`` (a connection left in
    TIME_WAIT does not count: the services bind with SO_REUSEADDR)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(('127.0.0.1', port))
        except OSError:
            return False
    return True


def recorded_ports(layout):
    """The ports recorded by a first start, or None before one."""
    return _load(layout.ports)


def ports(layout, wanted=None, names=PORT_NAMES):
    """The control plane's ports: those recorded, else ``wanted`` (a map
    of ``names`` to numbers), else free ones found now; recorded. A name
    a ports file recorded earlier lacks is added to it."""
    recorded = _load(layout.ports)
    if recorded is None or set(names) - set(recorded):
        recorded = dict(recorded or wanted or {})
        for name in names:
            while name not in recorded:
                port = free_port()
                if port not in recorded.values():
                    recorded[name] = port
        write_private(layout.ports, json.dumps(recorded, indent=1))
    return recorded


def secrets(layout):
    """The control plane's passwords (and Barbican's KEK), made on first
    use; one a secrets file recorded earlier lacks is added to it."""
    recorded = _load(layout.secrets)
    if recorded is None or set(SECRET_NAMES) - set(recorded):
        recorded = dict(recorded or {})
        for name in SECRET_NAMES:
            if name not in recorded:
                recorded[name] = SECRET_MAKERS.get(
                    name, lambda: random_secrets.token_urlsafe(24))()
        write_private(layout.secrets, json.dumps(recorded, indent=1))
    return recorded
