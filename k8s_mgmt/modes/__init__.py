"""The two ways to build a cluster, side by side: ``kubeadm`` (the node
scripts) and ``kubespray`` (playbooks on an Ansible server), and the one
catalog (``catalog``) that picks a hook call's operation in either."""
