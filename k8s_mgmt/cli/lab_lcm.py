"""``k8s-mgmt lab instantiate|scale|heal|terminate`` (LCM on the lab).

Placeholder: no LCM verbs are registered yet (issue 4 adds them).
"""


def register(verbs):
    """Add the LCM verbs to the ``k8s-mgmt lab`` parser."""
