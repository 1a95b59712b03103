"""A lab's settings and its record (``lab.json`` in its state dir): what
``k8s-mgmt lab`` needs for its defaults and to find a lab that is up,
without importing the lab. :mod:`k8s_mgmt_lab.manager`, which runs a lab
and writes its record, re-exports them."""

import dataclasses
import json
import os

from k8s_mgmt_lab.errors import LabError

DEFAULT_STATE_DIR = '/var/lib/k8s-mgmt-lab'
FLAVOURS = ('simple', 'complex', 'podaffinity', 'storage', 'kubespray',
            'registry')
# Tacker's VNF LCM APIs a lab with Tacker can drive.
APIS = ('v1', 'v2')
# Defaults of the lab network (k8s_mgmt_lab.machines.net).
DEFAULT_SUBNET = '10.254.0.0/24'
DEFAULT_BRIDGE = 'k8slab0'
# Every netns and veth the lab makes starts with the tag, so cleanup can find
# leftovers by name. Kept short: a veth name is at most 15 characters.
DEFAULT_TAG = 'k8l'
# The environment variable naming a running control plane that labs
# share (``k8s-mgmt lab up --control-plane``'s default).
SHARED_PLANE_ENV = 'K8S_MGMT_LAB_CONTROL_PLANE'
# The environment variable naming a warm plane that labs with a plane of
# their own (``--own-control-plane`` without ``--control-plane``) borrow
# one at a time instead of starting one (a test worker sets it).
WARM_PLANE_ENV = 'K8S_MGMT_LAB_WARM_PLANE'
LAB_FILE = 'lab.json'
PACKAGE_SUBDIR = 'vnf_package'


@dataclasses.dataclass(frozen=True)
class LabSettings:
    state_dir: str = DEFAULT_STATE_DIR
    subnet: str = DEFAULT_SUBNET
    bridge: str = DEFAULT_BRIDGE
    tag: str = DEFAULT_TAG
    password: str = 'ubuntu'         # of user ubuntu on every lab VM
    compute_hosts: int = 4
    init_delay: float = 0.0          # seconds the kubeadm init stand-in takes
    join_delay: float = 0.0          # seconds the kubeadm join stand-in takes
    upgrade_delay: float = 0.0       # kubeadm upgrade apply|node, likewise
    # etcd's raft timing in the VMs: 'lab' (slow-network tuning, for a
    # loaded machine) or 'kubeadm' (etcd's defaults, as kubeadm runs it).
    etcd_timing: str = 'lab'
    # The state dir of a control plane shared with other labs (None:
    # $K8S_MGMT_LAB_CONTROL_PLANE, else the lab starts its own under its
    # state dir).
    control_plane: str = None
    # A control plane of the lab's own even when one is shared: its
    # stand-ins are then in RegionOne (what Tacker's v1 driver needs). With
    # control_plane: that plane, kept running after the lab is down.
    own_control_plane: bool = False
    # How many tacker-conductors a plane of the lab's own runs, each as
    # if on a host of its own.
    conductors: int = 1
    # The Tacker VNF LCM API the lab's verbs use (a lab with Tacker): its
    # package is built for it (k8s-mgmt package build --api).
    api: str = 'v1'

    @property
    def lab_file(self):
        return os.path.join(self.state_dir, LAB_FILE)

    @property
    def package_dir(self):
        """The VNF package built for this lab, unpacked as Tacker keeps
        it."""
        return os.path.join(self.state_dir, PACKAGE_SUBDIR)

    @property
    def package_zip(self):
        return self.package_dir + '.zip'


def read_record(settings):
    """The record of the lab in ``settings.state_dir``; None when no lab
    is up there."""
    try:
        with open(settings.lab_file) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise LabError('cannot read %s: %s' % (settings.lab_file, err))
