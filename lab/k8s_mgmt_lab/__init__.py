"""The lab: an OpenStack-shaped sandbox on one Linux machine.

Lab VMs are network namespaces on one bridge, each with its own hostname, PID
namespace, copy-on-write root filesystem and a real OpenSSH server (see
``net``, ``rootfs``, ``vm``); ``cleanup`` removes everything the lab made,
also after the controlling process crashed. Everything here needs root.

The lab is its own distribution (``k8s-mgmt-lab``, in ``lab/`` of the
repository): it uses the driver, the driver never imports it. Its verbs join
the ``k8s-mgmt`` command through the ``k8s_mgmt.cli`` entry point group.
Nothing is imported here: the Kubernetes stand-ins (``standins``) run this
package inside the VMs and must start light.
"""
