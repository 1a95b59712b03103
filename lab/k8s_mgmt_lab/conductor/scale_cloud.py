"""The cloud's part of a scale on the lab, on real Heat, as Tacker's
OpenStack infra driver plays it (tacker 16,
``tacker/vnfm/infra_drivers/openstack/openstack.py``):

* which members a scale-in removes is Tacker's guess before the hooks
  (``get_scale_in_ids``): the group's COMPLETE members sorted by creation
  time, then name, the oldest going first, never below ``min_size``;
* the complex flavour scales by its ScalingPolicies' signals, one per
  step, each waited for until Heat no longer counts the group as scaling
  (Tacker's ``scale`` and ``scale_wait``); the other flavours by an update
  of the VDU's ``desired_capacity``, a scale-in marking the members to go
  unhealthy first (``scale_out_initial``, ``scale_in_reverse``);
* what Heat did is read from Heat afterwards: a signal at the group's
  ``min_size`` or ``max_size`` answers 200 and changes nothing, and Heat,
  not the lab, picks the members a signal removes;
* a rollback marks the new members unhealthy and lowers desired_capacity
  for every flavour, as Tacker's does.

Real Heat resets a group to its desired_capacity parameter on every
update of the stack, a heal's included, so a heal after a signalled
scale brings the group back to the size the parameters name.

The group's sizes and policies come from the template Heat holds for the
stack (Tacker reads the VNF's ``heat_template``): ``lab up`` may have
raised a group's max_size over the package's.
"""

import dataclasses

from k8s_mgmt_lab.conductor import status as status_mod
from k8s_mgmt_lab.conductor.scale_types import SCALE_OUT
from k8s_mgmt_lab.errors import LabError

# The flavour whose scale goes by policy signals; the others update
# desired_capacity, so that the lab runs both ways Tacker drives Heat.
SIGNALLED_FLAVOURS = ('complex',)


@dataclasses.dataclass(frozen=True)
class Aspect:
    """An AutoScalingGroup of the top template and its policies."""
    name: str               # the group's resource name: the aspect id
    vdu: str                # the VDU whose desired_capacity sizes it
    min_size: int
    max_size: int
    step_out: int           # members a scale-out step adds
    step_in: int            # members a scale-in step removes

    def target(self, current, scale_type, steps):
        """The group's size after ``steps`` steps from ``current``, kept
        within min_size and max_size as Heat keeps it."""
        if scale_type == SCALE_OUT:
            return min(current + self.step_out * steps, self.max_size)
        return max(current - self.step_in * steps, self.min_size)


def aspect_of(template, aspect_id):
    """The :class:`Aspect` ``aspect_id`` of a top template (a dict);
    LabError when it is no group with both scaling policies."""
    resources = template.get('resources') or {}
    group = resources.get(aspect_id) or {}
    if group.get('type') != 'OS::Heat::AutoScalingGroup':
        raise LabError('no scaling aspect %s in this flavour; its groups '
                       'are: %s' % (aspect_id, ', '.join(sorted(
                           n for n, r in resources.items()
                           if r.get('type') == 'OS::Heat::AutoScalingGroup'))
                           or 'none'))
    props = group['properties']
    steps = {}
    for way in ('scale_out', 'scale_in'):
        policy = resources.get('%s_%s' % (aspect_id, way)) or {}
        if policy.get('type') != 'OS::Heat::ScalingPolicy':
            raise LabError('aspect %s is not scalable: its template has no '
                           'policy %s_%s' % (aspect_id, aspect_id, way))
        steps[way] = abs(int(policy['properties']['scaling_adjustment']))
    return Aspect(name=aspect_id, vdu=_vdu_of(props['desired_capacity']),
                  min_size=int(props['min_size']),
                  max_size=int(props['max_size']),
                  step_out=steps['scale_out'], step_in=steps['scale_in'])


def _vdu_of(desired_capacity):
    """The VDU of ``{get_param: [nfv, VDU, <vdu>, desired_capacity]}``."""
    path = (desired_capacity or {}).get('get_param') \
        if isinstance(desired_capacity, dict) else None
    if not isinstance(path, list) or len(path) != 4 or path[:2] != [
            'nfv', 'VDU']:
        raise LabError('desired_capacity %r is not a VDU\'s parameter'
                       % (desired_capacity,))
    return path[2]


def members_of(listing):
    """A group stack's resource listing as member dicts (name, stack id,
    status, creation time), in Tacker's order: creation time, then
    name."""
    items = [{'name': r['resource_name'],
              'stack_id': r.get('physical_resource_id'),
              'status': r.get('resource_status') or '',
              'created': r.get('creation_time') or ''} for r in listing]
    return sorted(items, key=lambda m: (m['created'], m['name']))


def tacker_scale_in_victims(members, aspect, steps):
    """The members Tacker tells ``scale_start`` a scale-in removes
    (``get_scale_in_ids``, not reversed): of the COMPLETE ones, oldest
    first, all but the newest the group keeps."""
    complete = [m for m in members if 'COMPLETE' in m['status']]
    keep = max(len(complete) - aspect.step_in * steps, aspect.min_size)
    if keep <= 0:
        return complete
    return complete[:max(len(complete) - keep, 0)]


class ScaleCloud(object):
    """Heat's part of the lab's scale and terminate, on one stack."""

    def __init__(self, record, stacks=None, template=None):
        self.record = record
        self.stacks = stacks or status_mod.lab_stacks(record)
        self.path = status_mod.stack_path(record)
        self.signalled = record['flavour'] in SIGNALLED_FLAVOURS
        self._template = template

    def aspect(self, aspect_id):
        if self._template is None:
            self._template = status_mod.lab_heat(self.record).stacks.template(
                self.path)
        return aspect_of(self._template, aspect_id)

    def members(self, aspect_id):
        """The group's members now, in Tacker's order."""
        group = self.stacks.group_stack(self.path, aspect_id)
        return members_of(self.stacks.resources(group, 0))

    def mark_unhealthy(self, aspect_id, names, reason='Scale'):
        """Mark members unhealthy in the group's stack: Heat removes failed
        members first."""
        group = self.stacks.group_stack(self.path, aspect_id)
        for name in names:
            self.stacks.mark_unhealthy(group, name, reason)

    def scale(self, aspect, scale_type, steps, current, remove=()):
        """Heat scales the group from ``current`` members, by signals
        (Heat picks whom a scale-in removes) or by desired_capacity (the
        ``remove`` members marked unhealthy first); the size it should
        have now."""
        target = current
        if self.signalled:
            policy = '%s_%s' % (aspect.name, 'scale_out' if
                                scale_type == SCALE_OUT else 'scale_in')
            for _ in range(steps):
                target = aspect.target(target, scale_type, 1)
                self.stacks.signal(self.path, policy)
                self.stacks.wait_group(self.path, aspect.name, target)
            return target
        target = aspect.target(current, scale_type, steps)
        if target != current:
            self.mark_unhealthy(aspect.name, remove)
            self.stacks.resize(self.path, aspect.vdu, target)
        return target

    def shrink_by(self, aspect, names, current):
        """Remove the members ``names`` as Tacker's rollback of a
        scale-out does (``scale_in_reverse``): marked unhealthy, then the
        desired_capacity lowered by their number, whatever the flavour.
        Heat counts a group's size without its failed members, so a
        signal after the marks would remove one member more."""
        target = max(current - len(names), aspect.min_size)
        self.mark_unhealthy(aspect.name, names)
        self.stacks.resize(self.path, aspect.vdu, target)
        return target

    def delete(self):
        return self.stacks.delete_and_wait(self.path)


def changed_members(before, after):
    """(added, removed) between two member lists, each in Tacker's
    order."""
    was = {m['name'] for m in before}
    now = {m['name'] for m in after}
    return ([m for m in after if m['name'] not in was],
            [m for m in before if m['name'] not in now])
