"""Reading Heat's resource JSON: which stack a resource lives in, attributes.

Pure helpers shared by :mod:`.builder` and :mod:`.heat`. Shapes are those of
the Heat v1 API: a resource listing item has ``resource_name``,
``physical_resource_id``, ``resource_type``, ``resource_status``, ``links``
(``self``, ``stack`` and, for nested-stack resources, ``nested``) and, when it
lives in a nested stack, ``parent_resource``; a resource shown with
``resources.get`` adds ``attributes``. Modern Heat returns the OpenStack
object itself (the Nova server, the Neutron port ...) as ``attributes`` when
the resource type has a ``show`` attribute; older shapes keep it under
``attributes['show']``. Both are read.
"""

import ast
import json
from urllib import parse

from k8s_mgmt import exceptions

SERVER = 'OS::Nova::Server'
PORT = 'OS::Neutron::Port'
FLOATING_IP = 'OS::Neutron::FloatingIP'
VOLUME = 'OS::Cinder::Volume'
SERVER_GROUP = 'OS::Nova::ServerGroup'
GROUP_TYPES = ('OS::Heat::AutoScalingGroup', 'OS::Heat::ResourceGroup')


def stack_link(resource):
    """(stack_name, stack_id) from the resource's ``stack`` link."""
    for link in resource.get('links') or ():
        if link.get('rel') != 'stack':
            continue
        path = parse.urlsplit(link.get('href') or '').path
        parts = [parse.unquote(p) for p in path.split('/') if p]
        if len(parts) >= 3 and parts[-3] == 'stacks':
            return parts[-2], parts[-1]
    raise exceptions.TopologyError(
        reason='resource %r has no usable "stack" link in %r'
               % (resource.get('resource_name'), resource.get('links')))


def nested_stack_id(resource):
    """The id of the nested stack a group or member resource owns, or None."""
    if resource.get('physical_resource_id'):
        return resource['physical_resource_id']
    for link in resource.get('links') or ():
        if link.get('rel') == 'nested':
            return parse.urlsplit(link.get('href') or '').path.rstrip(
                '/').rsplit('/', 1)[-1] or None
    return None


class ResourceIndex(object):
    """A nested resource listing indexed by the stack each resource is in."""

    def __init__(self, resources):
        self.by_stack = {}      # stack id -> {resource name: resource dict}
        self.stack_refs = {}    # stack id -> 'stack_name/stack_id'
        for res in resources:
            name, sid = stack_link(res)
            self.by_stack.setdefault(sid, {})[res['resource_name']] = res
            self.stack_refs[sid] = '%s/%s' % (name, sid)

    def stack(self, stack_id):
        return self.by_stack.get(stack_id, {})

    def get(self, stack_id, name):
        return self.stack(stack_id).get(name)

    def of_type(self, stack_id, *types):
        return [r for r in self.stack(stack_id).values()
                if r.get('resource_type') in types]

    def everywhere(self, name, rtype=None):
        """(stack_id, resource) for each resource called ``name``."""
        found = []
        for sid, resources in sorted(self.by_stack.items()):
            res = resources.get(name)
            if res is not None and (rtype is None or
                                    res.get('resource_type') == rtype):
                found.append((sid, res))
        return found

    def all_of_type(self, rtype):
        return [(sid, r) for sid, resources in sorted(self.by_stack.items())
                for r in resources.values() if r.get('resource_type') == rtype]


def attribute(resource_detail, key):
    """An attribute of a shown resource, read from either Heat shape."""
    attrs = (resource_detail or {}).get('attributes') or {}
    value = attrs.get(key)
    if value is None and isinstance(attrs.get('show'), dict):
        value = attrs['show'].get(key)
    return value


def fixed_ips(port_detail):
    """IP addresses of a port, first one first."""
    ips = attribute(port_detail, 'fixed_ips') or []
    if isinstance(ips, str):
        ips = parse_listish(ips)
    return [ip['ip_address'] for ip in ips
            if isinstance(ip, dict) and ip.get('ip_address')]


def parse_listish(text):
    """Heat's deprecated string attributes: JSON or a Python repr of a list."""
    for loader in (json.loads, ast.literal_eval):
        try:
            value = loader(text)
        except (ValueError, SyntaxError):
            continue
        if isinstance(value, list):
            return value
    return []


def creation_sort_key(resource):
    return (resource.get('creation_time') or '', resource['resource_name'])
