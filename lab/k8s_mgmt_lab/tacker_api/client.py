"""Tacker: the VNF packages, VNF instances and operation occurrences of
one Tacker, reached through one keystoneauth1 session."""

from k8s_mgmt import secrets
from k8s_mgmt_lab.openstack import bootstrap
from k8s_mgmt_lab.openstack import state
from k8s_mgmt_lab.tacker_api.errors import TackerApiError
from k8s_mgmt_lab.tacker_api.instances import Instances
from k8s_mgmt_lab.tacker_api.op_occs import OpOccs
from k8s_mgmt_lab.tacker_api.packages import Packages
from k8s_mgmt_lab.tacker_api.rest import REQUEST_TIMEOUT
from k8s_mgmt_lab.tacker_api.rest import Rest


# The VNF LCM v2 API version this client's requests are written for.
V2_VERSION = '2.0.0'


class Tacker(object):
    """``packages``, ``instances`` and ``op_occs`` of the Tacker at
    ``url``, or at the catalog's nfv-orchestration endpoint, through its
    VNF LCM ``api`` ('v1' or 'v2'). ``backoff``
    is the first and the longest pause of every wait, in seconds."""

    def __init__(self, session, url=None, timeout=REQUEST_TIMEOUT,
                 backoff=(0.5, 5.0), api='v1'):
        self.api = api
        self.rest = Rest(session, url=url, timeout=timeout)
        # Packages are v1's API under either; v2's LCM calls carry the
        # version they are written for.
        lcm = self.rest if api == 'v1' else Rest(
            session, url=url, timeout=timeout,
            headers={'Version': V2_VERSION})
        self.packages = Packages(self.rest, *backoff)
        self.instances = Instances(lcm, api)
        self.op_occs = OpOccs(lcm, *backoff, api=api)
        self._password = None

    @classmethod
    def for_plane(cls, plane, url=None, **kwargs):
        """The Tacker of a control plane (ControlPlane), as its admin."""
        ports = state.recorded_ports(plane.layout)
        if ports is None:
            raise TackerApiError('connect to Tacker', 'the control plane in '
                                 '%s was never started' % plane.layout.root)
        plane_secrets = state.secrets(plane.layout)
        password = secrets.Secret(plane_secrets['admin'])
        # The session's timeout bounds Keystone's token requests too.
        timeout = kwargs.get('timeout', REQUEST_TIMEOUT)
        tacker = cls(bootstrap.admin_session(ports, plane_secrets, timeout),
                     url=url, **kwargs)
        # Kept while the client lives, so that no error text shows it.
        tacker._password = password
        return tacker

    def endpoint(self):
        """The URL requests go to."""
        return self.rest.endpoint()
