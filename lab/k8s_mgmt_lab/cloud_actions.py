"""Stack actions as Heat runs them: a stack enters ``<ACTION>_IN_PROGRESS``
when the request is accepted, and ``<ACTION>_COMPLETE`` (or ``_FAILED``,
with the reason) when its servers have booted or gone.

The cloud changes its model under its lock and hands the slow part (the
VMs) to :func:`finish`, which runs it at once (``wait``: the lab's own
callers) or in a thread (the HTTP API, which answers before the work is
done, as Heat does; clients poll the stack's status).
"""

import threading

from oslo_log import log as logging

from k8s_mgmt_lab import cloud_events as events
from k8s_mgmt_lab import cloud_resources
from k8s_mgmt_lab.errors import StackConflict

LOG = logging.getLogger(__name__)


def begin(cloud, stack, action):
    """Enter ``<action>_IN_PROGRESS`` (under the cloud's lock); 409 while
    another action runs on the stack."""
    if stack['status'].endswith('_IN_PROGRESS'):
        raise StackConflict(reason='Stack %s (%s) is %s: one action at a '
                            'time' % (stack['name'], stack['id'],
                                      stack['status']))
    if action == 'UPDATE':
        stack['updated_time'] = cloud_resources.now()
    events.set_status(cloud, stack, action + '_IN_PROGRESS',
                      'Stack %s started' % action)


def end(cloud, stack_id, action, error=None):
    """Enter ``<action>_COMPLETE``, or ``<action>_FAILED`` for ``error``."""
    with cloud._lock:
        stack = cloud.state['stacks'].get(stack_id)
        if stack is None:
            return
        if error is None:
            events.set_status(cloud, stack, action + '_COMPLETE',
                              'Stack %s completed successfully' % action)
        else:
            events.set_status(cloud, stack, action + '_FAILED',
                              '%s: %s' % (type(error).__name__, error))
        cloud.save()


def finish(cloud, stack_id, action, work, wait):
    """Run ``work`` (the VMs of an accepted action), then end the action."""
    def run():
        try:
            work()
        except Exception as err:
            LOG.exception('Lab stack %s: %s failed', stack_id, action)
            end(cloud, stack_id, action, err)
            if wait:
                raise
            return
        end(cloud, stack_id, action)
    if wait:
        run()
    else:
        threading.Thread(target=run, daemon=True,
                         name='heat-%s-%s' % (action.lower(),
                                              stack_id[:8])).start()
