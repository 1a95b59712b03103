"""The lab's machines: what makes lab VMs and what they stand on.

Lab VMs are network namespaces on one bridge, each with its own hostname,
PID namespace, copy-on-write root filesystem and a real OpenSSH server:
``net`` (the bridge and the VMs' veths), ``rootfs`` (their root
filesystems), ``vm`` (the VMs themselves), ``volumes`` (Cinder volumes as
loop devices), ``ansible_server`` (the kubespray flavour's Ansible server,
a VM outside the stack), ``registry`` (what the lab made, recorded before
it is made), ``cleanup`` (removes all of it, also after the controlling
process crashed), ``prereq`` (what the machine must offer first) and
``host`` (commands on the host). Everything here needs root.

Nothing is imported here: the stand-ins' layer imports ``prereq`` and the
VMs must start light.
"""
