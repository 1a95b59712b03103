"""The phases and decisions that more than one operation uses, of either
mode: node work, the load balancer, labels, storage, etcd membership, the
heal's and scale's plans. They never import an operation."""
