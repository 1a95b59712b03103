"""Cinder volumes and their attachments in the lab cloud's model.

What Cinder and Nova answer about a volume: its ``attachments`` (server,
attachment id, device, host, time), ``status`` ``in-use`` or ``available``,
and the server's ``os-extended-volumes:volumes_attached``. Nova does not
honour the device name a template asks for: an attachment gets the
server's next free virtio disk (``vda`` is the root disk, so ``/dev/vdb``,
then ``/dev/vdc``, ...), as with libvirt. All functions run with the cloud's
lock held; the files and loop devices behind volumes are
:mod:`k8s_mgmt_lab.volumes`.
"""

import datetime
import string
import uuid

from k8s_mgmt_lab.errors import LabCloudError
from k8s_mgmt_lab import hot

DISK_LETTERS = string.ascii_lowercase[1:]    # vda is the root disk


def _now():
    # Heat's and Cinder's time format (cloud_resources.now, which imports
    # this module).
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def volume_data(res):
    props = res['properties']
    return {'name': props.get('name', res['name']),
            'size': int(props.get('size') or 1), 'attachments': []}


def all_volumes(cloud):
    """Every volume resource of the cloud, in every stack."""
    return [res for stack in cloud.state['stacks'].values()
            for res in stack['resources'].values()
            if res['type'] == hot.VOLUME]


def sizes(cloud):
    """{volume id: size in GiB} of every volume the cloud has."""
    return {res['physical_id']: res['data']['size']
            for res in all_volumes(cloud)}


def attached_to(cloud, server_id):
    """(volume resource, attachment) of every volume on the server."""
    return [(res, att) for res in all_volumes(cloud)
            for att in res['data']['attachments']
            if att['server_id'] == server_id]


def attach(cloud, root, volume_id, server_id):
    """Record an attachment on the server's next free virtio disk."""
    _, volume = cloud._find_physical(root, volume_id, hot.VOLUME)
    if volume['data']['attachments']:
        raise LabCloudError(reason='volume %s is already attached to '
                            'server %s' % (volume_id, volume['data'][
                                'attachments'][0]['server_id']))
    used = {att['device'] for _, att in attached_to(cloud, server_id)}
    device = next('/dev/vd' + c for c in DISK_LETTERS
                  if '/dev/vd' + c not in used)
    volume['data']['attachments'].append(_attachment(server_id, device))


def _attachment(server_id, device):
    return {'server_id': server_id, 'attachment_id': str(uuid.uuid4()),
            'device': device, 'attached_at': _now()}


def move_attachments(cloud, old_server_id, new_server_id):
    """The replacement server gets the old one's volumes on the same
    devices, each through a new attachment."""
    for res, att in attached_to(cloud, old_server_id):
        att.update(_attachment(new_server_id, att['device']))


def renew(res):
    """Heat replaces the volume: a new (empty) one with a new id."""
    res.update(physical_id=str(uuid.uuid4()), status='CREATE_COMPLETE',
               reason='state changed', creation_time=_now(),
               updated_time=_now())


def renew_unhealthy(cloud, server):
    """Heat's update of a server whose volume is marked unhealthy: the
    volume is replaced by a new, empty one, which the server's
    ``block_device_mapping_v2`` then names."""
    renamed = {}
    for volume, _ in attached_to(cloud, server['physical_id']):
        if volume['status'] == 'CHECK_FAILED':
            old = volume['physical_id']
            renew(volume)
            renamed[old] = volume['physical_id']
    for mapping in server['properties'].get('block_device_mapping_v2') or []:
        if isinstance(mapping, dict) and mapping.get('volume_id') in renamed:
            mapping['volume_id'] = renamed[mapping['volume_id']]
    return renamed


def servers_to_replace(cloud, root):
    """Server ids a stack update replaces: those marked unhealthy and
    those whose volume is (the volume is a property of the server)."""
    found = [res['physical_id'] for _, res in cloud._tree_resources(root)
             if res['type'] == hot.SERVER and res['status'] == 'CHECK_FAILED']
    for _, res in cloud._tree_resources(root):
        if res['type'] == hot.VOLUME and res['status'] == 'CHECK_FAILED':
            found += [att['server_id'] for att in res['data']['attachments']
                      if att['server_id'] not in found]
    return found


def volumes_attached(cloud, server_id):
    """Nova's ``os-extended-volumes:volumes_attached`` of a server."""
    return [{'id': res['physical_id'], 'delete_on_termination': False}
            for res, _ in attached_to(cloud, server_id)]


def show(res, host_of):
    """Cinder's volume show; ``host_of(server_id)`` is its compute host."""
    data = res['data']
    attachments = [dict(att, id=res['physical_id'],
                        volume_id=res['physical_id'],
                        host_name=host_of(att['server_id']))
                   for att in data['attachments']]
    return {'id': res['physical_id'], 'name': data['name'],
            'size': data['size'], 'attachments': attachments,
            'status': 'in-use' if attachments else 'available',
            'multiattach': False, 'volume_type': 'lab',
            'bootable': 'false', 'created_at': res['creation_time']}


# -- the backend (files, loop devices): called without the cloud's lock --

def provide(cloud, server_ids):
    """Give every volume its file, then attach the volumes of the new
    servers (their VMs are up) to their VMs."""
    if cloud.volumes is None:
        return
    with cloud._lock:
        wanted = sizes(cloud)
        plan = [(res['physical_id'], sid, att['device'])
                for sid in server_ids for res, att in attached_to(cloud, sid)]
    for volume_id, size in sorted(wanted.items()):
        cloud.volumes.ensure(volume_id, size)
    for volume_id, server_id, device in plan:
        cloud.volumes.attach(volume_id, server_id, device)


def release(cloud, volume_ids):
    """After servers went: free the loop devices of the volumes they had,
    and delete the files of volumes the cloud no longer has."""
    if cloud.volumes is None:
        return
    for volume_id in volume_ids:
        cloud.volumes.detach(volume_id)
    with cloud._lock:
        kept = set(sizes(cloud))
    for volume_id in sorted(cloud.volumes.volume_ids() - kept):
        cloud.volumes.delete(volume_id)
