"""Cluster parameters: the typed model of
``additionalParams.k8s_cluster_installation_param`` and its validation.

Public API::

    load_cluster_params(additional_params, *, operation='instantiate',
                        flavour=None, package_dir=None) -> ClusterParams
    load_request(body, *, operation='instantiate', package_dir=None)
        -> ClusterParams
    merge_overrides(stored, request_additional, operation) -> ClusterParams

All raise :class:`k8s_mgmt.exceptions.ValidationError` listing every
problem as ``(path, message)``; warnings are logged and kept in
``ClusterParams.warnings`` (and ``ValidationError.warnings``).
"""

from k8s_mgmt.params.loader import load_cluster_params
from k8s_mgmt.params.loader import load_request
from k8s_mgmt.params.loader import merge_overrides
from k8s_mgmt.params.model import AnsibleParams
from k8s_mgmt.params.model import CinderVolumeSetup
from k8s_mgmt.params.model import ClusterParams
from k8s_mgmt.params.model import DEFAULT_POD_CIDR
from k8s_mgmt.params.model import DEFAULT_SERVICE_CIDR
from k8s_mgmt.params.model import ExternalLbParams
from k8s_mgmt.params.model import HA_FLAVOURS
from k8s_mgmt.params.model import MasterNodeParams
from k8s_mgmt.params.model import NfsExport
from k8s_mgmt.params.model import NodeGroupParams
from k8s_mgmt.params.model import OPERATIONS
from k8s_mgmt.params.model import ProxyParams
from k8s_mgmt.params.model import PvRegistration
from k8s_mgmt.params.model import StorageServerParams
from k8s_mgmt.params.model import WorkerNodeParams

__all__ = [
    'AnsibleParams', 'CinderVolumeSetup', 'ClusterParams',
    'DEFAULT_POD_CIDR', 'DEFAULT_SERVICE_CIDR', 'ExternalLbParams',
    'HA_FLAVOURS', 'MasterNodeParams', 'NfsExport', 'NodeGroupParams',
    'OPERATIONS', 'ProxyParams', 'PvRegistration', 'StorageServerParams',
    'WorkerNodeParams', 'load_cluster_params', 'load_request',
    'merge_overrides',
]
