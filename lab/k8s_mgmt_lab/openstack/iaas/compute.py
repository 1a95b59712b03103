"""Servers: scheduled onto a compute host, given their ports and boot
volumes at once, then built by the provisioner in a job (``BUILD`` until
it returns, ``ACTIVE`` after, ``ERROR`` with a fault if it raised), and
deleted by it in a job (``task_state`` ``deleting`` meanwhile, then
gone). Ports a server made itself go with it; ports given to it are
unbound; its volumes are detached, as Nova does.

The provisioner is ``create_servers([ServerSpec])``,
``delete_servers([server_id])`` and ``console_output(server_id)``, as
:class:`k8s_mgmt_lab.manager.VMProvisioner`; None means no VMs.
"""

import collections
import logging

from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import scheduler
from k8s_mgmt_lab.openstack.iaas import storage

LOG = logging.getLogger(__name__)

ServerSpec = collections.namedtuple('ServerSpec',
                                    'server_id name ip compute_host')


class Compute(object):

    def __init__(self, state, ports, volumes, provisioner=None,
                 run=storage.in_thread):
        self.state = state
        self.ports = ports
        self.volumes = volumes
        self.provisioner = provisioner
        self.run = run
        self._builds = {}   # server id -> its build job, to wait for

    def create(self, request, caller, hints=None):
        """A server from Nova's request (the ``server`` object), scheduled
        and its build started; ERROR at once when no host fits."""
        state = self.state
        with state.lock:
            server = self._new_record(request, caller, hints or {})
            networks, mappings = self._checked(request)
            state.records('servers')[server['id']] = server
            try:
                server['host'] = self._schedule(server)
            except scheduler.NoValidHost as failed:
                self._fail(server, failed.message)
                state.save()
                return server
            try:
                self._attach_networks(server, networks, caller)
                for mapping in mappings:
                    self.volumes.reserve(
                        mapping['uuid'], server['id'],
                        mapping.get('device_name'),
                        mapping.get('delete_on_termination', False))
            except model.IaasError:
                self._forget(server['id'])
                raise
            state.save()
            # Known before the lock is let go, so a DELETE can wait for it.
            self._builds[server['id']] = self.run(
                lambda: self._build(server['id']), 'build-' + server['id'])
        return server

    def _new_record(self, request, caller, hints):
        state = self.state
        if not request.get('name'):
            raise model.BadRequest('Invalid input: a server needs a name.')
        if (request.get('min_count') or 1) != 1 or \
                (request.get('max_count') or 1) != 1:
            raise model.Unsupported('The lab makes one server a request.')
        flavor = state.get('flavors', _last(request.get('flavorRef')),
                           'Flavor')
        image_ref = _last(request.get('imageRef'))
        if image_ref:
            state.get('images', image_ref, 'Image')
        zone = request.get('availability_zone') or model.ZONE
        if zone != model.ZONE:
            raise model.BadRequest('The requested availability zone is '
                                   'not available')
        group_id = hints.get('group')
        if group_id:
            state.get('server_groups', group_id, 'Server group')
        stamp = model.now()
        return {
            'id': model.new_id(), 'name': request['name'],
            'image_id': image_ref or '', 'flavor_id': flavor['id'],
            'status': 'BUILD', 'vm_state': 'building',
            'task_state': 'scheduling', 'power_state': 0, 'host': None,
            'zone': zone, 'group_id': group_id,
            'user_data': request.get('user_data'),
            'metadata': dict(request.get('metadata') or {}),
            'key_name': request.get('key_name'), 'fault': None,
            'port_ids': [], 'tenant_id': caller.project_id,
            'user_id': caller.user_id, 'created': stamp, 'updated': stamp,
            'launched_at': None, 'spawned': False}

    def _checked(self, request):
        """The networks and volume mappings, every one checked before
        anything changes."""
        networks = request.get('networks') or []
        if networks == 'none':
            networks = []
        elif networks == 'auto':
            networks = [{'uuid': self.state.network()['id']}]
        mapped = request.get('block_device_mapping_v2') or []
        if not _objects(networks) or not _objects(mapped):
            raise model.BadRequest('Invalid input: networks and '
                                   'block_device_mapping_v2 are lists of '
                                   'objects.')
        for wanted in networks:
            if wanted.get('port'):
                port = self.state.get('ports', wanted['port'], 'Port')
                if port['device_id']:
                    raise model.Conflict('Port %s is still in use.'
                                         % port['id'])
            elif wanted.get('uuid'):
                self.state.get('networks', wanted['uuid'], 'Network')
            else:
                raise model.BadRequest('A network needs a port or a uuid.')
        mappings = []
        for mapping in mapped:
            if mapping.get('source_type') == 'image' and \
                    mapping.get('destination_type', 'local') == 'local':
                continue    # the image the VM boots from: the provisioner's
            if mapping.get('source_type') != 'volume' or \
                    mapping.get('destination_type') != 'volume':
                raise model.Unsupported(
                    'The lab maps existing volumes only, not %s to %s.' % (
                        mapping.get('source_type'),
                        mapping.get('destination_type')))
            volume = self.state.get('volumes', mapping.get('uuid'), 'Volume')
            if volume['status'] != 'available':
                raise model.BadRequest('Invalid volume: volume %s is %s.'
                                       % (volume['id'], volume['status']))
            mappings.append(mapping)
        return networks, mappings

    def _schedule(self, server):
        state = self.state
        load = collections.Counter(
            s['host'] for s in state.records('servers').values()
            if s['host'])
        policy, member_hosts = None, []
        if server['group_id']:
            group = state.get('server_groups', server['group_id'])
            policy = group['policy']
            member_hosts = [s['host'] for s in state.group_members(
                group['id']) if s['host'] and s['id'] != server['id']]
        return scheduler.choose_host(state.hosts, load, policy, member_hosts)

    def _attach_networks(self, server, networks, caller):
        for wanted in networks:
            if wanted.get('port'):
                port = self.state.get('ports', wanted['port'], 'Port')
            else:
                fixed = ([{'ip_address': wanted['fixed_ip']}]
                         if wanted.get('fixed_ip') else None)
                port = self.ports.create({'network_id': wanted['uuid'],
                                          'fixed_ips': fixed},
                                         caller.project_id)
                port['made_by_nova'] = True
            self.ports.bind(port, server)

    def _build(self, server_id):
        with self.state.lock:
            server = self.state.get('servers', server_id)
            if server['task_state'] == 'scheduling':
                server['task_state'] = 'spawning'
            server['spawned'] = True    # the provisioner may hold a VM now
            ports = self.state.server_ports(server_id)
            ip = ports[0]['fixed_ips'][0]['ip_address'] if ports else None
            spec = ServerSpec(server_id, server['name'], ip, server['host'])
            mapped = [v['id'] for v, _a in self.state.attachments_of(
                server_id)]
        try:
            if self.provisioner:
                self.provisioner.create_servers([spec])
            for volume_id in mapped:
                self.volumes.connect(volume_id, server_id)
        except Exception as failed:
            LOG.exception('server %s: the build failed', server_id)
            with self.state.lock:
                for volume_id in mapped:
                    self.volumes.release(volume_id, server_id)
                self._fail(server, '%s: %s' % (type(failed).__name__,
                                               failed))
                self.state.save()
            return
        with self.state.lock:
            server.update(status='ACTIVE', vm_state='active', power_state=1,
                          launched_at=model.now(), updated=model.now())
            if server['task_state'] != 'deleting':
                server['task_state'] = None
            self.state.save()

    def _fail(self, server, message):
        """ERROR with a fault; a delete under way stays so, or a second
        DELETE would start a second deletion."""
        deleting = server['task_state'] == 'deleting'
        server.update(status='ERROR', vm_state='error',
                      task_state='deleting' if deleting else None,
                      updated=model.now(),
                      fault={'message': message, 'code': 500,
                             'created': model.now()})

    def delete(self, server_id):
        """Start the deletion (the job, to join); a second delete while it
        runs is a no-op."""
        with self.state.lock:
            server = self.state.get('servers', server_id)
            if server['task_state'] == 'deleting':
                return
            server['task_state'] = 'deleting'
            server['updated'] = model.now()
            self.state.save()
        build = self._builds.pop(server_id, None)
        return self.run(lambda: self._delete(server_id, build),
                        'delete-' + server_id)

    def _delete(self, server_id, build):
        if build is not None:
            build.join()
        with self.state.lock:
            attached = [(v['id'], v['status']) for v, _a in
                        self.state.attachments_of(server_id)]
            spawned = self.state.get('servers', server_id).get('spawned')
        try:
            # The guest goes first, then its volumes, as Nova destroys the
            # instance before it terminates the volume connections: a disk
            # the guest still had mounted is free once the guest is gone.
            if self.provisioner and spawned:
                self.provisioner.delete_servers([server_id])
            for volume_id, status in attached:
                if status == 'in-use':
                    self.volumes.disconnect(volume_id, server_id,
                                            guest_gone=True)
        except Exception as failed:
            LOG.exception('server %s: the deletion failed', server_id)
            with self.state.lock:
                server = self.state.get('servers', server_id)
                self._fail(server, '%s: %s' % (type(failed).__name__,
                                               failed))
                server['task_state'] = None     # a new DELETE may retry
                self.state.save()
            return
        with self.state.lock:
            self._forget(server_id)
            self.state.save()

    def _forget(self, server_id):
        state = self.state
        for port in state.server_ports(server_id):
            if port.get('made_by_nova'):
                self.ports.unbind(port)
                del state.records('ports')[port['id']]
            else:
                self.ports.unbind(port)
        for volume, _a in state.attachments_of(server_id):
            attachment = self.volumes.release(volume['id'], server_id)
            if attachment and attachment['delete_on_termination'] and \
                    attachment['attached_at']:
                self.volumes.delete(volume['id'])
        del state.records('servers')[server_id]


def _last(reference):
    """An id from an id or a link (``.../flavors/3``)."""
    return (reference or '').rstrip('/').rsplit('/', 1)[-1]


def _objects(value):
    return isinstance(value, list) and all(isinstance(v, dict)
                                           for v in value)
