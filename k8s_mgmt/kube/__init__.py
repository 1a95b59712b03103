"""The cluster's Kubernetes API (official ``kubernetes`` client, JSON only)."""

from k8s_mgmt.kube.client import APIError
from k8s_mgmt.kube.client import ClusterAPI
from k8s_mgmt.kube.client import NodeState
from k8s_mgmt.kube.client import node_state

__all__ = ['APIError', 'ClusterAPI', 'NodeState', 'node_state']
