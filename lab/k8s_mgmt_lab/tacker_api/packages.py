"""VNF packages (``/vnfpkgm/v1/vnf_packages``): create one, upload its
zip, wait until Tacker onboarded it, show, list, disable and delete.

Tacker answers the upload at once (202, the package UPLOADING) and its
conductor then reads the zip: PROCESSING, then ONBOARDED and ENABLED.
When the conductor refuses the zip it sets the package back to CREATED,
so a CREATED package after an accepted upload is a refusal, whose reason
only tacker-conductor's log has.
"""

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab.tacker_api.errors import TackerApiError

PATH = 'vnfpkgm/v1/vnf_packages'
# Seconds an upload may take: the zip travels in one request.
UPLOAD_TIMEOUT = 120.0
ONBOARDED = 'ONBOARDED'
CREATED = 'CREATED'
PROCESSING = 'PROCESSING'


class PackageLost(TackerApiError):
    """Tacker says ONBOARDED and has no content for the package."""


class PackageStalled(TackerApiError):
    """The package stays PROCESSING for good: no conductor will onboard
    it (see the race below)."""


class PackageRefused(TackerApiError):
    """The package is CREATED again after an accepted upload: a conductor
    refused the content (its log says why)."""


# What Tacker 16 does with two conductors or more: every conductor
# unpacks an uploaded package (a fan-out), the last to finish onboards it,
# by a counter read outside its lock; two that finish at once both
# onboard, and the loser's revert deletes the content everywhere and
# sets the package back to CREATED; whether the package then reads
# ONBOARDED without content (PackageLost) or CREATED (PackageRefused)
# depends on which of the two saves it last. And since each conductor
# counts through an ORM object loaded before the other's write, two that
# finish together can leave the counter above zero: nobody onboards, the
# package stays PROCESSING (PackageStalled).
LOST = ('Tacker says ONBOARDED but has lost the content (HTTP %d on '
        'package_content): two tacker-conductors onboarded it at once '
        '(VnfPackageVnfdIdDuplicate in one\'s log) and the loser deleted '
        'the package\'s files; upload the package again under a new VNFD '
        'id')


class Packages(object):

    def __init__(self, rest, first=0.5, maximum=5.0):
        self.rest = rest
        # The backoff of the onboarding wait, in seconds.
        self.first = first
        self.maximum = maximum

    def create(self, user_data=None):
        """A new package (CREATED, nothing uploaded yet)."""
        return self.rest.json('create VNF package', 'POST', PATH,
                              expect=(201,),
                              json={'userDefinedData': user_data or {}})

    def upload(self, package_id, zip_path, timeout=UPLOAD_TIMEOUT):
        """Send the zip at ``zip_path`` as the package's content."""
        with open(zip_path, 'rb') as handle:
            content = handle.read()
        self.rest.call('upload VNF package %s' % package_id, 'PUT',
                       '%s/%s/package_content' % (PATH, package_id),
                       expect=(202,), timeout=timeout, data=content,
                       headers={'Content-Type': 'application/zip'})

    def wait_onboarded(self, package_id, deadline, stalled=None):
        """The package once ONBOARDED, within ``deadline`` seconds.
        ``stalled()``, asked while the package is PROCESSING, says why it
        never will be (PackageStalled), or None."""
        operation = 'onboard VNF package %s' % package_id
        poll = Poll(deadline, first=self.first, maximum=self.maximum)
        package = {}
        for _ in poll:
            package = self.show(package_id)
            state = package.get('onboardingState')
            if state == ONBOARDED:
                return package
            if state == CREATED:
                raise PackageRefused(
                    operation, 'Tacker refused the content: the package is '
                               'CREATED again (tacker-conductor.log says '
                               'why)', state=state)
            reason = stalled() if stalled and state == PROCESSING else None
            if reason:
                raise PackageStalled(operation, reason, state=state)
        raise TackerApiError(operation, 'still %s after %g s'
                             % (package.get('onboardingState'), deadline),
                             state=package.get('onboardingState'))

    def onboard(self, zip_path, deadline, user_data=None, watch=None):
        """Create, upload and wait: the package ONBOARDED, its content
        still there (PackageLost otherwise). ``watch(package_id)``, made
        before the upload, is the wait's ``stalled``."""
        package = self.create(user_data)
        stalled = watch(package['id']) if watch else None
        self.upload(package['id'], zip_path)
        onboarded = self.wait_onboarded(package['id'], deadline, stalled)
        self.check_content(package['id'])
        return onboarded

    def check_content(self, package_id):
        """PackageLost unless Tacker still serves the package's zip."""
        response = self.rest.call(
            'read VNF package %s' % package_id, 'GET',
            '%s/%s/package_content' % (PATH, package_id),
            expect=(200, 404, 500))
        if response.status_code != 200:
            raise PackageLost('onboard VNF package %s' % package_id,
                              LOST % response.status_code, state=ONBOARDED)

    def show(self, package_id):
        return self.rest.json('show VNF package %s' % package_id, 'GET',
                              '%s/%s' % (PATH, package_id))

    def list(self, filter=None):
        """Every package (one page: ``all_records``), filtered by a
        Tacker filter expression such as ``(eq,onboardingState,ONBOARDED)``
        when one is given."""
        return self.rest.all_records('list VNF packages', PATH, filter)

    def disable(self, package_id):
        """Set the package's operationalState to DISABLED (the first step
        of deleting an onboarded one)."""
        return self.rest.json('disable VNF package %s' % package_id,
                              'PATCH', '%s/%s' % (PATH, package_id),
                              json={'operationalState': 'DISABLED'})

    def delete(self, package_id):
        """Delete a package that is DISABLED (or never onboarded) and not
        in use."""
        self.rest.call('delete VNF package %s' % package_id, 'DELETE',
                       '%s/%s' % (PATH, package_id), expect=(204,))
