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
can serve it again (:meth:`LabCloud.load`).
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

from k8s_mgmt_lab import cloud_resources as resources
from k8s_mgmt_lab import cloud_volumes
from k8s_mgmt_lab.errors import InstanceNotReady
from k8s_mgmt_lab.errors import LabCloudError
from k8s_mgmt_lab import hot

LOG = logging.getLogger(__name__)

ServerSpec = collections.namedtuple('ServerSpec',
                                    'server_id name ip compute_host')
ScaleResult = collections.namedtuple(
    'ScaleResult', 'aspect_id scale_type stack_ids resource_names server_ids')

STATE_VERSION = 1
FIRST_HOST_OCTET = 10     # .1 is the host's bridge; leave room below .10
NETWORK_NAME = 'lab-net'


# A console_overrides value: the server exists but is not spawned yet, so
# os-getConsoleOutput answers 409 as Nova does.
NOT_READY = object()


now = resources.now


class LabCloud:
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
        with self._lock:
            text = json.dumps(self.state, indent=1)
        tmp = '%s.%d.tmp' % (self.state_file, os.getpid())
        with open(tmp, 'w') as handle:
            handle.write(text)
        os.replace(tmp, self.state_file)

    # --------------------------------------------------------------- queries
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
        """Copies of every stack (``nested``: the nested ones too)."""
        with self._lock:
            return [copy.deepcopy(s) for s in self.state['stacks'].values()
                    if nested or s['parent'] is None]

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
            with open(stack['template']) as handle:
                body = yaml.safe_load(handle)
            # YAML reads 2016-10-14 as a date; Heat returns the string.
            body['heat_template_version'] = str(body['heat_template_version'])
            return body

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
            if stack['name'] == ident:
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
        """Build a top stack from the package's BaseHOT/<flavour>; its id."""
        with self._lock:
            path = self._top_template(flavour)
            stack_name = name or 'vnf-%s' % uuid.uuid4()
            if any(s['name'] == stack_name
                   for s in self.state['stacks'].values()):
                raise LabCloudError(reason='stack %s exists' % stack_name)
            new_servers = []
            stack = self.build_stack(path, parameters, stack_name, None, None,
                                     None, new_servers)
            stack['flavour'] = flavour
            self.save()
        self._provision(stack['id'], new_servers)
        LOG.info('Lab stack %s (%s, flavour %s) created with %d servers',
                 stack_name, stack['id'], flavour, len(new_servers))
        return stack['id']

    def _top_template(self, flavour):
        return top_template(self.state['package_dir'], flavour)

    def build_stack(self, path, parameters, name, parent, parent_resource,
                    root, new_servers):
        """Create a stack (and its nested stacks) from a template file."""
        template = hot.load_template(path)
        values = hot.resolve_parameters(template, parameters)
        stack_id = str(uuid.uuid4())
        stack = {'id': stack_id, 'name': name, 'template': template.path,
                 'parameters': values, 'parent': parent,
                 'parent_resource': parent_resource, 'root': root or stack_id,
                 'status': 'CREATE_COMPLETE', 'creation_time': now(),
                 'updated_time': None, 'description': template.description,
                 'resources': {}}
        self.state['stacks'][stack_id] = stack
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
            resources.create(self, stack, res, template, new_servers)
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
            step = self._policy_adjustment(top, aspect_id, scale_type)
            target = group['data']['desired'] + step * steps
        return self.resize_group(top['id'], aspect_id, target, scale_type)

    def _policy_adjustment(self, top, aspect_id, scale_type):
        sign = 1 if scale_type == 'SCALE_OUT' else -1
        for res in top['resources'].values():
            props = res['properties']
            if (res['type'] == hot.SCALING_POLICY and
                    props.get('auto_scaling_group_id') ==
                    top['resources'][aspect_id]['physical_id'] and
                    int(props.get('scaling_adjustment', 0)) * sign > 0):
                return int(props['scaling_adjustment'])
        return sign

    def resize_group(self, stack_id, aspect_id, target, scale_type=None):
        with self._lock:
            top = self._stack(stack_id)
            group = top['resources'][aspect_id]
            data = group['data']
            if not data['min'] <= target <= data['max']:
                raise LabCloudError(
                    reason='%s: size %d is outside min_size %d .. max_size %d'
                           % (aspect_id, target, data['min'], data['max']))
            change = target - data['desired']
            new_servers, gone_servers = [], []
            if change > 0:
                members = [resources.add_member(self, top, group, new_servers)
                           for _ in range(change)]
            else:
                members = [resources.remove_member(self, top, group,
                                                   gone_servers)
                           for _ in range(-change)]
            data['desired'] = target
            group['status'] = 'UPDATE_COMPLETE'
            group['updated_time'] = top['updated_time'] = now()
            top['status'] = 'UPDATE_COMPLETE'
            self.save()
        self._unprovision(gone_servers)
        self._provision(top['id'], new_servers)
        return ScaleResult(aspect_id, scale_type or (
            'SCALE_OUT' if change > 0 else 'SCALE_IN'),
            [m['nested'] for m in members], [m['name'] for m in members],
            new_servers or gone_servers)

    def mark_unhealthy(self, stack_id, resource_name, unhealthy=True,
                       reason=''):
        with self._lock:
            stack = self._stack(stack_id)
            res = stack['resources'].get(resource_name)
            if res is None:
                raise LabCloudError(reason='stack %s has no resource %s'
                                    % (stack['name'], resource_name))
            res['status'] = 'CHECK_FAILED' if unhealthy else 'CHECK_COMPLETE'
            res['reason'] = reason or ('marked unhealthy' if unhealthy
                                       else 'marked healthy')
            res['updated_time'] = now()
            self.save()

    def replace_server(self, stack_id, server_id):
        """Heal one server: new id, same port (so same IP); its new id.
        Its volumes go to the new server; one marked unhealthy is first
        replaced by a new, empty volume."""
        with self._lock:
            top = self._stack(stack_id)
            root = top['root']
            _, res = self._find_physical(root, server_id, hot.SERVER)
            had = [volume['physical_id'] for volume, _ in
                   cloud_volumes.attached_to(self, server_id)]
            cloud_volumes.renew_unhealthy(self, res)
            new_id = resources.replace_server(self, root, res)
            self.save()
        self._unprovision([server_id], had)
        self._provision(root, [new_id])
        return new_id

    def update_stack(self, stack_id, parameters=None, existing=True):
        """Heat stack update: new parameters (desired_capacity changes resize
        groups) and every server marked unhealthy, or whose volume is, is
        replaced."""
        with self._lock:
            top = self._stack(stack_id)
            if top['parent'] is not None:
                raise LabCloudError(reason='update a top stack, not %s'
                                    % top['name'])
            given = dict(top['parameters']) if existing else {}
            given.update(parameters or {})
            template = hot.load_template(top['template'])
            top['parameters'] = hot.resolve_parameters(template, given)
            evaluator = self.evaluator(top, template)
            targets = {
                name: int(evaluator.evaluate(
                    template.resources[name]['properties']
                    ['desired_capacity']))
                for name, res in top['resources'].items()
                if res['type'] == hot.SCALING_GROUP}
            unhealthy = cloud_volumes.servers_to_replace(self, top['root'])
        results = [self.resize_group(top['id'], name, target)
                   for name, target in targets.items()
                   if target != top['resources'][name]['data']['desired']]
        for server_id in unhealthy:
            with self._lock:
                try:
                    self._find_physical(top['root'], server_id, hot.SERVER)
                except LabCloudError:
                    continue   # its member was removed by a scale-in above
            self.replace_server(top['id'], server_id)
        return results

    def recreate_stack(self, stack_id):
        """Whole-VNF heal: delete the stack and build it again; the new id."""
        with self._lock:
            top = self._stack(stack_id)
            flavour, name = top['flavour'], top['name']
            parameters = copy.deepcopy(top['parameters'])
        self.delete_stack(top['id'])
        return self.create_stack(flavour, parameters, name=name)

    def delete_stack(self, stack_id):
        with self._lock:
            top = self._stack(stack_id)
            servers = resources.delete_tree(self, top)
            self.save()
        self._unprovision(servers)


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
