"""Heat's events: one per status a stack or resource enters.

Each event is kept under the stack it belongs to (a resource's event under
the stack that holds the resource; a stack's own events under it, named
after it as Heat does), in the order they happened. Tacker reads the
newest event of a scaling policy before it signals it; operators read a
stack's events to see what an action did.
"""

import uuid

from k8s_mgmt_lab import cloud_resources


def set_status(cloud, stack, status, reason, res=None):
    """Put a stack (``res`` None) or one of its resources in ``status``
    and record the event."""
    target = res if res is not None else stack
    target['status'], target['reason'] = status, reason
    if res is not None:
        res['updated_time'] = cloud_resources.now()
    record(cloud, stack, status, reason, res)


def record(cloud, stack, status, reason, res=None):
    seq = cloud.state.get('event_seq', 0) + 1
    cloud.state['event_seq'] = seq
    cloud.state.setdefault('events', {}).setdefault(stack['id'], []).append({
        'id': str(uuid.uuid4()), 'seq': seq, 'time': cloud_resources.now(),
        'resource_name': res['name'] if res is not None else stack['name'],
        'physical_id': ((res['physical_id'] or '') if res is not None
                        else stack['id']),
        'resource_type': res['type'] if res is not None
        else 'OS::Heat::Stack',
        'status': status, 'reason': reason})


def of_stack(cloud, stack_id, resource_name=None):
    """Copies of a stack's events, oldest first; ``resource_name``: only
    that resource's."""
    return [dict(e) for e in cloud.state.get('events', {}).get(stack_id, [])
            if resource_name is None or e['resource_name'] == resource_name]


def forget(cloud, stack_id):
    cloud.state.get('events', {}).pop(stack_id, None)
