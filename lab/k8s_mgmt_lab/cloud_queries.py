"""The read side of the lab's cloud (:class:`k8s_mgmt_lab.cloud.LabCloud`):
stacks by id or name, their resources and templates, servers and what Nova's
console output would show. Every answer is a copy taken under the cloud's
lock, so a caller never sees a change half made.

:class:`StackQueries` is mixed into LabCloud, whose ``state`` (the stacks),
``_lock``, ``console_overrides``, ``provisioner`` and ``state_file`` it reads.
"""

import copy
import os

from k8s_mgmt_lab import cloud_resources as resources
from k8s_mgmt_lab.errors import InstanceNotReady
from k8s_mgmt_lab.errors import LabCloudError
from k8s_mgmt_lab import hot


# A console_overrides value: the server exists but is not spawned yet, so
# os-getConsoleOutput answers 409 as Nova does.
NOT_READY = object()


class StackQueries:
    """The read side of LabCloud (see the module's docstring)."""

    @property
    def project_id(self):
        return self.state['project_id']

    def stack(self, ident):
        """A copy of the stack with this id or name (nested ones too)."""
        with self._lock:
            return copy.deepcopy(self._stack(ident))

    def top_stacks(self):
        return self.all_stacks(nested=False)

    def all_stacks(self, nested=True):
        """Copies of every stack (``nested``: the nested ones too) but the
        deleted ones."""
        with self._lock:
            return [copy.deepcopy(s) for s in self.state['stacks'].values()
                    if (nested or s['parent'] is None)
                    and s['status'] != 'DELETE_COMPLETE']

    def list_resources(self, ident, nested_depth=0):
        """(stack, resource) copies of a stack and, to nested_depth, below."""
        with self._lock:
            found = []
            self._collect(self._stack(ident), nested_depth, found)
            return copy.deepcopy(found)

    def _collect(self, stack, depth, found):
        for res in stack['resources'].values():
            found.append((stack, res))
            if depth > 0 and res.get('nested'):
                self._collect(self.state['stacks'][res['nested']], depth - 1,
                              found)

    def resource(self, ident, name):
        """(stack, resource, attributes) copies; name or physical id."""
        with self._lock:
            stack = self._stack(ident)
            res = stack['resources'].get(name) or next(
                (r for r in stack['resources'].values()
                 if r['physical_id'] == name), None)
            if res is None:
                raise LabCloudError(reason='stack %s has no resource %s'
                                    % (stack['name'], name))
            return (copy.deepcopy(stack), copy.deepcopy(res),
                    copy.deepcopy(self._attributes(res)))

    def template(self, ident):
        with self._lock:
            stack = self._stack(ident)
            if stack.get('generated_template'):
                return copy.deepcopy(stack['generated_template'])
            body = copy.deepcopy(self.template_of(stack).body)
        # YAML reads 2016-10-14 as a date; Heat returns the string.
        body['heat_template_version'] = str(body['heat_template_version'])
        return body

    def template_of(self, stack):
        """The parsed template a stack was built from (the root stack
        keeps the top template's text and the files its client sent)."""
        root = self.state['stacks'][stack['root']]
        files = root['files']
        if stack['id'] == root['id']:
            return hot.parse_template(root['template'], root['template_text'],
                                      files)
        return hot.parse_template(stack['template'], files[stack['template']],
                                  files)

    def servers(self, ident):
        """Every server of a top stack: dicts for ``lab status``."""
        with self._lock:
            top = self._stack(ident)
            rows = []
            for stack, res in self._tree_resources(top['id']):
                if res['type'] == hot.SERVER:
                    rows.append(dict(self._server_spec(res)._asdict(),
                                     resource_name=res['name'],
                                     stack_id=stack['id'],
                                     parent_resource=stack['parent_resource'],
                                     status=res['status']))
            return rows

    def console_output(self, server_id):
        """What Nova's os-getConsoleOutput returns for a server: the boot
        log of its lab VM, with cloud-init's host key blocks."""
        with self._lock:
            exists = any(
                res['type'] == hot.SERVER and res['physical_id'] == server_id
                and not res['status'].startswith('DELETE')
                for stack in self.state['stacks'].values()
                for res in stack['resources'].values())
        if not exists:
            raise LabCloudError(reason='no server %s' % server_id)
        if server_id in self.console_overrides:
            if self.console_overrides[server_id] is NOT_READY:
                raise InstanceNotReady(reason='Instance %s is not ready'
                                       % server_id)
            return self.console_overrides[server_id]
        if self.state_file:
            path = os.path.join(os.path.dirname(self.state_file), 'console',
                                os.path.basename(server_id))
            try:
                with open(path) as handle:
                    return handle.read()
            except FileNotFoundError:
                pass
        console = getattr(self.provisioner, 'console_output', None)
        if console is None:
            return 'lab: server %s has no VM behind it\n' % server_id
        return console(server_id)

    def _stack(self, ident):
        stacks = self.state['stacks']
        if ident in stacks:
            return stacks[ident]
        if '/' in ident:
            return self._stack(ident.rsplit('/', 1)[1])
        for stack in stacks.values():
            if stack['name'] == ident and stack['status'] != 'DELETE_COMPLETE':
                return stack
        raise LabCloudError(reason='no stack %s' % ident)

    def _tree_resources(self, root_id):
        for stack in list(self.state['stacks'].values()):
            if stack['root'] == root_id:
                for res in list(stack['resources'].values()):
                    yield stack, res

    def _find_physical(self, root_id, physical_id, kind=None):
        for stack, res in self._tree_resources(root_id):
            if (res['physical_id'] == physical_id
                    and kind in (None, res['type'])):
                return stack, res
        raise LabCloudError(reason='no %s %s in stack %s'
                            % (kind or 'resource', physical_id, root_id))

    def _attributes(self, res):
        return resources.attributes(self, res)
