"""Load Heat Orchestration Templates (HOT) and evaluate their functions.

Just enough of Heat's template language for the lab to build stacks from the
sample VNF package's BaseHOT: parameters with defaults, the resource types the
package uses, and the intrinsic functions ``get_param``, ``get_resource``,
``get_attr``, ``str_replace`` and ``list_join``. Anything else is refused with
an error naming the template and the resource, so a package change the lab
cannot run is noticed at once instead of producing a wrong stack.
"""

import dataclasses
import json
import os

import yaml

from k8s_mgmt import exceptions

SERVER = 'OS::Nova::Server'
PORT = 'OS::Neutron::Port'
FLOATING_IP = 'OS::Neutron::FloatingIP'
SERVER_GROUP = 'OS::Nova::ServerGroup'
VOLUME = 'OS::Cinder::Volume'
VOLUME_ATTACHMENT = 'OS::Cinder::VolumeAttachment'
SCALING_GROUP = 'OS::Heat::AutoScalingGroup'
SCALING_POLICY = 'OS::Heat::ScalingPolicy'
SUPPORTED_TYPES = (SERVER, PORT, FLOATING_IP, SERVER_GROUP, VOLUME,
                   VOLUME_ATTACHMENT, SCALING_GROUP, SCALING_POLICY)
FUNCTIONS = ('get_param', 'get_resource', 'get_attr', 'str_replace',
             'list_join')
# Where a BaseHOT keeps its nested templates, relative to its top template;
# a client sends each in the stack's ``files`` under its file name, the name
# the parent's resource type gives (Tacker does so for a BaseHOT).
NESTED_DIRS = ('', 'nested')
# The name the lab gives a top template (Heat's API gives it none).
TOP_TEMPLATE = 'template.yaml'


class HotError(exceptions.MgmtDriverError):
    message = 'HOT template %(template)s: %(reason)s'


@dataclasses.dataclass
class Template:
    name: str           # its key in ``files`` (the top one's: its own name)
    parameters: dict    # name -> parameter schema (type, default, ...)
    resources: dict     # name -> definition {type, properties, depends_on}
    description: str = ''
    files: dict = dataclasses.field(default_factory=dict, repr=False)
    body: dict = dataclasses.field(default_factory=dict, repr=False)

    def find_nested(self, type_name):
        """The ``files`` key of the template a resource type names, or None
        for a type that names no template file."""
        if not type_name.endswith(('.yaml', '.yml')):
            return None
        if type_name in self.files:
            return type_name
        raise HotError(template=self.name,
                       reason='nested template %s is not among the stack\'s '
                              'files (%s)' % (type_name, ', '.join(
                                  sorted(self.files)) or 'none'))


def read_dir_template(path):
    """(top template text, files) of a template file and the templates
    beside it and in ``nested/``, each keyed by its file name: what a
    client sends to create a stack from a BaseHOT."""
    try:
        with open(path) as handle:
            text = handle.read()
        files = {}
        base = os.path.dirname(os.path.abspath(path))
        for sub in NESTED_DIRS:
            folder = os.path.join(base, sub)
            names = os.listdir(folder) if os.path.isdir(folder) else []
            for name in sorted(names):
                full = os.path.join(folder, name)
                if (name.endswith(('.yaml', '.yml')) and os.path.isfile(full)
                        and full != os.path.abspath(path)):
                    with open(full) as handle:
                        files[name] = handle.read()
    except OSError as err:
        raise HotError(template=path, reason=str(err))
    return text, files


def load_template(path):
    """Parse a template file with the nested templates beside it."""
    text, files = read_dir_template(path)
    return parse_template(os.path.basename(path), text, files)


def parse_template(name, body, files=None):
    """Parse one HOT template (text, or a dict as a client may send it);
    ``files`` maps the names resource types use to the nested templates'
    texts. Checks every resource type is one the lab knows."""
    files = dict(files or {})
    if isinstance(body, str):
        try:
            body = yaml.safe_load(body)
        except yaml.YAMLError as err:
            raise HotError(template=name, reason=str(err))
    if not isinstance(body, dict) or 'heat_template_version' not in body:
        raise HotError(template=name, reason='not a HOT template')
    template = Template(name=name,
                        parameters=body.get('parameters') or {},
                        resources=body.get('resources') or {},
                        description=body.get('description', ''),
                        files=files, body=body)
    for res_name, definition in template.resources.items():
        _check_resource(template, res_name, definition)
    return template


def nested_template(parent, key):
    """The nested template ``key`` of ``parent``'s files."""
    return parse_template(key, parent.files[key], parent.files)


def _check_resource(template, name, definition):
    kind = definition.get('type') if isinstance(definition, dict) else None
    if kind in SUPPORTED_TYPES:
        if kind == SCALING_GROUP:
            member = (definition.get('properties') or {}).get('resource')
            if not isinstance(member, dict) or 'type' not in member:
                raise HotError(template=template.name,
                               reason='resource %s: AutoScalingGroup needs a '
                                      '"resource" with a "type"' % name)
            _check_resource(template, name + '.resource', member)
        return
    if isinstance(kind, str) and template.find_nested(kind):
        return
    raise HotError(template=template.name,
                   reason='resource %s has type %r, which the lab does not '
                          'support (supported: %s, or a nested template file)'
                          % (name, kind, ', '.join(SUPPORTED_TYPES)))


def resolve_parameters(template, given):
    """Parameter values: the given ones over the defaults; json ones decoded.

    Raises HotError naming every required parameter that has no value.
    """
    values, missing = {}, []
    for name, schema in template.parameters.items():
        schema = schema or {}
        if name in given:
            value = given[name]
        elif 'default' in schema:
            value = schema['default']
        else:
            missing.append(name)
            continue
        if schema.get('type') == 'json' and isinstance(value, str):
            value = json.loads(value)
        values[name] = value
    if missing:
        raise HotError(template=template.name,
                       reason='no value for parameter(s) %s'
                              % ', '.join(missing))
    return values


def references(value):
    """Resources a property value names via get_resource or get_attr."""
    found = set()
    if isinstance(value, dict):
        for key, arg in value.items():
            if key == 'get_resource' and isinstance(arg, str):
                found.add(arg)
            elif key == 'get_attr' and isinstance(arg, list) and arg:
                found.add(arg[0])
            found |= references(arg)
    elif isinstance(value, list):
        for item in value:
            found |= references(item)
    return found


def creation_order(template):
    """Resource names ordered so each comes after the ones it refers to."""
    needs = {}
    for name, definition in template.resources.items():
        deps = references(definition.get('properties') or {})
        depends_on = definition.get('depends_on') or []
        if isinstance(depends_on, str):
            depends_on = [depends_on]
        deps |= set(depends_on)
        unknown = deps - set(template.resources)
        if unknown:
            raise HotError(template=template.name,
                           reason='resource %s refers to unknown '
                                  'resource(s) %s'
                                  % (name, ', '.join(sorted(unknown))))
        needs[name] = deps
    ordered, visiting = [], set()

    def visit(name):
        # Depth first in template order: a resource right after what it needs.
        if name in ordered:
            return
        if name in visiting:
            raise HotError(template=template.name,
                           reason='circular references through %s' % name)
        visiting.add(name)
        for dep in sorted(needs[name]):
            visit(dep)
        ordered.append(name)
    for name in needs:
        visit(name)
    return ordered


def required_by(template):
    """Resource name -> names of the resources that refer to it (Heat's
    ``required_by``)."""
    result = {name: [] for name in template.resources}
    for name, definition in template.resources.items():
        for dep in sorted(references(definition.get('properties') or {})):
            result.setdefault(dep, []).append(name)
    return result


class Evaluator:
    """Evaluates intrinsic functions in a property value.

    ``parameters`` are the stack's resolved parameter values;
    ``resource_id(name)`` returns a created resource's physical id and
    ``attribute(name, attr)`` one of its attributes.
    """

    def __init__(self, template, parameters, resource_id, attribute):
        self.template = template
        self.parameters = parameters
        self.resource_id = resource_id
        self.attribute = attribute

    def evaluate(self, value):
        if isinstance(value, list):
            return [self.evaluate(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, arg), = value.items()
            if key in FUNCTIONS:
                return getattr(self, '_' + key)(arg)
        return {k: self.evaluate(v) for k, v in value.items()}

    def _fail(self, reason):
        raise HotError(template=self.template.name, reason=reason)

    def _get_param(self, arg):
        path = self.evaluate(arg if isinstance(arg, list) else [arg])
        if path[0] not in self.parameters:
            self._fail('get_param of undeclared parameter %s' % path[0])
        return self._walk(self.parameters[path[0]], path[1:],
                          'get_param %s' % path)

    def _get_resource(self, name):
        return self.resource_id(name)

    def _get_attr(self, arg):
        name, attr, *path = self.evaluate(arg)
        return self._walk(self.attribute(name, attr), path,
                          'get_attr %s' % ([name, attr] + path))

    def _walk(self, value, path, what):
        for step in path:
            try:
                value = value[int(step) if isinstance(value, list) else step]
            except (KeyError, IndexError, TypeError, ValueError):
                self._fail('%s: no %r in %r' % (what, step, value))
        return value

    def _str_replace(self, arg):
        text = self.evaluate(arg['template'])
        for old, new in self.evaluate(arg.get('params') or {}).items():
            text = text.replace(old, str(new))
        return text

    def _list_join(self, arg):
        delimiter, *lists = self.evaluate(arg)
        items = []
        for part in lists:
            items.extend(part if isinstance(part, list) else [part])
        return delimiter.join(str(item) for item in items)
