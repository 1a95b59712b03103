"""k8s-mgmt: a Tacker management driver for Kubernetes clusters on Heat VMs."""

DRIVER_TYPE = 'mgmt-drivers-kubernetes'
