"""The conductor side of the lab: Tacker's part in the driver's life.

``lcm``, ``lcm_scale`` and ``lcm_heal`` call the driver's hooks the way
Tacker's conductor does (``drivers`` loads the driver the way Tacker loads
it, ``hook_trace`` records what the hooks are given), ``status`` reports a
lab the way the driver reads it, and ``tacker_harness`` drives the lab with
Tacker's own LCM code in a process of its own. (The package's UserData,
which ``lab up`` runs too, is the top-level ``user_data``.)
"""
