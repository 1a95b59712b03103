"""The conductor side of the lab: Tacker's part in the driver's life, for
a lab on a shared control plane (which has no Tacker).

``lcm``, ``lcm_scale`` and ``lcm_heal`` call the driver's hooks the way
Tacker's conductor does (``drivers`` loads the driver the way Tacker loads
it), and ``status`` reports a lab the way the driver reads it. A lab with
a control plane of its own runs the real Tacker instead
(:mod:`k8s_mgmt_lab.tacker_lcm`). (The package's UserData, which ``lab
up`` runs too, is the top-level ``user_data``.)
"""
