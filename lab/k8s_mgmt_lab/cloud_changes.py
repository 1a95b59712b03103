"""Changes to a stack's model that an update or a signal makes: resizing
an AutoScalingGroup and replacing a server.

Each runs under the cloud's lock and returns, with its result, the work of
booting or deleting the VMs, which :mod:`k8s_mgmt_lab.cloud_actions` runs
after the request was answered.
"""

import collections

import yaml

from k8s_mgmt_lab import cloud_actions as actions
from k8s_mgmt_lab import cloud_events as events
from k8s_mgmt_lab import cloud_resources as resources
from k8s_mgmt_lab import cloud_volumes
from k8s_mgmt_lab.errors import LabCloudError
from k8s_mgmt_lab import hot

ScaleResult = collections.namedtuple(
    'ScaleResult', 'aspect_id scale_type stack_ids resource_names server_ids')


def policy_adjustment(top, aspect_id, scale_type):
    """The step of the group's scaling policy for ``scale_type``."""
    sign = 1 if scale_type == 'SCALE_OUT' else -1
    for res in top['resources'].values():
        props = res['properties']
        if (res['type'] == hot.SCALING_POLICY and
                props.get('auto_scaling_group_id') ==
                top['resources'][aspect_id]['physical_id'] and
                int(props.get('scaling_adjustment', 0)) * sign > 0):
            return int(props['scaling_adjustment'])
    return sign


def check_size(group, target):
    data = group['data']
    if not data['min'] <= target <= data['max']:
        raise LabCloudError(
            reason='%s: size %d is outside min_size %d .. max_size %d'
                   % (group['name'], target, data['min'], data['max']))


def resize(cloud, top, group, target, scale_type=None):
    """Add or remove members (under the lock); (ScaleResult, the work
    of booting or deleting their servers)."""
    check_size(group, target)
    data = group['data']
    change = target - data['desired']
    group_stack = cloud.state['stacks'][group['nested']]
    new_servers, gone_servers = [], []
    if change > 0:
        members = [resources.add_member(cloud, top, group, new_servers)
                   for _ in range(change)]
        for member in members:
            events.set_status(cloud, group_stack, 'CREATE_IN_PROGRESS',
                              'state changed', member)
    else:
        members = [resources.remove_member(cloud, top, group,
                                           gone_servers)
                   for _ in range(-change)]
        for member in members:
            events.record(cloud, group_stack, 'DELETE_COMPLETE',
                          'state changed', member)
    data['desired'] = target
    group['updated_time'] = top['updated_time'] = resources.now()
    events.set_status(cloud, top, 'UPDATE_IN_PROGRESS', 'state changed',
                      group)
    root = top['root']
    names = [m['name'] for m in members if change > 0]

    def work():
        cloud._unprovision(gone_servers)
        cloud._provision(root, new_servers)
        with cloud._lock:
            for name in names:
                member = group_stack['resources'].get(name)
                if member is not None:
                    events.set_status(cloud, group_stack,
                                      'CREATE_COMPLETE', 'state changed',
                                      member)
            events.set_status(cloud, top, 'UPDATE_COMPLETE',
                              'state changed', group)
            cloud.save()
    return ScaleResult(group['name'], scale_type or (
        'SCALE_OUT' if change > 0 else 'SCALE_IN'),
        [m['nested'] for m in members], [m['name'] for m in members],
        new_servers or gone_servers), work


def replace(cloud, top, server_id):
    """Replace one server (under the lock); (its new id, the work of
    booting the new VM and deleting the old one)."""
    root = top['root']
    stack, res = cloud._find_physical(root, server_id, hot.SERVER)
    had = [volume['physical_id'] for volume, _ in
           cloud_volumes.attached_to(cloud, server_id)]
    cloud_volumes.renew_unhealthy(cloud, res)
    new_id = resources.replace_server(cloud, root, res)
    events.record(cloud, stack, 'CREATE_COMPLETE', 'state changed', res)

    def work():
        cloud._unprovision([server_id], had)
        cloud._provision(root, [new_id])
    return new_id, work


def update(cloud, top, parameters, existing, template, files):
    """A stack update's changes (under the lock): the new template, files
    and parameters, groups resized to their new desired_capacity, servers
    marked unhealthy (or with an unhealthy volume) replaced; (ScaleResults,
    the work of each change). The stack enters UPDATE_IN_PROGRESS once the
    template and parameters are found good; a problem with them raises
    before anything changed."""
    if template is not None or files is not None:
        text = top['template_text'] if template is None else (
            template if isinstance(template, str)
            else yaml.safe_dump(template))
        files = dict(top['files'] if files is None else files)
        parsed = hot.parse_template(hot.TOP_TEMPLATE, text, files)
    else:
        text, files = top['template_text'], top['files']
        parsed = cloud.template_of(top)
    given = dict(top['parameters']) if existing else {}
    given.update(parameters or {})
    values = hot.resolve_parameters(parsed, given)
    actions.begin(cloud, top, 'UPDATE')
    top['template_text'], top['files'] = text, files
    top['parameters'] = values
    evaluator = cloud.evaluator(top, parsed)
    targets = {
        name: int(evaluator.evaluate(
            parsed.resources[name]['properties']['desired_capacity']))
        for name, res in top['resources'].items()
        if res['type'] == hot.SCALING_GROUP}
    steps, results = [], []
    for name, target in targets.items():
        group = top['resources'][name]
        if target != group['data']['desired']:
            result, step = resize(cloud, top, group, target)
            results.append(result)
            steps.append(step)
    for server_id in cloud_volumes.servers_to_replace(cloud, top['root']):
        steps.append(replace(cloud, top, server_id)[1])
    return results, steps
