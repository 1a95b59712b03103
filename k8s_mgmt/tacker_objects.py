"""Reading Tacker's objects and the dicts that stand for them alike.

Tacker hands the driver versioned objects (``VnfInstance``,
``InstantiateVnfRequest``, ...) whose unset fields raise on access; tests,
the lab and ``k8s-mgmt plan`` hand it dicts. Everything the driver reads
from either goes through :func:`field` or :func:`path`.
"""

_MISSING = object()


def field(obj, name, default=None):
    """Read ``name`` from a Tacker object or a dict (unset: ``default``)."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    is_set = getattr(obj, 'obj_attr_is_set', None)
    if is_set is not None:
        try:
            if not is_set(name):
                return default
        except AttributeError:  # not a field of this object type
            return default
    value = getattr(obj, name, _MISSING)
    return default if value is _MISSING else value


def path(obj, *names, default=None):
    """``field`` along a path of names.

    ``path(inst, 'instantiated_vnf_info', 'instance_id')``
    """
    for name in names:
        obj = field(obj, name)
        if obj is None:
            return default
    return obj
