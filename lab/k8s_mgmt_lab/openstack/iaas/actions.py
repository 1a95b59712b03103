"""What Nova does to a server that exists: interfaces attached and
detached, volumes attached and detached, its console read; and server
groups, which only the scheduler reads.

A detached interface leaves the server's ``addresses`` in the same step
as the port's ``device_id`` is cleared (both are one binding in the
state), which is what Heat waits for when it moves a port to a
replacement server.
"""

import logging

from k8s_mgmt_lab.openstack.iaas import model
from k8s_mgmt_lab.openstack.iaas import scheduler

LOG = logging.getLogger(__name__)
RUNNING = ('ACTIVE',)


class ServerActions(object):

    def __init__(self, compute):
        self.compute = compute
        self.state = compute.state
        self.ports = compute.ports
        self.volumes = compute.volumes

    def _running(self, server_id, action):
        server = self.state.get('servers', server_id)
        if server['status'] not in RUNNING or server['task_state']:
            raise model.Conflict(
                "Cannot '%s' instance %s while it is in vm_state %s"
                % (action, server_id, server['vm_state']))
        return server

    # Interfaces.

    def attach_interface(self, server_id, request, caller):
        """Bind a port (given, or made on the network) to the server. A
        provisioner that cannot hot-plug a NIC makes this a 501: the VM
        would not get the address the API shows."""
        provisioner = self.compute.provisioner
        if provisioner is not None and not hasattr(provisioner,
                                                   'attach_interface'):
            raise model.Unsupported('The lab provisioner cannot hot-plug '
                                    'an interface into a running VM.')
        with self.state.lock:
            server = self._running(server_id, 'attach_interface')
            if request.get('port_id'):
                port = self.state.get('ports', request['port_id'], 'Port')
                if port['device_id']:
                    raise model.Conflict('Port %s is still in use.'
                                         % port['id'], kind='PortInUse')
            else:
                network = self.state.get('networks', request.get('net_id')
                                         or self.state.network()['id'],
                                         'Network')
                fixed = request.get('fixed_ips')
                port = self.ports.create({'network_id': network['id'],
                                          'fixed_ips': fixed},
                                         caller.project_id)
                port['made_by_nova'] = True
            self.ports.bind(port, server)
            self.state.save()
        if provisioner is not None:
            try:
                provisioner.attach_interface(server_id, port['id'],
                                             port['mac_address'])
            except Exception:
                self._unbind(port)      # the VM did not get it
                raise
        return port

    def _unbind(self, port):
        with self.state.lock:
            self.ports.unbind(port)
            if port.get('made_by_nova'):
                self.state.records('ports').pop(port['id'], None)
            self.state.save()

    def detach_interface(self, server_id, port_id):
        """Unbind the port: gone from ``addresses`` and ``device_id`` at
        once, and unplugged from the VM by a provisioner that can
        (``detach_interface(server_id, port_id, ip)``), so the address is
        free for the server that takes the port next: Heat replacing a
        server detaches its ports before it creates the new one on them,
        and deletes the old server only after."""
        with self.state.lock:
            self.state.get('servers', server_id)
            port = self.state.get('ports', port_id, 'Port')
            if port['device_id'] != server_id:
                raise model.NotFound('Port %s is not attached' % port_id)
            self._unbind(port)
            ip = port['fixed_ips'][0]['ip_address'] if port['fixed_ips'] \
                else None
        unplug = getattr(self.compute.provisioner, 'detach_interface', None)
        if unplug is not None:
            unplug(server_id, port_id, ip)

    # Volumes.

    def attach_volume(self, server_id, volume_id, device=None):
        """Reserve the volume now and connect it in a job: ``attaching``,
        then ``in-use``; back to ``available`` if the backend failed."""
        with self.state.lock:
            self._running(server_id, 'attach_volume')
            attachment = self.volumes.reserve(volume_id, server_id, device)
            self.state.save()
        self.compute.run(lambda: self._connect(volume_id, server_id),
                         'attach-' + volume_id)
        return attachment

    def _connect(self, volume_id, server_id):
        try:
            self.volumes.connect(volume_id, server_id)
        except Exception:
            LOG.exception('volume %s: attaching it to server %s failed',
                          volume_id, server_id)
            with self.state.lock:
                self.volumes.release(volume_id, server_id)
                self.state.save()

    def detach_volume(self, server_id, volume_id):
        with self.state.lock:
            server = self.state.get('servers', server_id)
            if server['task_state'] == 'deleting':
                # Its deletion detaches the volume itself.
                raise model.Conflict(
                    "Cannot 'detach_volume' instance %s while it is in "
                    "task_state deleting" % server_id)
            volume = self.state.get('volumes', volume_id, 'Volume')
            if not any(a['server_id'] == server_id
                       for a in volume['attachments']):
                raise model.NotFound('volume_id not found: %s' % volume_id)
            if volume['status'] != 'in-use':
                raise model.Conflict('Volume %s is %s, not in-use.'
                                     % (volume_id, volume['status']))
            volume['status'] = 'detaching'
            self.state.save()
        self.compute.run(lambda: self._disconnect(volume_id, server_id),
                         'detach-' + volume_id)

    def _disconnect(self, volume_id, server_id):
        try:
            self.volumes.disconnect(volume_id, server_id)
        except Exception:
            LOG.exception('volume %s: detaching it from server %s failed',
                          volume_id, server_id)
            self.volumes.detach_failed(volume_id, server_id)
            return
        with self.state.lock:
            self.volumes.release(volume_id, server_id)
            self.state.save()

    # Console.

    def console_output(self, server_id, length=None):
        with self.state.lock:
            self._running(server_id, 'get_console_output')
        if self.compute.provisioner is None:
            raise model.Unsupported('The lab has no provisioner, so no '
                                    'server has a console.')
        text = self.compute.provisioner.console_output(server_id) or ''
        if length is not None and int(length) >= 0:
            text = '\n'.join(text.splitlines()[-int(length):]) \
                if int(length) else ''
        return text

    # Server groups.

    def create_group(self, name, policy, rules, caller):
        if policy not in scheduler.POLICIES:
            raise model.BadRequest('Invalid input: policy %r is not one of '
                                   '%s.' % (policy,
                                            ', '.join(scheduler.POLICIES)))
        if not name:
            raise model.BadRequest('Invalid input: a server group needs a '
                                   'name.')
        group = {'id': model.new_id(), 'name': name, 'policy': policy,
                 'rules': dict(rules or {}), 'metadata': {},
                 'project_id': caller.project_id, 'user_id': caller.user_id}
        with self.state.lock:
            self.state.records('server_groups')[group['id']] = group
            self.state.save()
        return group

    def delete_group(self, group_id):
        with self.state.lock:
            self.state.get('server_groups', group_id, 'Instance group')
            del self.state.records('server_groups')[group_id]
            for server in self.state.group_members(group_id):
                server['group_id'] = None
            self.state.save()
