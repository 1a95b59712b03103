"""What a conductor passes to the driver's hooks, reduced to its shape.

The lab plays Tacker's conductor (:mod:`k8s_mgmt_lab.conductor.lcm` and its
siblings) for fast tests and the demo; ``--tacker`` runs Tacker's own. Both
can wrap the driver they call in a :class:`Recorder`, which appends one
JSON line per hook call to a file: the hook, the keyword arguments' names,
and the shape of what they carry (the instance's state and sizes, the
request's kind, the lists' lengths), never values such as ids or secrets.
Two traces of the same operations then compare line by line
(:func:`differences`): the lab's imitation of the conductor is checked
against Tacker's, not against what we believe of it.
"""

import json

from k8s_mgmt.tacker_objects import field, path
from k8s_mgmt import vim

HOOKS = ('instantiate_start', 'instantiate_end', 'scale_start', 'scale_end',
         'heal_start', 'heal_end', 'terminate_start', 'terminate_end')
# What only the lab's conductor passes (Tacker finds these itself: the
# package from its database, the VIM through its VIM client).
LAB_ONLY_KWARGS = ('vnf_package_path', 'vim_info')
REQUESTS = {'instantiate': 'instantiate_vnf_request',
            'scale': 'scale_vnf_request', 'heal': 'heal_vnf_request',
            'terminate': 'terminate_vnf_request'}


def _count(value):
    return len(value) if value is not None else None


def _vim_types(inst):
    """The VIM types the instance is connected to, but the Kubernetes
    VIM this driver registers (Tacker keeps it on the instance; the lab's
    conductor, with no Tacker database, has nowhere to)."""
    conns = field(inst, 'vim_connection_info')
    if conns is None:
        return None
    return sorted({field(c, 'vim_type') for c in conns} -
                  {vim.VIM_TYPE})


def _request(hook, kwargs):
    request = kwargs.get(REQUESTS[hook.split('_')[0]])
    if request is None:
        return None
    shape = {}
    for name in ('flavour_id', 'type', 'aspect_id', 'number_of_steps',
                 'termination_type'):
        value = field(request, name)
        if value is not None:
            shape[name] = value
    vnfcs = field(request, 'vnfc_instance_id')
    if vnfcs is not None:
        shape['vnfc_instance_id'] = len(vnfcs)
    return shape


def describe(hook, kwargs):
    """The shape of one hook call (JSON-able)."""
    inst = kwargs.get('vnf_instance')
    info = field(inst, 'instantiated_vnf_info')
    shape = {
        'hook': hook,
        'kwargs': sorted(k for k in kwargs if k not in LAB_ONLY_KWARGS),
        'instance': {
            'instantiation_state': field(inst, 'instantiation_state'),
            'vim_types': _vim_types(inst),
            'stack_id': bool(field(info, 'instance_id')),
            'vnfcs': _count(field(info, 'vnfc_resource_info')),
            'vnfcs_with_server': len([
                v for v in field(info, 'vnfc_resource_info') or ()
                if path(v, 'compute_resource', 'resource_id')]),
            'additional_params': sorted(
                field(info, 'additional_params') or {}),
        },
        'request': _request(hook, kwargs),
    }
    for name in ('scale_out_id_list', 'scale_name_list'):
        if name in kwargs:
            shape[name] = _count(kwargs[name])
    if 'vnf' in kwargs:
        shape['vnf'] = kwargs['vnf'] is not None
    return shape


def _recording(name, target, trace_path):
    def hook(**kwargs):
        with open(trace_path, 'a') as out:
            out.write(json.dumps(describe(name, kwargs), sort_keys=True) +
                      '\n')
        return target(**kwargs)
    return hook


class Recorder(object):
    """Wraps a driver: each hook call is described to ``trace_path`` (one
    JSON line, appended), then passed on unchanged."""

    def __init__(self, driver, trace_path):
        self._driver = driver
        self._path = trace_path

    def __getattr__(self, name):
        target = getattr(self._driver, name)
        if name not in HOOKS:
            return target
        return _recording(name, target, self._path)


def wrap_in_place(driver, trace_path):
    """Record the hooks of a driver object someone else holds (Tacker's
    driver manager): its hook attributes are replaced on the instance."""
    for name in HOOKS:
        target = getattr(driver, name, None)
        if target is not None:
            setattr(driver, name, _recording(name, target, trace_path))
    return driver


def read(trace_path):
    with open(trace_path) as src:
        return [json.loads(line) for line in src if line.strip()]


def differences(lab, tacker):
    """Human-readable differences between two traces of the same
    operations (empty when they agree)."""
    found = []
    if [c['hook'] for c in lab] != [c['hook'] for c in tacker]:
        found.append('hooks: lab %s, Tacker %s' % (
            [c['hook'] for c in lab], [c['hook'] for c in tacker]))
        return found
    for index, (ours, theirs) in enumerate(zip(lab, tacker)):
        where = 'call %d %s' % (index, ours['hook'])
        found.extend(_dict_differences(where, ours, theirs))
    return found


def _dict_differences(where, ours, theirs):
    found = []
    for key in sorted(set(ours) | set(theirs)):
        mine, their = ours.get(key), theirs.get(key)
        if isinstance(mine, dict) and isinstance(their, dict):
            found.extend(_dict_differences('%s: %s' % (where, key), mine,
                                           their))
        elif mine != their:
            found.append('%s: %s: lab %r, Tacker %r'
                         % (where, key, mine, their))
    return found
