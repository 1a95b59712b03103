"""The kubespray mode: clusters built by kubespray's playbooks, run on a
pre-built Ansible server, behind an external load-balancer VM. One module
per LCM operation (they never import each other), the Ansible server's
phases (``server_phases``) and the external load balancer's (``lb``)."""
