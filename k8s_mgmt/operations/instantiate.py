"""Instantiate: build the Kubernetes cluster on the VMs Heat created."""

from k8s_mgmt import exceptions


def build_cluster(ctx):
    """instantiate_end: kubeadm init/join, HA load balancer, VIM registration."""
    raise exceptions.NotImplementedOperation(
        operation='instantiate_end (building the cluster with kubeadm)')
