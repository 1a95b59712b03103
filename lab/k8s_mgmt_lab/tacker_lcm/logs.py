"""The lab's tacker-conductor logs: where they are, and what Tacker wrote
in them since a given moment (an operation lands on any conductor, so
every log is read)."""

import os

from k8s_mgmt_lab import manager
from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack import services
from k8s_mgmt_lab.openstack import tacker_conductors

# What Tacker 16's conductor logs when two conductors onboarded one
# package at once and the second one's VnfPackageVnfd row was refused
# (tacker.common.exceptions.VnfPackageVnfdIdDuplicate).
ONBOARD_RACE = 'VnfPackageVnfdIdDuplicate'


def _plane(state_dir):
    record = manager.read_record(manager.LabSettings(state_dir=state_dir))
    return control_plane.ControlPlane(record['openstack']['control_plane'])


def conductor_logs(state_dir):
    """Every tacker-conductor's log, first to last."""
    plane = _plane(state_dir)
    return [plane.supervisor.log_path(name) for name in
            tacker_conductors.service_names(plane.conductors)]


def driver_logs(state_dir):
    """Every log the driver writes in: each conductor's (the v1 driver
    runs in it), then the v2 script's beside each."""
    plane = _plane(state_dir)
    return conductor_logs(state_dir) + [
        services.v2_script_log(plane.layout, number)
        for number in range(1, plane.conductors + 1)]


class Mark(object):
    """Where each log ends now; :meth:`since` is what was written after."""

    def __init__(self, paths):
        self.offsets = {path: _size(path) for path in paths}

    def since(self):
        texts = []
        for path, offset in self.offsets.items():
            try:
                with open(path, 'rb') as handle:
                    handle.seek(offset)
                    texts.append(handle.read().decode('utf-8', 'replace'))
            except OSError:
                continue          # no log (yet): nothing written to it
        return '\n'.join(texts)


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
