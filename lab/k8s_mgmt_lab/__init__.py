"""The lab: an OpenStack-shaped sandbox on one Linux machine.

Its parts: ``machines`` (lab VMs: network namespaces on one bridge, each
with its own hostname, PID namespace, copy-on-write root filesystem and a
real OpenSSH server; their volumes, and the cleanup of everything the lab
made), ``kube`` (the Kubernetes stand-ins that run in the VMs, and the
stand-in kubespray tree), ``conductor`` (the driver's hooks called the way
Tacker's conductor calls them, and Tacker's own LCM code run on a lab),
``openstack`` (a real OpenStack control plane for the lab), ``cli`` (the
``k8s-mgmt lab`` and ``demo`` verbs, which start light: ``settings``
holds the lab's settings and reads its record without the rest of the
lab); ``manager`` and ``daemon`` run a lab
(its API and cloud: ``api``, ``cloud*``, ``heat_*``, ``hot``; the package's
UserData: ``user_data``). Everything that makes VMs needs root.

The lab is its own distribution (``k8s-mgmt-lab``, in ``lab/`` of the
repository): it uses the driver, the driver never imports it. Its verbs join
the ``k8s-mgmt`` command through the ``k8s_mgmt.cli`` entry point group.
Nothing is imported here: the Kubernetes stand-ins (``kube``) run this
package inside the VMs and must start light.
"""
