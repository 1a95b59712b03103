"""snake_case <-> camelCase for parameter keys.

Requests carry ``k8s_cluster_installation_param.master_node.ssh_cp_name``;
Tacker stores the same values camelCased in
``instantiatedVnfInfo.additionalParams`` (``k8sClusterInstallationParam.
masterNode.sshCpName``), and scale, heal and terminate read that stored form.
The reader looks every known key up in both spellings and reports paths in
snake_case only.
"""

import re

_CAMEL_BOUNDARY = re.compile(r'(?<=[a-z0-9])(?=[A-Z])')


def snake_to_camel(name):
    """``k8s_node_cidr`` -> ``k8sNodeCidr``, ``ssh_cp_name`` -> ``sshCpName``.
    """
    head, *rest = name.split('_')
    return head + ''.join(part[:1].upper() + part[1:] for part in rest)


def camel_to_snake(name):
    """``k8sNodeCidr`` -> ``k8s_node_cidr``; snake_case input is unchanged."""
    return _CAMEL_BOUNDARY.sub('_', name).lower()


def spellings(snake_name):
    """The keys under which a snake_case field may appear, snake first."""
    camel = snake_to_camel(snake_name)
    return (snake_name,) if camel == snake_name else (snake_name, camel)


def pick(mapping, snake_name):
    """Find ``snake_name`` in ``mapping`` under either spelling.

    Returns ``(found, value, conflict)``: ``conflict`` is True when both
    spellings are present with different values (the caller reports it).
    """
    present = [mapping[key] for key in spellings(snake_name) if key in mapping]
    if not present:
        return False, None, False
    try:
        conflict = len(present) == 2 and present[0] != present[1]
    except RecursionError:  # absurdly deep JSON on both spellings
        conflict = True
    return True, present[0], conflict


def unknown_keys(mapping, known_snake_names, ignored=()):
    """Keys of ``mapping`` that are neither a known field (either spelling)
    nor in ``ignored``, in the order they appear."""
    allowed = set(ignored)
    for name in known_snake_names:
        allowed.update(spellings(name))
    return [key for key in mapping if key not in allowed]
