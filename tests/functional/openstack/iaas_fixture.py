"""What the real-Heat test modules share: whether this machine can run
the control plane, a recording provisioner (servers recorded, never VMs)
and volume backend, and the control plane with the IaaS stand-ins served
and in its catalog, for as long as a ``with`` block lasts."""

import contextlib
import os
import socket
import threading
import time

import pytest

from k8s_mgmt_lab.openstack import bootstrap
from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack import services
from k8s_mgmt_lab.openstack import state as plane_state
from k8s_mgmt_lab.openstack.iaas import auth
from k8s_mgmt_lab.openstack.iaas import serve


def unavailable():
    """Why this machine cannot run the control plane, or None (as
    test_control_plane decides it)."""
    if os.geteuid() != 0:
        return 'the control plane runs MariaDB as root'
    for path in (services.MARIADBD, services.EPMD,
                 services.RABBITMQ_BIN + '/rabbitmq-server'):
        if not os.path.exists(path):
            return 'needs Debian mariadb-server and rabbitmq-server'
    return None


def plane_root(tmp_path_factory, name):
    """A new folder for a module's control plane; the module is skipped
    when this machine cannot run one."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    return tmp_path_factory.mktemp(name)


def listening(port):
    """Whether something accepts connections on 127.0.0.1:``port``."""
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(('127.0.0.1', port)) == 0


def admin_session(plane):
    """A keystoneauth session as ``plane``'s admin."""
    return bootstrap.admin_session(plane.ports,
                                   plane_state.secrets(plane.layout))


def running_plane(tmp_path_factory, name, **options):
    """A module's control plane (``options`` for ControlPlane, such as
    ``tacker=True``), up for the module, down after it whatever happened;
    a generator for a module fixture to ``yield from``."""
    made = control_plane.ControlPlane(
        str(plane_root(tmp_path_factory, name)), **options)
    try:
        started = time.monotonic()
        made.up()
        print('control plane %s up in %.1f s'
              % (name, time.monotonic() - started))
        yield made
    finally:
        made.down()


class RecordingProvisioner(object):
    """Servers recorded, never VMs; a console with a login prompt. With
    the stand-in's ``state``, what Nova's ``addresses`` showed of each
    server when its VM was deleted (``addresses_at_delete``)."""

    def __init__(self, state=None):
        self.lock = threading.Lock()
        self.created, self.deleted = [], []
        self.state, self.addresses_at_delete = state, {}

    def create_servers(self, specs):
        with self.lock:
            self.created.extend(specs)

    def delete_servers(self, server_ids):
        if self.state is not None:
            with self.state.lock:
                shown = {i: self.state.addresses(i) for i in server_ids}
            with self.lock:
                self.addresses_at_delete.update(shown)
        with self.lock:
            self.deleted.extend(server_ids)

    def console_output(self, server_id):
        return 'booted %s\nlab login: ' % server_id


class RecordingVolumes(object):
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = []

    def _record(self, *call):
        with self.lock:
            self.calls.append(call)

    def ensure(self, volume_id, size_gib):
        self._record('ensure', volume_id, size_gib)

    def attach(self, volume_id, server_id, device):
        self._record('attach', volume_id, server_id, device)

    def detach(self, volume_id, server_id=None, device=None):
        self._record('detach', volume_id, server_id, device)

    def delete(self, volume_id):
        self._record('delete', volume_id)


@contextlib.contextmanager
def plane_with_iaas(root, iaas_state):
    """(plane, iaas, provisioner, volumes): a control plane under
    ``root``/plane, the stand-ins over ``iaas_state`` registered in its
    catalog; everything stopped when the block ends."""
    plane = control_plane.ControlPlane(str(root / 'plane'))
    iaas = None
    try:
        plane.up()
        ports, secrets = plane.ports, plane_state.secrets(plane.layout)
        tokens = auth.KeystoneTokens(bootstrap.admin_session(ports, secrets),
                                     config.keystone_url(ports))
        provisioner = RecordingProvisioner(iaas_state)
        volumes = RecordingVolumes()
        iaas = serve.Iaas(iaas_state, tokens, plane.iaas_ports(),
                          provisioner, volumes).start()
        plane.register_iaas()
        yield plane, iaas, provisioner, volumes
    finally:
        if iaas is not None:
            iaas.stop()
        plane.down()
