"""The lab's Heat v1 REST API: what python-heatclient and Tacker's OpenStack
infra driver call, with real Heat's paths, bodies and status codes.

Stack create (``POST /stacks`` with a template, its nested templates as
``files`` and parameters), list (Heat's filters), show (a lookup by name or
id answers 302 to ``/stacks/<name>/<id>``), update (PATCH or PUT, with a new
template and files or not), delete, template; resource list with
``nested_depth``, resource show with ``attributes``, mark-unhealthy,
metadata, scaling-policy signals; events of a stack or of one resource.
Create, update, delete and signals answer at once and run in the background
(:mod:`k8s_mgmt_lab.cloud_actions`): clients poll the stack's status. A
call the lab does not implement answers as Heat answers a request it
refuses, never with a made-up success.
"""

import json
import urllib.parse

from k8s_mgmt_lab import errors as lab_errors
from k8s_mgmt_lab import hot
from k8s_mgmt_lab import stack_list


class HTTPError(Exception):
    def __init__(self, status, body, headers=None):
        super().__init__(status)
        self.status, self.body, self.headers = status, body, headers or {}


def heat_error(status, title, kind, message):
    return HTTPError(status, {
        'explanation': {404: 'The resource could not be found.',
                        400: 'The server could not comply with the request '
                             'since it is either malformed or otherwise '
                             'incorrect.',
                        401: 'This server could not verify that you are '
                             'authorized to access the document you '
                             'requested.'}.get(status, title),
        'code': status, 'title': title,
        'error': {'message': message, 'traceback': None, 'type': kind}})


def handle(handler, method, parts, body):
    """One Heat v1 call below /heat/v1/<project>; (status, body, headers)."""
    cloud = handler.server.cloud
    if parts == ['stacks'] and method == 'GET':
        return 200, {'stacks': _stack_list(handler)}, {}
    if parts == ['stacks'] and method == 'POST':
        return _stack_create(handler, body)
    if not parts or parts[0] != 'stacks' or len(parts) < 2:
        raise heat_error(404, 'Not Found', 'NotFound', 'No such Heat path')
    stack = _canonical_stack(cloud, parts)
    if stack is None:
        return _redirect(handler, cloud.stack(parts[1]), parts[2:])
    rest = parts[3:]
    if not rest:
        return _stack_call(handler, method, stack, body)
    if rest == ['template'] and method == 'GET':
        return 200, cloud.template(stack['id']), {}
    if rest == ['actions'] and method == 'POST':
        return _stack_action(cloud, stack, body)
    if rest[0] == 'resources':
        return _resource_call(handler, method, stack, rest[1:], body)
    if rest == ['events'] and method == 'GET':
        return 200, {'events': _events(handler, stack)}, {}
    raise heat_error(404, 'Not Found', 'NotFound', 'No such Heat path')


def _stack_create(handler, body):
    """POST /stacks: 201 at once; the stack is CREATE_IN_PROGRESS until
    its servers have booted."""
    body = _object(body, 'the stack create body')
    missing = [k for k in ('stack_name', 'template') if not body.get(k)]
    if missing:
        raise heat_error(400, 'Bad Request', 'HTTPBadRequest',
                         'The stack create body has no %s'
                         % ' or '.join(missing))
    files = body.get('files') or {}
    parameters = body.get('parameters') or {}
    if not isinstance(files, dict) or not isinstance(parameters, dict):
        raise heat_error(400, 'Bad Request', 'HTTPBadRequest',
                         'files and parameters must be objects')
    cloud = handler.server.cloud
    stack_id = cloud.create_stack_from(body['template'], files, parameters,
                                       body['stack_name'], wait=False)
    stack = cloud.stack(stack_id)
    return 201, {'stack': {'id': stack_id, 'links': [
        {'href': _stack_url(handler, stack), 'rel': 'self'}]}}, {}


def _object(body, what):
    if not isinstance(body, dict):
        raise heat_error(400, 'Bad Request', 'HTTPBadRequest',
                         '%s must be a JSON object' % what)
    return body


def _canonical_stack(cloud, parts):
    """The stack when the path is /stacks/<name>/<id>/..., else None."""
    if len(parts) < 3:
        return None
    try:
        stack = cloud.stack(parts[2])
    except lab_errors.LabCloudError:
        return None
    return stack if stack['name'] == parts[1] else None


def _redirect(handler, stack, rest):
    location = '%s/stacks/%s/%s' % (handler.server.heat_url, stack['name'],
                                    stack['id'])
    if rest:
        location += '/' + '/'.join(urllib.parse.quote(p) for p in rest)
    if handler.query_string:
        location += '?' + handler.query_string
    return 302, None, {'Location': location}


def _stack_url(handler, stack):
    return '%s/stacks/%s/%s' % (handler.server.heat_url, stack['name'],
                                stack['id'])


def _stack_list(handler):
    try:
        stacks = stack_list.select(handler.server.cloud, handler.query)
    except stack_list.Unsupported as err:
        raise heat_error(400, 'Bad Request', 'HTTPBadRequest', str(err))
    return [_stack_body(handler, s, brief=True) for s in stacks]


def _stack_body(handler, stack, brief=False):
    cloud = handler.server.cloud
    action, _, state = stack['status'].partition('_')
    body = {'id': stack['id'], 'stack_name': stack['name'],
            'description': stack['description'],
            'creation_time': stack['creation_time'],
            'updated_time': stack['updated_time'], 'deletion_time': None,
            'stack_status': stack['status'],
            'stack_status_reason': stack.get('reason') or (
                'Stack %s completed successfully' % action),
            'stack_owner': handler.server.username, 'parent': stack['parent'],
            'links': [{'href': _stack_url(handler, stack), 'rel': 'self'}],
            'project': cloud.project_id, 'tags': None}
    if brief:
        return body
    params = {k: v if isinstance(v, str) else json.dumps(v)
              for k, v in stack['parameters'].items()}
    params.update({'OS::stack_id': stack['id'],
                   'OS::stack_name': stack['name'],
                   'OS::project_id': cloud.project_id})
    body.update(parameters=params, outputs=[], disable_rollback=True,
                template_description=stack['description'], timeout_mins=None,
                capabilities=[], notification_topics=[],
                stack_user_project_id=cloud.project_id)
    return body


def _stack_call(handler, method, stack, body):
    cloud = handler.server.cloud
    if method == 'GET':
        return 200, {'stack': _stack_body(handler, stack)}, {}
    if method in ('PATCH', 'PUT'):
        body = _object(body or {}, 'the stack update body')
        cloud.update_stack(stack['id'], body.get('parameters') or {},
                           existing=(method == 'PATCH' or
                                     bool(body.get('existing'))),
                           template=body.get('template'),
                           files=body.get('files'), wait=False)
        return 202, None, {}
    if method == 'DELETE':
        if stack['status'] == 'DELETE_COMPLETE':
            raise heat_error(404, 'Not Found', 'EntityNotFound',
                             'The Stack (%s) could not be found.'
                             % stack['name'])
        cloud.delete_stack(stack['id'], wait=False)
        return 204, None, {}
    raise heat_error(405, 'Method Not Allowed', 'HTTPMethodNotAllowed',
                     method)


def _stack_action(cloud, stack, body):
    # Heat's stack actions (suspend, resume, check, cancel_update, ...):
    # none is used by Tacker's LCM, and the lab implements none.
    raise heat_error(400, 'Bad Request', 'ActionNotSupported',
                     'the lab implements no stack action (asked: %s)'
                     % ', '.join(sorted(body or {})) or 'none')


def _resource_call(handler, method, stack, rest, body):
    cloud = handler.server.cloud
    if not rest and method == 'GET':
        depth = int((handler.query.get('nested_depth') or ['0'])[0])
        filters = {k: set(v) for k, v in handler.query.items()
                   if k in ('type', 'name', 'status', 'action', 'id')}
        items = [_resource_body(handler, s, r)
                 for s, r in cloud.list_resources(stack['id'], depth)]
        items = [i for i in items if _matches(i, filters)]
        return 200, {'resources': items}, {}
    name = rest[0] if rest else None
    owner, res, attributes = cloud.resource(stack['id'], name)
    if len(rest) == 1 and method == 'GET':
        body_out = dict(_resource_body(handler, owner, res),
                        attributes=attributes, description='')
        return 200, {'resource': body_out}, {}
    if len(rest) == 1 and method == 'PATCH':
        body = _object(body, 'the resource update body')
        if not isinstance(body.get('mark_unhealthy'), bool):
            raise heat_error(400, 'Bad Request', 'HTTPBadRequest',
                             'mark_unhealthy must be true or false')
        cloud.mark_unhealthy(owner['id'], res['name'],
                             body['mark_unhealthy'],
                             body.get('resource_status_reason') or '')
        return 200, None, {}
    if rest[1:] == ['events'] and method == 'GET':
        return 200, {'events': _events(handler, owner, res['name'])}, {}
    if rest[1:] == ['metadata'] and method == 'GET':
        return 200, {'metadata': {}}, {}
    if rest[1:] == ['signal'] and method == 'POST':
        _signal(cloud, owner, res)
        return 200, None, {}
    raise heat_error(404, 'Not Found', 'NotFound', 'No such Heat path')


def _signal(cloud, stack, res):
    if res['type'] != hot.SCALING_POLICY:
        raise heat_error(400, 'Bad Request', 'ResourceActionNotSupported',
                         '%s does not take signals' % res['name'])
    group_id = res['properties'].get('auto_scaling_group_id')
    group = next(r for r in stack['resources'].values()
                 if r['physical_id'] == group_id)
    target = group['data']['desired'] + int(
        res['properties'].get('scaling_adjustment', 0))
    cloud.signalled(stack['id'], res['name'])
    cloud.resize_group(stack['id'], group['name'], target, wait=False)


EVENT_SORT_KEYS = ('event_time', 'resource_name', 'resource_status',
                   'resource_action', 'resource_type')
EVENT_FILTERS = ('resource_name', 'resource_status', 'resource_action',
                 'resource_type', 'physical_resource_id')


def _events(handler, stack, resource_name=None):
    """A stack's (or one resource's) events with Heat's query: filters,
    sort_keys/sort_dir (oldest first by default), marker and limit."""
    query = handler.query
    unknown = sorted(set(query) - set(EVENT_FILTERS) - {
        'sort_keys', 'sort_dir', 'limit', 'marker', 'nested_depth'})
    if unknown:
        raise heat_error(400, 'Bad Request', 'HTTPBadRequest',
                         'the lab\'s event list does not support %s'
                         % ', '.join(unknown))
    rows = [_event_body(handler, stack, e) for e in
            handler.server.cloud.events(stack['id'], resource_name)]
    for key in EVENT_FILTERS:
        if key in query:
            rows = [r for r in rows if r[key] in set(query[key])]
    keys = query.get('sort_keys') or ['event_time']
    if any(k not in EVENT_SORT_KEYS for k in keys):
        raise heat_error(400, 'Bad Request', 'HTTPBadRequest',
                         'sort_keys must be among %s'
                         % ', '.join(EVENT_SORT_KEYS))
    descending = (query.get('sort_dir') or ['asc'])[-1] == 'desc'
    rows.sort(key=lambda r: [r[k] for k in keys] + [r['_seq']],
              reverse=descending)
    if 'marker' in query:
        ids = [r['id'] for r in rows]
        if query['marker'][-1] not in ids:
            raise heat_error(404, 'Not Found', 'EntityNotFound',
                             'The Event (%s) could not be found.'
                             % query['marker'][-1])
        rows = rows[ids.index(query['marker'][-1]) + 1:]
    if 'limit' in query:
        try:
            rows = rows[:max(int(query['limit'][-1]), 0)]
        except ValueError:
            raise heat_error(400, 'Bad Request', 'HTTPBadRequest',
                             'limit must be a number')
    for row in rows:
        del row['_seq']
    return rows


def _event_body(handler, stack, event):
    stack_url = _stack_url(handler, stack)
    action, _, _ = event['status'].partition('_')
    resource_url = '%s/resources/%s' % (stack_url, event['resource_name'])
    return {'id': event['id'], 'event_time': event['time'],
            'resource_name': event['resource_name'],
            'logical_resource_id': event['resource_name'],
            'physical_resource_id': event['physical_id'],
            'resource_type': event['resource_type'],
            'resource_status': event['status'],
            'resource_action': action,
            'resource_status_reason': event['reason'],
            'links': [{'href': '%s/events/%s' % (resource_url, event['id']),
                       'rel': 'self'},
                      {'href': resource_url, 'rel': 'resource'},
                      {'href': stack_url, 'rel': 'stack'}],
            '_seq': event['seq']}


def _matches(item, filters):
    fields = {'type': item['resource_type'], 'name': item['resource_name'],
              'status': item['resource_status'].partition('_')[2],
              'action': item['resource_status'].partition('_')[0],
              'id': item['physical_resource_id']}
    return all(fields[k] in wanted for k, wanted in filters.items())


def _resource_body(handler, stack, res):
    cloud = handler.server.cloud
    stack_url = _stack_url(handler, stack)
    links = [{'href': '%s/resources/%s' % (stack_url, res['name']),
              'rel': 'self'}, {'href': stack_url, 'rel': 'stack'}]
    if res.get('nested'):
        links.append({'href': _stack_url(handler, cloud.stack(res['nested'])),
                      'rel': 'nested'})
    body = {'resource_name': res['name'], 'logical_resource_id': res['name'],
            'physical_resource_id': res['physical_id'] or '',
            'resource_type': res['type'], 'resource_status': res['status'],
            'resource_status_reason': res['reason'],
            'creation_time': res['creation_time'],
            'updated_time': res['updated_time'],
            'required_by': res['required_by'], 'links': links}
    if stack['parent']:
        body['parent_resource'] = stack['parent_resource']
    return body
