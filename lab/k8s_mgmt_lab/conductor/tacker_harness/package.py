"""The lab's CSAR onboarded by Tacker's own package code.

The steps of the VNF package API and its conductor handler:
``POST /vnf_packages`` (a VnfPackage row, CREATED), ``PUT .../package_content``
(the zip stored with glance_store, here its file backend, under the lab's
state dir; the hash, size and location recorded), then the conductor's
``load_csar_data`` (``csar_utils.load_csar_data`` extracts the zip under
``vnf_package_csar_path/<package uuid>`` and the conductor stores the
VNFD, flavours and artifacts; the package becomes ONBOARDED).
"""

from oslo_log import log as logging

from k8s_mgmt_lab.conductor.tacker_harness import rpc_shim

LOG = logging.getLogger(__name__)


def onboard(context, conductor, zip_path):
    """Onboard ``zip_path``; returns the VnfPackage (with its vnfd)."""
    from tacker.db.db_sqlalchemy import models
    from tacker.glance_store import store
    from tacker import objects
    from tacker.objects import fields
    import tacker.conf

    states = fields.PackageOnboardingStateType
    package = objects.VnfPackage(context=context)
    package.onboarding_state = states.CREATED
    package.operational_state = fields.PackageOperationalStateType.DISABLED
    package.usage_state = fields.PackageUsageStateType.NOT_IN_USE
    package.user_data = {}
    package.tenant_id = context.project_id
    package.create()

    package.onboarding_state = states.UPLOADING
    package.save()
    with open(zip_path, 'rb') as body:
        location, size, _checksum, multihash, _meta = store.store_csar(
            context, package.id, body)
    package.algorithm = tacker.conf.CONF.vnf_package.hashing_algorithm
    package.hash = multihash
    package.location_glance_store = location
    package.size = size
    package.save()

    # The API then casts upload_vnf_package_content to the conductor,
    # which marks the package PROCESSING and casts load_csar_data to
    # every conductor; here the one conductor runs it directly.
    package.onboarding_state = states.PROCESSING
    package.downloading = 0
    package.save()
    rpc_shim.deliver(conductor, 'load_csar_data', context,
                     vnf_package=package)

    package = objects.VnfPackage.get_by_id(
        context, package.id, expected_attrs=[models.VnfPackage.vnfd])
    if package.onboarding_state != states.ONBOARDED:
        raise RuntimeError('VNF package %s is %s, not ONBOARDED'
                           % (package.id, package.onboarding_state))
    LOG.info('VNF package %s onboarded: VNFD %s', package.id,
             package.vnfd.vnfd_id)
    return package
