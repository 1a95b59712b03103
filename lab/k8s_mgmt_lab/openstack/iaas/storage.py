"""Volumes: Cinder's records and the state machine Nova drives.

A volume is ``creating`` until the backend's ``ensure`` made its disk,
then ``available``; an attach reserves it (``attaching``, an attachment
naming the server) and makes it ``in-use`` once the backend showed it to
the server's VM; a detach makes it ``detaching``, then ``available``
again. Slow backend work runs as a job (a thread, or inline in tests).
"""

import logging
import threading

from k8s_mgmt_lab.openstack.iaas import model

LOG = logging.getLogger(__name__)
DEFAULT_TYPE = 'lvmdriver-1'
DELETABLE = ('available', 'error', 'error_restoring', 'error_extending')
# Cinder features the lab does not imitate: asking for one is a 501.
UNSUPPORTED_SOURCES = ('imageRef', 'snapshot_id', 'source_volid',
                       'backup_id', 'consistencygroup_id', 'group_id')


def in_thread(work, name):
    """Run ``work`` in a daemon thread; the thread, to join."""
    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    return thread


class Volumes(object):

    def __init__(self, state, backend=None, run=in_thread):
        self.state = state
        self.backend = backend
        self.run = run

    def create(self, body, project_id=''):
        asked = [key for key in UNSUPPORTED_SOURCES if body.get(key)]
        if asked:
            raise model.Unsupported('The lab makes blank volumes only, not '
                                    'from %s.' % ', '.join(asked))
        try:
            size = int(body.get('size'))
        except (TypeError, ValueError):
            size = 0
        if size < 1:
            raise model.BadRequest('Invalid input received: volume size %r '
                                   'must be an integer >= 1.'
                                   % (body.get('size'),))
        zone = body.get('availability_zone') or model.ZONE
        if zone != model.ZONE:
            raise model.BadRequest('Availability zone %r is invalid.' % zone)
        volume = {
            'id': model.new_id(), 'name': body.get('name') or '',
            'description': body.get('description') or '', 'size': size,
            'status': 'creating',
            'volume_type': body.get('volume_type') or DEFAULT_TYPE,
            'availability_zone': zone,
            'metadata': dict(body.get('metadata') or {}),
            'attachments': [], 'bootable': 'false',
            'project_id': project_id, 'created_at': model.now(),
            'updated_at': model.now()}
        with self.state.lock:
            self.state.records('volumes')[volume['id']] = volume
            self.state.save()
        self.run(lambda: self._make(volume['id'], size),
                 'volume-create-' + volume['id'])
        return volume

    def _make(self, volume_id, size):
        try:
            if self.backend:
                self.backend.ensure(volume_id, size)
            status = 'available'
        except Exception:
            LOG.exception('volume %s: the backend could not make it',
                          volume_id)
            status = 'error'
        self._set_status(volume_id, status)

    def delete(self, volume_id):
        with self.state.lock:
            volume = self.state.get('volumes', volume_id, 'Volume')
            if volume['status'] == 'deleting':
                return
            if volume['status'] not in DELETABLE or volume['attachments']:
                raise model.BadRequest(
                    'Invalid volume: Volume status must be available or '
                    'error and must not be attached, but it is %s.'
                    % volume['status'])
            volume['status'] = 'deleting'
            self.state.save()
        self.run(lambda: self._remove(volume_id),
                 'volume-delete-' + volume_id)

    def _remove(self, volume_id):
        try:
            if self.backend:
                self.backend.delete(volume_id)
        except Exception:
            LOG.exception('volume %s: the backend could not delete it',
                          volume_id)
            self._set_status(volume_id, 'error_deleting')
            return
        with self.state.lock:
            self.state.records('volumes').pop(volume_id, None)
            self.state.save()

    def _set_status(self, volume_id, status):
        with self.state.lock:
            volume = self.state.records('volumes').get(volume_id)
            if volume is not None:
                volume['status'] = status
                volume['updated_at'] = model.now()
                self.state.save()

    # What Nova drives: reserve, connect, disconnect, release.

    def next_device(self, server_id):
        used = {a['device'] for _v, a in self.state.attachments_of(
            server_id)}
        for letter in 'bcdefghijklmnopqrstuvwxyz':
            if '/dev/vd' + letter not in used:
                return '/dev/vd' + letter
        raise model.BadRequest('Server %s has no free device name left.'
                               % server_id)

    def reserve(self, volume_id, server_id, device=None,
                delete_on_termination=False):
        """The attachment of the volume to the server, the volume now
        ``attaching``; under the state's lock, by the caller."""
        volume = self.state.get('volumes', volume_id, 'Volume')
        if volume['status'] != 'available':
            raise model.BadRequest(
                'Invalid volume: volume %s status must be available, but '
                'it is %s.' % (volume_id, volume['status']))
        if device and not device.startswith('/dev/'):
            device = '/dev/' + device
        attachment = {
            'id': model.new_id(), 'attachment_id': model.new_id(),
            'server_id': server_id, 'volume_id': volume_id,
            'device': device or self.next_device(server_id),
            'host_name': None, 'attached_at': None,
            'delete_on_termination': bool(delete_on_termination)}
        volume['attachments'].append(attachment)
        volume['status'] = 'attaching'
        return attachment

    def connect(self, volume_id, server_id):
        """Show the reserved volume to the server's VM: ``in-use``. A
        server deleted meanwhile released the attachment: the backend
        takes the volume back and its status stays as the release left
        it, so no volume is ``in-use`` without an attachment."""
        attachment = self._attachment(volume_id, server_id)
        if self.backend:
            self.backend.attach(volume_id, server_id, attachment['device'])
        with self.state.lock:
            if self.holds(volume_id, attachment):
                attachment['attached_at'] = model.now()
                self._set_status(volume_id, 'in-use')
                return
        LOG.warning('volume %s: server %s was deleted while it attached',
                    volume_id, server_id)
        if self.backend:
            self.backend.detach(volume_id, server_id, attachment['device'])

    def holds(self, volume_id, attachment):
        """Whether the attachment is still the volume's; under the lock."""
        volume = self.state.records('volumes').get(volume_id)
        return volume is not None and any(
            a is attachment for a in volume['attachments'])

    def disconnect(self, volume_id, server_id, guest_gone=False):
        """Take the volume from the server's VM (the record stays); from
        a server whose guest is ``guest_gone`` (deleted), only its
        backend's connection is undone."""
        attachment = self._attachment(volume_id, server_id)
        self._set_status(volume_id, 'detaching')
        if self.backend:
            if guest_gone:
                self.backend.detach(volume_id)
            else:
                self.backend.detach(volume_id, server_id,
                                    attachment['device'])

    def detach_failed(self, volume_id, server_id):
        """``in-use`` again after a detach the backend refused, unless a
        server delete released the attachment meanwhile."""
        with self.state.lock:
            volume = self.state.records('volumes').get(volume_id)
            if volume and any(a['server_id'] == server_id
                              for a in volume['attachments']):
                self._set_status(volume_id, 'in-use')

    def release(self, volume_id, server_id):
        """Drop the attachment record: ``available`` again; under the
        state's lock, by the caller. The attachment, or None."""
        volume = self.state.records('volumes').get(volume_id)
        if volume is None:
            return None
        for attachment in list(volume['attachments']):
            if attachment['server_id'] == server_id:
                volume['attachments'].remove(attachment)
                volume['status'] = ('in-use' if volume['attachments']
                                    else 'available')
                volume['updated_at'] = model.now()
                return attachment
        return None

    def _attachment(self, volume_id, server_id):
        with self.state.lock:
            volume = self.state.get('volumes', volume_id, 'Volume')
            for attachment in volume['attachments']:
                if attachment['server_id'] == server_id:
                    return attachment
        raise model.NotFound('Volume %s is not attached to server %s.'
                             % (volume_id, server_id))
