"""The lab's side of real Heat, done as Tacker's OpenStack infra driver
does it (``tacker/vnfm/infra_drivers/openstack/openstack.py``), over
Heat's REST API through a keystoneauth session:

- create: the flavour's top BaseHOT as ``template``, the nested templates
  as ``files`` under the names the top refers to, the UserData's
  parameters, ``timeout_mins`` and no rollback;
- scale: a ScalingPolicy's signal (Tacker's ``scale``), or an update of
  the group's ``desired_capacity`` (``scale_out_initial``), after marking
  the members to remove unhealthy for a scale in (``scale_in_reverse``:
  Heat removes failed members first);
- heal: the server resource marked unhealthy in its own (nested) stack,
  then an update of the top stack with the parameters it has (``heal_vnf``);
- delete, waited for until Heat no longer knows the stack.

Every wait polls with backoff against a deadline; a FAILED status raises
:class:`StackFailed` naming the stack, the status and Heat's reason.
"""

import copy
import json
import os
import time

from k8s_mgmt import polling
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.openstack import stack_servers

# Tacker's STACK_RETRIES (60) times STACK_RETRY_WAIT (10 s), in minutes.
TIMEOUT_MINS = 10
NESTED_DEPTH = 2
HEAT = {'service_type': 'orchestration', 'interface': 'public'}
NEUTRON = {'service_type': 'network', 'interface': 'public'}


class StackFailed(LabError):
    """A stack ended its action in a status other than the one wanted."""


def package_templates(package_dir, flavour):
    """(top template text, {nested file name: text}) of
    ``BaseHOT/<flavour>``: the one top template and ``nested/*.yaml``, as
    Tacker's ``get_base_nest_hot_dict`` reads them."""
    folder = os.path.join(package_dir, 'BaseHOT', flavour)
    tops = sorted(n for n in _listing(folder) if n.endswith(('.yaml',
                                                             '.yml')))
    if len(tops) != 1:
        raise LabError('BaseHOT/%s must hold exactly one top template, '
                       'found %s' % (flavour, ', '.join(tops) or 'none'))
    nested = os.path.join(folder, 'nested')
    files = {name: _read(os.path.join(nested, name))
             for name in sorted(_listing(nested))
             if name.endswith(('.yaml', '.yml'))}
    return _read(os.path.join(folder, tops[0])), files


def _listing(folder):
    return os.listdir(folder) if os.path.isdir(folder) else []


def _read(path):
    with open(path) as handle:
        return handle.read()


# keystoneauth's retries of a GET that got no answer (ConnectFailure:
# refused, reset, or closed without a response), 0.5 s apart, doubling.
READ_RETRIES = 2


class Stacks(object):
    """Heat's stacks as one project's session sees them. A stack is named
    by its path, ``<name>/<id>``, which Heat serves without a redirect."""

    def __init__(self, session, region_name=None, timeout=600.0,
                 sleep=time.sleep):
        self.session = session
        self.sleep = sleep
        self.heat = dict(HEAT, region_name=region_name)
        self.neutron = dict(NEUTRON, region_name=region_name)
        # Heat builds in the region the request names, as heatclient
        # names it; without the header, in its region_name_for_services.
        self.headers = {'X-Region-Name': region_name} if region_name else {}
        self.timeout = timeout

    def _call(self, method, url, service=None, **kwargs):
        if service is None:
            headers = dict(self.headers)
            headers.update(kwargs.get('headers') or {})
            kwargs['headers'] = headers
        if method == 'GET':
            # A read on a kept-alive connection the server closed just then
            # (its idle timeout) fails without an answer: tried again.
            kwargs.setdefault('connect_retries', READ_RETRIES)
        return self.session.request(
            url, method, endpoint_filter=service or self.heat, **kwargs)

    # -- the stack --------------------------------------------------------

    def create(self, name, template, files, parameters):
        """Start the create; the new stack's path."""
        made = self._call('POST', '/stacks', json={
            'stack_name': name, 'template': template, 'files': files,
            'parameters': parameters, 'timeout_mins': TIMEOUT_MINS,
            'disable_rollback': True}).json()['stack']
        return '%s/%s' % (name, made['id'])

    def create_flavour(self, name, package_dir, flavour, parameters):
        """Start the create of ``flavour``'s stack from the package."""
        template, files = package_templates(package_dir, flavour)
        return self.create(name, template, files, parameters)

    def show(self, path):
        """The stack record, or None when Heat no longer knows it."""
        answer = self._call('GET', '/stacks/' + path, raise_exc=False)
        if answer.status_code == 404:
            return None
        answer.raise_for_status()
        return answer.json()['stack']

    def parameters(self, path):
        """The ``nfv`` parameter the stack was last given, as a dict."""
        return {'nfv': json.loads(self.show(path)['parameters']['nfv'])}

    def update(self, path, parameters=None):
        """Start an update of the stack as it is (PATCH: ``existing``),
        with changed ``parameters`` if any."""
        body = {'timeout_mins': TIMEOUT_MINS}
        if parameters is not None:
            body['parameters'] = parameters
        self._call('PATCH', '/stacks/' + path, json=body)

    def delete(self, path):
        self._call('DELETE', '/stacks/' + path)

    def wait(self, path, action):
        """Poll until the stack leaves ``<action>_IN_PROGRESS``; the
        stack (None once a deleted one is gone). StackFailed on any other
        end than ``<action>_COMPLETE`` or at the deadline."""
        poll = self._poll()
        status = None
        for _attempt in poll:
            stack = self.show(path)
            if stack is None:
                if action == 'DELETE':
                    return None
                raise StackFailed('stack %s: gone while waiting for '
                                  '%s_COMPLETE' % (path, action))
            status = stack['stack_status']
            if status == action + '_COMPLETE':
                return stack
            if status != action + '_IN_PROGRESS':
                raise StackFailed('stack %s: %s: %s' % (
                    path, status, stack.get('stack_status_reason')))
        raise StackFailed('stack %s: still %s after %.0f s'
                          % (path, status, self.timeout))

    def _poll(self):
        return polling.Poll(self.timeout, first=0.2, maximum=2.0,
                            sleep=self.sleep)

    # -- resources --------------------------------------------------------

    def resources(self, path, nested_depth=NESTED_DEPTH):
        return self._call('GET', '/stacks/%s/resources?nested_depth=%d'
                          % (path, nested_depth)).json()['resources']

    def resource(self, path, name):
        return self._call('GET', '/stacks/%s/resources/%s' % (
            path, name)).json()['resource']

    def group_stack(self, path, group):
        """'name/id' of the stack of the top stack's group ``group``;
        StackFailed when Heat shows it none (a resource that is no group,
        or a group whose stack was never made)."""
        ref = stack_servers.nested_ref(self.resource(path, group))
        if ref is None:
            raise StackFailed('group %s of stack %s: Heat shows no stack '
                              'of its members' % (group, path))
        return ref

    def servers(self, path):
        """Every server of the stack and its nested stacks
        (:class:`.stack_servers.StackServer`), with its ports' IPs."""
        listing = self.resources(path)
        ports = self._call('GET', '/v2.0/ports',
                           service=self.neutron).json()['ports']
        return stack_servers.servers_of(listing, ports)

    def mark_unhealthy(self, stack, resource_name, reason):
        """Mark a resource of a (nested) stack, 'name/id', unhealthy, as
        Tacker does before a heal or a scale in."""
        self._call('PATCH', '/stacks/%s/resources/%s' % (
            stack, resource_name), json={
                'mark_unhealthy': True, 'resource_status_reason': reason})

    # -- operations -------------------------------------------------------

    def signal(self, path, policy):
        """Signal a ScalingPolicy, as Tacker's legacy ``scale`` does; the
        group's stack updates afterwards (see :meth:`wait_group`)."""
        self._call('POST', '/stacks/%s/resources/%s/signal' % (path, policy))

    def scaling(self, path, group):
        """Whether Heat still counts the group as scaling: its
        ``scaling_in_progress`` metadata, cleared a moment after its stack
        completes. A signal meanwhile is dropped ("already in scaling")."""
        metadata = self._call('GET', '/stacks/%s/resources/%s/metadata' % (
            path, group)).json()['metadata']
        return bool(metadata.get('scaling_in_progress'))

    def wait_group(self, path, group, members):
        """Poll until the group's stack is COMPLETE with ``members``
        members and the group no longer scaling, so the next signal
        counts; its member names. The top stack's status does not move
        on a signal, the group's does, and not at once."""
        group_ref = self.group_stack(path, group)
        poll = self._poll()
        names = []
        for _attempt in poll:
            stack = self.show(group_ref)
            if stack is None:
                raise StackFailed('group %s of stack %s: its stack %s is '
                                  'gone' % (group, path, group_ref))
            names = [r['resource_name'] for r in self.resources(group_ref, 0)]
            status = stack['stack_status']
            if status.endswith('FAILED'):
                raise StackFailed('stack %s: %s: %s' % (
                    group_ref, status, stack.get('stack_status_reason')))
            if status.endswith('COMPLETE') and len(names) == members and \
                    not self.scaling(path, group):
                return names
        raise StackFailed('group %s of stack %s: %d members, not %d, after '
                          '%.0f s' % (group, path, len(names), members,
                                      self.timeout))

    def resize(self, path, vdu, desired_capacity, remove=()):
        """Set ``vdu``'s desired_capacity in the stack's parameters and
        update (Tacker's ``scale_out_initial``); for a scale in, the
        ``remove`` servers' members are marked unhealthy first, in their
        group's stack, so Heat removes those (``scale_in_reverse``)."""
        parameters = self.parameters(path)
        for server in remove:
            self.mark_unhealthy(self.group_stack(path, server.group),
                                server.member, 'Scale')
        changed = copy.deepcopy(parameters)
        changed['nfv']['VDU'][vdu]['desired_capacity'] = desired_capacity
        self.update(path, changed)
        return self.wait(path, 'UPDATE')

    def heal(self, path, servers, reason='Healing'):
        """Mark each server unhealthy in its own stack, then update the
        top stack as it is (Tacker's ``heal_vnf``); Heat replaces them."""
        for server in servers:
            self.mark_unhealthy(server.stack, server.vdu, reason)
        self.update(path)
        return self.wait(path, 'UPDATE')

    def project_stacks(self):
        """'name/id' of every top-level stack of the session's project (an
        admin's listing shows other projects' stacks too)."""
        project = self.session.get_project_id()
        return ['%s/%s' % (s['stack_name'], s['id'])
                for s in self._call('GET', '/stacks').json()['stacks']
                if s.get('project') == project]

    def abandon(self, path):
        """Heat forgets the stack without deleting its resources (the
        lab's own teardown removes its servers and volumes)."""
        self._call('DELETE', '/stacks/%s/abandon' % path)

    def wait_no_stacks(self):
        """Poll until the project has no stack left (StackFailed at the
        deadline, naming those left)."""
        left = []
        for _attempt in self._poll():
            left = self.project_stacks()
            if not left:
                return
        raise StackFailed('stacks still there %.0f s after their abandon: '
                          '%s' % (self.timeout, ', '.join(left)))

    def delete_and_wait(self, path):
        """Delete, wait for DELETE_COMPLETE, then until Heat lists no
        stack of that name: it frees the name a moment after the status
        (the purge of a convergence stack), and a create of the same name
        meanwhile is a 409 "already exists"."""
        self.delete(path)
        self.wait(path, 'DELETE')
        name = path.split('/')[0]
        project = self.session.get_project_id()
        for _attempt in self._poll():
            # An admin's listing shows other projects' stacks too.
            listed = [s for s in self._call('GET', '/stacks', params={
                'name': name}).json()['stacks']
                if s.get('project') in (None, project)]
            if not listed:
                return None
        raise StackFailed('stack %s: its name is still taken %.0f s after '
                          'its deletion' % (path, self.timeout))
