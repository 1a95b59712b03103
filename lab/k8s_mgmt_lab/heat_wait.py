"""Waiting for a Heat action the way Tacker's OpenStack infra driver does:
poll the stack until it leaves ``<ACTION>_IN_PROGRESS``.

The lab's Heat API answers a create, update, delete or policy signal at
once and does the work after, as Heat does, so every caller polls.
"""

from heatclient import exc as heat_exc

from k8s_mgmt import polling
from k8s_mgmt_lab.errors import LabError

TIMEOUT = 600.0


def stack_done(client, stack_id, action, timeout=TIMEOUT):
    """Poll stack ``stack_id`` until ``<action>_COMPLETE``; LabError on
    ``<action>_FAILED`` (with Heat's reason), on any other state, or at
    the deadline."""
    poll = polling.Poll(timeout, first=0.05, maximum=1.0)
    status = None
    for _ in poll:
        try:
            stack = client.stacks.get(stack_id)
        except heat_exc.HTTPNotFound:
            raise LabError('stack %s is gone while waiting for %s_COMPLETE'
                           % (stack_id, action))
        status = stack.stack_status
        if status == action + '_COMPLETE':
            return stack
        if status != action + '_IN_PROGRESS':
            raise LabError('stack %s: %s (%s)' % (
                stack_id, status, stack.stack_status_reason))
    raise LabError('stack %s is still %s after %.0f s'
                   % (stack_id, status, timeout))


def group_done(client, stack_ref, aspect_id, timeout=TIMEOUT):
    """Wait for the update a policy signal started on AutoScalingGroup
    ``aspect_id`` (its nested stack's UPDATE)."""
    group = client.resources.get(stack_ref, aspect_id)
    return stack_done(client, group.physical_resource_id, 'UPDATE', timeout)
