"""The lab's tacker-conductor logs: where they are, and what Tacker wrote
in them since a given moment (an operation lands on any conductor, so
every log is read)."""

import os
import time

from k8s_mgmt_lab import manager
from k8s_mgmt_lab.openstack import control_plane
from k8s_mgmt_lab.openstack import services
from k8s_mgmt_lab.openstack import tacker_conductors

# What Tacker 16's conductor logs when two conductors onboarded one
# package at once and the second one's VnfPackageVnfd row was refused
# (tacker.common.exceptions.VnfPackageVnfdIdDuplicate).
ONBOARD_RACE = 'VnfPackageVnfdIdDuplicate'
# What Tacker's TOSCA parser logs once a conductor has read a package's
# zip (every conductor reads every uploaded package: a fan-out), with the
# package's id.
UNPACKED = '%s.zip" successfully passed validation'
# Seconds a package may stay PROCESSING after every conductor read it
# before it counts as stalled: the last reader onboards it at once, in
# a second or two.
STALL_GRACE = 30.0


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
        return '\n'.join(self.since_each().values())

    def since_each(self):
        """{path: what was written to it since}; a log not there (yet)
        has nothing."""
        texts = {}
        for path, offset in self.offsets.items():
            try:
                with open(path, 'rb') as handle:
                    handle.seek(offset)
                    texts[path] = handle.read().decode('utf-8', 'replace')
            except OSError:
                texts[path] = ''
        return texts


class StallWatch(object):
    """Whether Tacker 16 lost the package ``package_id`` to its
    conductors' download counter (doc/source/tacker.rst, "Several
    conductors"): every conductor logged reading its zip after ``mark``
    (a :class:`Mark` taken before the upload), ``grace`` seconds ago, and
    it is still PROCESSING. Each conductor adds one to the counter before
    reading and takes one away after, through an ORM object it loaded
    before the other's write (a stale value): two that finish together
    can leave it above zero for good, and only a reader that sees zero
    onboards. Called with nothing: the reason, or None while it may
    still come."""

    def __init__(self, mark, package_id, grace=None, clock=time.monotonic):
        self.mark = mark
        self.needle = UNPACKED % package_id
        self.grace = STALL_GRACE if grace is None else grace
        self.clock = clock
        self.all_read_at = None

    def __call__(self):
        if self.all_read_at is None:
            texts = self.mark.since_each()
            if len(texts) < 2 or any(self.needle not in text
                                     for text in texts.values()):
                return None
            self.all_read_at = self.clock()
        waited = self.clock() - self.all_read_at
        if waited < self.grace:
            return None
        return ('still PROCESSING %.0f s after each of the %d '
                'tacker-conductors read it: Tacker 16 lost it to its '
                'download counter (two conductors finished together)'
                % (waited, len(self.mark.offsets)))


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
