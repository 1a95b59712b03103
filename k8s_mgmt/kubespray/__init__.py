"""The kubespray mode: clusters built by kubespray's playbooks, run on a
pre-built Ansible server, behind an external load-balancer VM."""
