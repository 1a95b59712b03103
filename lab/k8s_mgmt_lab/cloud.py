"""The lab's stand-in for Heat, Nova, Neutron and Cinder: in-memory stacks.

Stacks are built by reading the sample VNF package's BaseHOT for a flavour, so
the package we ship is what the lab runs. The shape follows real Heat: an
``OS::Heat::AutoScalingGroup`` owns a nested "group" stack whose members are
resources named by a random 12-character id, each owning a nested member stack
with the server and its ports. Every stack, resource, server and port gets a
fresh UUID; scale and heal change ids the way Heat does.

Servers are handed to a *provisioner* (the lab's VM layer) in batches:
``create_servers([ServerSpec, ...])`` and ``delete_servers([server_id, ...])``.
``provisioner=None`` means no VMs at all (tests of the model and the API).
Volumes get files and loop devices from a *volume backend*
(:class:`k8s_mgmt_lab.volumes.LoopVolumes`; ``volumes=None``: none).

State lives in memory behind one lock and is written to a JSON file after each
change, so ``lab status`` in another process can read it and a later process
can serve it again (:meth:`LabCloud.load`). What reads it (stacks,
resources, templates, servers, consoles) is in :mod:`cloud_queries`; this
module builds and changes it.
"""

import collections
import copy
import ipaddress
import json
import os
import threading
import uuid

from oslo_log import log as logging
import yaml

from k8s_mgmt_lab import cloud_actions as actions
from k8s_mgmt_lab import cloud_changes as changes
from k8s_mgmt_lab import cloud_events as events
from k8s_mgmt_lab import cloud_queries
from k8s_mgmt_lab import cloud_resources as resources
from k8s_mgmt_lab import cloud_volumes
from k8s_mgmt_lab.errors import LabCloudError
from k8s_mgmt_lab.errors import StackConflict
from k8s_mgmt_lab import hot

LOG = logging.getLogger(__name__)

ServerSpec = collections.namedtuple('ServerSpec',
                                    'server_id name ip compute_host')
ScaleResult = changes.ScaleResult

STATE_VERSION = 2
FIRST_HOST_OCTET = 10     # .1 is the host's bridge; leave room below .10
NETWORK_NAME = 'lab-net'


# A console_overrides value: the server exists but is not spawned yet.
NOT_READY = cloud_queries.NOT_READY


now = resources.now


class LabCloud(cloud_queries.StackQueries):
    def __init__(self, package_dir, subnet='10.254.0.0/24', provisioner=None,
                 compute_hosts=3, state_file=None, project_id=None,
                 group_max_sizes=None, networks=None, volumes=None):
        """``group_max_sizes``: {VDU name: max_size} raising the BaseHOT's
        AutoScalingGroup limits for this cloud (a lab bigger than the
        sample package allows, like an operator editing max_size).

        ``networks``: {network id: name} of the Neutron networks that
        exist (default: one, named ``lab-net``). Every one is on the lab's
        bridge and subnet; a port on any other network fails as Neutron
        would."""
        self.provisioner = provisioner
        self.volumes = volumes
        self.state_file = state_file
        # {server id: text} served as that server's console output instead
        # of its real one (tests: a console that lies or is still booting;
        # NOT_READY for a server Nova has not spawned yet);
        # a file console/<server id> beside the state file does the same
        # for a lab served by another process.
        self.console_overrides = {}
        self._lock = threading.RLock()
        networks = dict(networks or {str(uuid.uuid4()): NETWORK_NAME})
        self.state = {
            'version': STATE_VERSION,
            'package_dir': os.path.abspath(package_dir),
            'subnet': str(ipaddress.ip_network(subnet)),
            'subnet_id': str(uuid.uuid4()),
            'network_id': next(iter(networks)),
            'networks': networks,
            'compute_hosts': ['compute%02d' % n
                              for n in range(1, compute_hosts + 1)],
            'project_id': project_id or uuid.uuid4().hex,
            'stacks': {},      # stack id -> stack dict
            'addresses': {},   # ip -> id of the port or floating IP holding it
            'group_max_sizes': dict(group_max_sizes or {}),
        }

    # ----------------------------------------------------------- persistence
    @classmethod
    def load(cls, state_file, provisioner=None, volumes=None):
        with open(state_file) as handle:
            state = json.load(handle)
        if state.get('version') != STATE_VERSION:
            raise LabCloudError(reason='%s: unknown state version %r'
                                % (state_file, state.get('version')))
        cloud = cls(state['package_dir'], state['subnet'], provisioner,
                    state_file=state_file, volumes=volumes)
        cloud.state = state
        return cloud

    def save(self):
        if not self.state_file:
            return
        # Snapshot and write under the state's lock: the API's threads and
        # the background actions all save (and mostly hold the lock
        # already), so there is one writer of the temporary file at a
        # time and an older snapshot never lands after a newer one.
        with self._lock:
            text = json.dumps(self.state, indent=1)
            tmp = '%s.%d.tmp' % (self.state_file, os.getpid())
            with open(tmp, 'w') as handle:
                handle.write(text)
            os.replace(tmp, self.state_file)

    # ------------------------------------------------------------ addresses
    def allocate_ip(self, owner_id):
        network = ipaddress.ip_network(self.state['subnet'])
        taken = self.state['addresses']
        for offset in range(FIRST_HOST_OCTET, network.num_addresses - 1):
            candidate = str(network.network_address + offset)
            if candidate not in taken:
                taken[candidate] = owner_id
                return candidate
        raise LabCloudError(reason='subnet %s has no free address'
                            % self.state['subnet'])

    def network(self, ref):
        """(id, name) of a network given by id or name, as Heat's
        ``network`` property takes either; LabCloudError when none has
        it."""
        networks = self.state.get('networks') or {
            self.state['network_id']: NETWORK_NAME}
        for net_id, name in networks.items():
            if ref in (net_id, name):
                return net_id, name
        raise LabCloudError(reason='network %s could not be found (this '
                            'lab has %s)' % (ref, ', '.join(
                                '%s (%s)' % item
                                for item in sorted(networks.items()))))

    def release_ip(self, ip):
        self.state['addresses'].pop(ip, None)

    # -------------------------------------------------------------- building
    def create_stack(self, flavour, parameters, name=None):
        """Build a top stack from the package's BaseHOT/<flavour>, sent as
        Tacker sends it (the top template and its nested ones as files);
        its id."""
        text, files = hot.read_dir_template(
            top_template(self.state['package_dir'], flavour))
        return self.create_stack_from(text, files, parameters,
                                      name or 'vnf-%s' % uuid.uuid4())

    def create_stack_from(self, template, files, parameters, name,
                          wait=True):
        """Heat's stack create: a top stack from a template (text or
        dict), the nested templates in ``files`` and ``parameters``; its
        id. A template or parameter problem raises before anything exists;
        the servers boot before it returns (``wait``) or while the stack
        is CREATE_IN_PROGRESS."""
        if not isinstance(template, str):
            template = yaml.safe_dump(template)
        top = hot.parse_template(hot.TOP_TEMPLATE, template, files)
        hot.resolve_parameters(top, parameters)
        with self._lock:
            if any(s['name'] == name and s['parent'] is None
                   and s['status'] != 'DELETE_COMPLETE'
                   for s in self.state['stacks'].values()):
                raise StackConflict(reason='The Stack (%s) already exists.'
                                    % name)
            new_servers = []
            try:
                stack = self.build_stack(
                    top, parameters, name, None, None, None, new_servers,
                    source=(template, dict(files or {})))
            except Exception:
                self._drop_partial(name)
                raise
            self.save()
        actions.finish(self, stack['id'], 'CREATE',
                       lambda: self._provision(stack['id'], new_servers),
                       wait)
        LOG.info('Lab stack %s (%s) created with %d servers',
                 name, stack['id'], len(new_servers))
        return stack['id']

    def _drop_partial(self, name):
        """Remove what a failed build left of top stack ``name``."""
        for stack in list(self.state['stacks'].values()):
            if (stack['name'] == name and stack['parent'] is None
                    and stack['status'] != 'DELETE_COMPLETE'):
                resources.delete_tree(self, stack)

    def forget_events(self, stack_id):
        events.forget(self, stack_id)

    def events(self, stack_id, resource_name=None):
        """Copies of a stack's events, oldest first."""
        with self._lock:
            return events.of_stack(self, stack_id, resource_name)

    def signalled(self, stack_id, resource_name):
        """Record a signal a resource (a scaling policy) took."""
        with self._lock:
            stack = self._stack(stack_id)
            events.record(self, stack, 'SIGNAL_COMPLETE',
                          'Signal: scaling adjustment applied',
                          stack['resources'][resource_name])
            self.save()

    def nested_template(self, root_id, key):
        return hot.nested_template(self.template_of(
            self.state['stacks'][root_id]), key)

    def build_stack(self, template, parameters, name, parent, parent_resource,
                    root, new_servers, source=None):
        """Create a stack (and its nested stacks) from a parsed template;
        ``source`` (top text, files): what a top stack keeps."""
        values = hot.resolve_parameters(template, parameters)
        stack_id = str(uuid.uuid4())
        stack = {'id': stack_id, 'name': name, 'template': template.name,
                 'parameters': values, 'parent': parent,
                 'parent_resource': parent_resource, 'root': root or stack_id,
                 'status': 'CREATE_IN_PROGRESS',
                 'reason': 'Stack CREATE started', 'creation_time': now(),
                 'updated_time': None, 'description': template.description,
                 'resources': {}}
        if source is not None:
            stack['template_text'], stack['files'] = source
        self.state['stacks'][stack_id] = stack
        events.record(self, stack, stack['status'], stack['reason'])
        evaluator = self.evaluator(stack, template)
        needed_by = hot.required_by(template)
        for res_name in hot.creation_order(template):
            definition = template.resources[res_name]
            res = {'name': res_name, 'type': definition['type'],
                   'physical_id': None, 'status': 'CREATE_COMPLETE',
                   'reason': 'state changed', 'creation_time': now(),
                   'updated_time': now(), 'required_by': needed_by[res_name],
                   'nested': None, 'data': {},
                   'properties': evaluator.evaluate(
                       definition.get('properties') or {})}
            stack['resources'][res_name] = res
            events.record(self, stack, 'CREATE_IN_PROGRESS', 'state changed',
                          res)
            resources.create(self, stack, res, template, new_servers)
            events.record(self, stack, 'CREATE_COMPLETE', 'state changed',
                          res)
        if parent is not None:   # a top stack completes with its servers
            events.set_status(self, stack, 'CREATE_COMPLETE',
                              'Stack CREATE completed successfully')
        return stack

    def evaluator(self, stack, template):
        def resource_id(name):
            return stack['resources'][name]['physical_id']

        def attribute(name, attr):
            attrs = self._attributes(stack['resources'][name])
            if attr not in attrs:
                raise LabCloudError(reason='%s has no attribute %s'
                                    % (name, attr))
            return attrs[attr]
        return hot.Evaluator(template, stack['parameters'], resource_id,
                             attribute)

    def _server_spec(self, res):
        port = self._port_of(res)
        # The VM's hostname: Nova's sanitising turns '_' into '-'.
        name = '%s-%s' % (res['name'].replace('_', '-'),
                          res['physical_id'][:8])
        return ServerSpec(res['physical_id'], name,
                          port['data']['ip'] if port else None,
                          res['data']['compute_host'])

    def _port_of(self, server):
        ports = server['data'].get('ports') or []
        for stack in self.state['stacks'].values():
            for res in stack['resources'].values():
                if ports and res['physical_id'] == ports[0]:
                    return res
        return None

    def _provision(self, root_id, server_ids):
        if server_ids and self.provisioner is not None:
            with self._lock:
                specs = [self._server_spec(self._find_physical(
                    root_id, sid, hot.SERVER)[1]) for sid in server_ids]
            self.provisioner.create_servers(specs)
        cloud_volumes.provide(self, server_ids)

    def _unprovision(self, server_ids, volume_ids=()):
        """Delete the servers' VMs; then free the loop devices of
        ``volume_ids`` (theirs) and delete volumes the cloud dropped."""
        if server_ids and self.provisioner is not None:
            self.provisioner.delete_servers(list(server_ids))
        cloud_volumes.release(self, volume_ids)

    # ------------------------------------------------------------- lifecycle
    def scale(self, stack_id, aspect_id, scale_type, steps=1):
        """Change an AutoScalingGroup's size by its policy's adjustment."""
        if scale_type not in ('SCALE_OUT', 'SCALE_IN'):
            raise LabCloudError(reason='unknown scale type %s' % scale_type)
        with self._lock:
            top = self._stack(stack_id)
            group = top['resources'].get(aspect_id)
            if group is None or group['type'] != hot.SCALING_GROUP:
                raise LabCloudError(reason='stack %s has no AutoScalingGroup '
                                    '%s' % (top['name'], aspect_id))
            step = changes.policy_adjustment(top, aspect_id, scale_type)
            target = group['data']['desired'] + step * steps
        return self.resize_group(top['id'], aspect_id, target, scale_type)

    def resize_group(self, stack_id, aspect_id, target, scale_type=None,
                     wait=True):
        """Resize an AutoScalingGroup of a top stack, as a policy signal
        does: the group's nested stack goes through UPDATE_IN_PROGRESS,
        new members are CREATE_IN_PROGRESS until their servers boot."""
        with self._lock:
            top = self._stack(stack_id)
            group = top['resources'][aspect_id]
            group_stack = self.state['stacks'][group['nested']]
            changes.check_size(group, target)
            actions.begin(self, group_stack, 'UPDATE')
            result, work = changes.resize(self, top, group, target, scale_type)
            self.save()
        actions.finish(self, group_stack['id'], 'UPDATE', work, wait)
        return result

    def mark_unhealthy(self, stack_id, resource_name, unhealthy=True,
                       reason=''):
        with self._lock:
            stack = self._stack(stack_id)
            res = stack['resources'].get(resource_name)
            if res is None:
                raise LabCloudError(reason='stack %s has no resource %s'
                                    % (stack['name'], resource_name))
            events.set_status(
                self, stack, 'CHECK_FAILED' if unhealthy else
                'CHECK_COMPLETE', reason or ('marked unhealthy' if unhealthy
                                             else 'marked healthy'), res)
            self.save()

    def replace_server(self, stack_id, server_id, wait=True):
        """Heal one server: new id, same port (so same IP); its new id.
        Its volumes go to the new server; one marked unhealthy is first
        replaced by a new, empty volume."""
        with self._lock:
            top = self._stack(stack_id)
            actions.begin(self, top, 'UPDATE')
            new_id, work = changes.replace(self, top, server_id)
            self.save()
        actions.finish(self, top['id'], 'UPDATE', work, wait)
        return new_id

    def update_stack(self, stack_id, parameters=None, existing=True,
                     template=None, files=None, wait=True):
        """Heat stack update (PATCH: ``existing``; PUT: not): a new
        template and files when given, new parameters (desired_capacity
        changes resize groups), and every server marked unhealthy, or
        whose volume is, replaced. The stack goes through
        UPDATE_IN_PROGRESS even when nothing but a server changes."""
        with self._lock:
            top = self._stack(stack_id)
            if top['parent'] is not None:
                raise LabCloudError(reason='update a top stack, not %s'
                                    % top['name'])
            results, steps = changes.update(self, top, parameters, existing,
                                            template, files)
            self.save()

        def work():
            for step in steps:
                step()
        actions.finish(self, top['id'], 'UPDATE', work, wait)
        return results

    def recreate_stack(self, stack_id):
        """Whole-VNF heal: delete the stack and build it again from what
        it was built from; the new id."""
        with self._lock:
            top = self._stack(stack_id)
            name, text = top['name'], top['template_text']
            files = copy.deepcopy(top['files'])
            parameters = copy.deepcopy(top['parameters'])
        self.delete_stack(top['id'])
        return self.create_stack_from(text, files, parameters, name)

    def delete_stack(self, stack_id, wait=True):
        """Delete a top stack; what stays is a record Heat answers by id
        with DELETE_COMPLETE (a list leaves it out, its name is free)."""
        with self._lock:
            top = self._stack(stack_id)
            actions.begin(self, top, 'DELETE')
            servers = resources.delete_tree(self, top, keep_top=True)
            self.save()
        actions.finish(self, top['id'], 'DELETE',
                       lambda: self._unprovision(servers), wait)


def top_template(package_dir, flavour):
    """The one top template of ``BaseHOT/<flavour>`` in the package."""
    folder = os.path.join(package_dir, 'BaseHOT', flavour)
    tops = sorted(f for f in os.listdir(folder)
                  if f.endswith(('.yaml', '.yml'))) \
        if os.path.isdir(folder) else []
    if len(tops) != 1:
        raise LabCloudError(reason='BaseHOT/%s must hold exactly one '
                            'top template, found %s'
                            % (flavour, tops or 'none'))
    return os.path.join(folder, tops[0])
