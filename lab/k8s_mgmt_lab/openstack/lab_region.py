"""A lab's OpenStack: real Keystone and Heat (a control plane of the lab's
own, or one shared by several labs), and the lab's region of it, where
the lab serves Nova, Neutron, Cinder and Glance over its VMs.

    region = LabRegion(state_dir, tag, shared_plane=None)
    region.start_plane()              # own plane: up; shared: must be up
    region.serve(subnet, network_id, hosts, provisioner, volume_backend)
    path = region.stacks().create_flavour(...)
    region.record()                   # what lab.json keeps
    region.stop_serving()             # the daemon's stand-ins
    release(state_dir, record)        # lab down: region or whole plane
"""

import fcntl
import os

from oslo_log import log as logging

from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.openstack import bootstrap
from k8s_mgmt_lab.openstack import config
from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack.iaas import auth
from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import network as iaas_network
from k8s_mgmt_lab.openstack.iaas import serve
from k8s_mgmt_lab.openstack import stacks as stacks_mod
from k8s_mgmt_lab.openstack import state as plane_state
from k8s_mgmt_lab.openstack import tenancy
# Defined with the lab's settings, which the command line reads without
# importing the lab.
from k8s_mgmt_lab.settings import SHARED_PLANE_ENV
from k8s_mgmt_lab.settings import WARM_PLANE_ENV

LOG = logging.getLogger(__name__)

PLANE_SUBDIR = 'openstack'
IAAS_STATE = 'iaas.json'
PASSWORD_FILE = 'os-password'
# In a kept plane's dir: the state dir of the lab that uses it.
IN_USE_FILE = 'in-use-by'


def own_plane_dir(state_dir):
    return os.path.join(state_dir, PLANE_SUBDIR)


def shared_plane_default():
    return os.environ.get(SHARED_PLANE_ENV) or None


def warm_plane_default():
    return os.environ.get(WARM_PLANE_ENV) or None


class LabRegion(object):

    def __init__(self, state_dir, tag, shared_plane=None, kept_plane=None,
                 cache_dir=control_plane.DEFAULT_CACHE, conductors=1,
                 warm_plane=None):
        """``shared_plane``: the state dir of a plane labs share, each in
        a region of its own. ``kept_plane``: the state dir of a plane of
        this lab's own that outlives it (started warm by the next lab
        that uses it, one lab at a time). ``warm_plane``: a kept plane
        this lab borrows if no other lab that is up holds it, else (or
        with neither) a plane of the lab's own inside its state dir.
        ``conductors``: how many tacker-conductors a plane of the lab's
        own runs."""
        self.state_dir = os.path.abspath(state_dir)
        self.name = tenancy.name_for(tag)
        # Labs sharing a plane each have a region; a plane of the lab's own
        # has its one region, as a single-region cloud has.
        self.region = (self.name if shared_plane
                       else bootstrap.REGION)
        self.shared = bool(shared_plane)
        self.borrowed = not (self.shared or kept_plane) and bool(warm_plane)
        kept_plane = kept_plane or (warm_plane if self.borrowed else None)
        self.kept = bool(kept_plane) and not self.shared
        self.cache_dir, self.conductors = cache_dir, conductors
        # A plane of the lab's own runs Tacker too: Tacker 16's v1 infra
        # driver names no region, so it can drive only stand-ins in
        # RegionOne, which a shared plane's labs are not.
        self.tacker = not self.shared
        if self.shared:
            root = os.path.abspath(shared_plane)
        elif self.kept:
            root = os.path.abspath(kept_plane)
        else:
            root = own_plane_dir(self.state_dir)
        self.plane = self._plane(root)
        self.iaas = None
        self.credentials = None

    def _plane(self, root):
        return control_plane.ControlPlane(
            root, self.cache_dir, tacker=self.tacker,
            conductors=self.conductors if self.tacker else None)

    def start_plane(self):
        """The control plane started (set up on its first start). Of a
        shared or kept one, what does not run is started (a dead service,
        Tacker for a lab that needs it, conductors of another count) and
        what runs is used as it is; it keeps running after this lab is
        down: whoever shares it stops it (``k8s-mgmt lab control-plane
        --dir DIR down``)."""
        if not (self.shared or self.kept):
            self.plane.up()
            return
        root = self.plane.layout.root
        os.makedirs(root, mode=0o700, exist_ok=True)
        # Two labs coming up at once on one shared plane: one starts it.
        with open(os.path.join(root, 'start.lock'), 'w') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.kept:
                try:
                    self._claim_kept_plane()
                except LabError as err:
                    if not self.borrowed:
                        raise
                    LOG.info('%s; the lab starts a control plane of its '
                             'own', err)
                    self.kept = self.borrowed = False
                    self.plane = self._plane(own_plane_dir(self.state_dir))
            if self.shared or self.kept:
                self.plane.up()
                return
        self.plane.up()

    def _claim_kept_plane(self):
        """A kept plane serves one lab at a time (its one region holds
        that lab's stand-ins): refused while another lab that is up uses
        it (called under the plane's start lock)."""
        marker = os.path.join(self.plane.layout.root, IN_USE_FILE)
        try:
            with open(marker) as handle:
                other = handle.read().strip()
        except FileNotFoundError:
            other = None
        if other and other != self.state_dir and os.path.exists(
                os.path.join(other, 'lab.json')):
            raise LabError('the control plane in %s is the own plane of '
                           'the lab in %s, which is up; take that lab down '
                           'first' % (self.plane.layout.root, other))
        plane_state.write_private(marker, self.state_dir + '\n')

    def serve(self, subnet, network_id, compute_hosts, provisioner,
              volume_backend, reserved=None):
        """The stand-ins over the lab's state (``iaas.json`` in its state
        dir), in the lab's region of the catalog. ``reserved``: {ip: name}
        of hosts outside the stacks (the Ansible server), each given a
        Neutron port first, so no server's port takes its address."""
        plane = self.plane
        state = model.State.open(
            os.path.join(self.state_dir, IAAS_STATE), subnet,
            compute_hosts, network_id=network_id)
        tokens = auth.KeystoneTokens(
            bootstrap.admin_session(plane.ports,
                                    plane_state.secrets(plane.layout)),
            config.keystone_url(plane.ports))
        self.iaas = serve.Iaas(state, tokens, None, provisioner,
                               volume_backend).start()
        project = tenancy.register(plane, self.name, self.iaas.endpoints(),
                                   self.region)
        ports = iaas_network.Ports(state)
        for ip, name in (reserved or {}).items():
            with state.lock:
                taken = any(f['ip_address'] == ip
                            for p in state.records('ports').values()
                            for f in p['fixed_ips'])
                if not taken:
                    ports.create({'network_id': network_id, 'name': name,
                                  'fixed_ips': [{'ip_address': ip}]},
                                 project)
                    state.save()
        self.credentials = tenancy.credentials(plane, self.name,
                                               self.region)
        password_file = os.path.join(self.state_dir, PASSWORD_FILE)
        plane_state.write_private(password_file,
                                  self.credentials['password'])
        return self.iaas

    def stacks(self):
        """The lab's Heat side (openstack.stacks) in its project and
        region."""
        return stacks_mod.Stacks(tenancy.session(self.credentials),
                                 region_name=self.region)

    def record(self, daemon_log=None):
        return {'control_plane': self.plane.layout.root,
                'shared': self.shared, 'kept': self.kept,
                'tacker': self.tacker,
                'region': self.region,
                'project': self.name,
                'iaas': {name: server.url for name, server
                         in self.iaas.servers.items()},
                'log': daemon_log}

    def stop_serving(self):
        if self.iaas is not None:
            self.iaas.stop()
            self.iaas = None


def openrc(state_dir, credentials):
    """The lab's openrc text (no secret: the password is read from the
    lab's 0600 password file when sourced)."""
    return tenancy.openrc(credentials, os.path.join(
        os.path.abspath(state_dir), PASSWORD_FILE))


def client_run(record, words, **run_kwargs):
    """python-openstackclient (from the lab's cache) run with ``words``
    as the lab's admin, in its project and region; the finished
    process."""
    import subprocess
    argv, env = tenancy.client_command(record, words)
    return subprocess.run(argv, env=env, **run_kwargs)


def release(state_dir, record):
    """What ``lab down`` does to OpenStack, before the state dir goes: a
    shared plane loses the lab's region and project; a plane of the lab's
    own is stopped (by PID, whatever its record says). Never raises for a
    plane that is down or gone: the rest of the teardown must run."""
    section = (record or {}).get('openstack') or {}
    own = own_plane_dir(os.path.abspath(state_dir))
    if section.get('kept'):
        _leave_kept_plane(state_dir, record)
    if section.get('shared'):
        plane = control_plane.ControlPlane(section['control_plane'])
        try:
            tenancy.unregister(plane, section['region'])
        except Exception as err:    # a shared plane already stopped
            LOG.warning('lab region %s not removed from %s: %s',
                        section.get('region'), section['control_plane'],
                        err)
    if os.path.isdir(own):
        control_plane.ControlPlane(own).down()


def _leave_kept_plane(state_dir, record):
    """What a lab leaves of itself in a kept plane, removed: its stacks,
    its stand-ins' endpoints and its project (its objects in Tacker went
    first: :func:`k8s_mgmt_lab.tacker_lcm.cleanup.release`, called by
    ``lab down``); the plane keeps running for the next lab."""
    section = record['openstack']
    plane = control_plane.ControlPlane(section['control_plane'])
    try:
        tenancy.unregister(plane, section['project'],
                           region=section['region'])
    except Exception as err:    # the plane stopped meanwhile
        LOG.warning('the lab\'s part of control plane %s not removed: %s',
                    section['control_plane'], err)
    marker = os.path.join(section['control_plane'], IN_USE_FILE)
    try:
        with open(marker) as handle:
            ours = handle.read().strip() == os.path.abspath(state_dir)
        if ours:
            os.unlink(marker)
    except FileNotFoundError:
        pass
