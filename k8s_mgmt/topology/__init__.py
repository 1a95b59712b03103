"""The cluster's VMs as plain data, read from Heat (see model.py)."""

from k8s_mgmt.topology.builder import build_topology  # noqa: F401
from k8s_mgmt.topology.builder import needed_details  # noqa: F401
from k8s_mgmt.topology.model import GroupSpec  # noqa: F401
from k8s_mgmt.topology.model import Node  # noqa: F401
from k8s_mgmt.topology.model import ServerGroup  # noqa: F401
from k8s_mgmt.topology.model import Topology  # noqa: F401
from k8s_mgmt.topology.model import TopologySpec  # noqa: F401
from k8s_mgmt.topology.model import Volume  # noqa: F401
