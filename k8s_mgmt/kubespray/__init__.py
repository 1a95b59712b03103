"""The kubespray driver Tacker loads (``driver``) and the callback plugin
its playbook runs print events with (``callback_plugins``, package data).
The mode's operations are in :mod:`k8s_mgmt.modes.kubespray`."""
