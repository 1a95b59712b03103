"""Upgrade on the lab the way Tacker's v1 API runs it: the operator
PATCHes the instance's metadata (``k8sMgmtUpgrade``, optionally
``k8sMgmtUpgradeMaxUnavailable``); Tacker calls the driver's
``modify_information_start``, merges the metadata into the instance, and
calls ``modify_information_end`` with the instance as saved. The lab keeps
the instance's metadata in lab.json, as Tacker keeps it in its database.
"""

import dataclasses
import time

from k8s_mgmt import modify_request
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm_scale


@dataclasses.dataclass
class UpgradeResult:
    vnf_instance_id: str
    target: str
    seconds: float


def upgrade(settings, to, max_unavailable=None, driver=None):
    """modify_information_start, the metadata merged, then
    modify_information_end; the driver's errors propagate."""
    change = {modify_request.UPGRADE_KEY: to}
    if max_unavailable:
        change[modify_request.MAX_UNAVAILABLE_KEY] = str(max_unavailable)
    inst_id, seconds = patch_metadata(settings, change, driver)
    return UpgradeResult(inst_id, to, seconds)


def certificates(settings, action='check', driver=None):
    """The metadata k8sMgmtCertificates PATCHed (``check``)."""
    return patch_metadata(settings, {modify_request.CERTIFICATES_KEY:
                                     action}, driver)


def patch_metadata(settings, change, driver=None):
    """Tacker's v1 PATCH of the instance's metadata: the hooks around the
    merge. (instance id, seconds)."""
    conductor = lcm_scale.Conductor(settings, driver)
    metadata = dict(conductor.record.get('vnf_metadata') or {})
    began = time.monotonic()
    # One read of the stack serves both hooks: a PATCH replaces no VM.
    instance = conductor.vnf_instance()
    instance['vnf_metadata'] = dict(metadata)
    conductor.driver.modify_information_start(
        context=None, vnf_instance=instance, modify_vnf_request=None,
        **conductor.kwargs)
    metadata.update(change)
    conductor.record['vnf_metadata'] = metadata
    manager.write_record(settings.lab_file, conductor.record)
    instance['vnf_metadata'] = dict(metadata)
    conductor.driver.modify_information_end(
        context=None, vnf_instance=instance, modify_vnf_request=None,
        **conductor.kwargs)
    # What the driver left of the metadata is what Tacker keeps.
    conductor.record['vnf_metadata'] = instance['vnf_metadata']
    manager.write_record(settings.lab_file, conductor.record)
    return conductor.inst_id, time.monotonic() - began
