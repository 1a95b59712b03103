"""heal_start of a storage server (or the registry VM) that keeps its
volume: free the volume.

Heat replaces the server by creating the new one (its block device
mapping naming the same volume) before it deletes the old one, and Nova
refuses a volume that is still in use. So, once the PVs are gone::

    Probe the storage server to heal      (a dead VM answers nothing)
    Stop the NFS server and unmount the volume on <storage>
                                          (when it answers: nothing half
                                           written is left in its cache)
    Detach the volume from <storage> and wait until it is available
                                          (Nova, then Cinder: volume_detach)

The registry VM's heal is the same with docker-registry in place of the
NFS server (:data:`REGISTRY`).

A heal that recreates the volume needs none of it: Heat gives the new
server a new volume and deletes the old one with the old server.
"""

import dataclasses

from k8s_mgmt import exceptions
from k8s_mgmt import ssh
from k8s_mgmt import volume_detach
from k8s_mgmt.engine import phases
from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.ssh import client as ssh_client
from k8s_mgmt.topology import heat

Phase = phases.Phase


@dataclasses.dataclass(frozen=True)
class VolumeServer:
    """A VM whose service keeps its data on Cinder volumes."""

    what: str          # the VM, as a message names it
    service: str       # its service, likewise
    unit: str          # the systemd unit to stop

    @property
    def stop(self):
        return ssh.Command('systemctl', 'stop', self.unit).sudo()

    @property
    def step_stop(self):
        return 'stop the %s' % self.service


NFS = VolumeServer('storage server', 'NFS server', 'nfs-kernel-server')
REGISTRY = VolumeServer('registry VM', 'registry', 'docker-registry')


def server_of(params):
    """(VolumeServer, its CinderVolumeSetup list) of a request."""
    if params.is_registry:
        return REGISTRY, params.registry.cinder_volume_setup_params
    return NFS, params.storage_server.cinder_volume_setup_params


STOP_NFS = NFS.stop
# systemctl's exit status for a unit it does not know: the set-up never
# installed the server, so there is nothing to stop.
UNIT_NOT_FOUND = 5
RECREATED = ('the volume is recreated: Heat deletes the old one with the '
             'old server')


def title_probe(server):
    return 'Probe the %s to heal' % server.what


def title_release(node, server=NFS):
    return 'Stop the %s and unmount the volume on %s' % (server.service,
                                                         node.name)


def title_detach(node):
    return ('Detach the volume from %s and wait until it is available'
            % node.name)


def mounted_command(path):
    return ssh.Command('findmnt', '-rn', '-o', 'TARGET', '--mountpoint', path)


def unmount_command(path):
    return ssh.Command('umount', path).sudo()


def kept_volumes(params, topology, node):
    """The request's volumes of the storage server (or registry VM)
    ``node``, from Heat: each attached to it, or to nothing (a re-run
    after the detach). TopologyError, before anything changes, for one
    missing or held by another server."""
    by_name = {v.resource_name: v for v in topology.volumes}
    found, problems = [], []
    server, setups = server_of(params)
    for setup in setups:
        volume = by_name.get(setup.volume_resource_id)
        if volume is None or not volume.volume_id:
            problems.append('no volume resource %s'
                            % setup.volume_resource_id)
        elif volume.server_id not in (None, node.server_id):
            problems.append('volume %s (%s) is attached to server %s, not '
                            'to the %s %s (%s)' % (
                                setup.volume_resource_id, volume.volume_id,
                                volume.server_id, server.what, node.name,
                                node.server_id))
        else:
            found.append((setup.mount_to, volume))
    if problems:
        raise exceptions.TopologyError(
            reason='stack %s: %s' % (topology.stack_id, '; '.join(problems)))
    return tuple(found)


def release(op, node, mounts, server=NFS):
    """Stop the server's service, then unmount each of ``mounts`` still
    mounted; a line saying what was done."""
    session = op.session(node.name)
    stop = session.run(server.stop, step=server.step_stop, check=False,
                       timeout=120)
    if not stop.ok and stop.status != UNIT_NOT_FOUND:
        raise exceptions.RemoteCommandError(
            node=node.name, step=server.step_stop, status=stop.status,
            stderr=ssh_client.stderr_tail(stop.stderr))
    unmounted = []
    for path in mounts:
        found = session.run(mounted_command(path), step='find %s' % path,
                            check=False, timeout=60)
        if found.ok and found.stdout.strip():
            session.run(unmount_command(path), step='unmount %s' % path,
                        timeout=120)
            unmounted.append(path)
    return '%s %s; unmounted: %s' % (
        server.service[0].upper() + server.service[1:],
        'not installed' if stop.status == UNIT_NOT_FOUND else 'stopped',
        ', '.join(unmounted) or 'nothing (none was mounted)')


def _vim_session(op, node, volumes):
    """(session, region) of the VIM holding the stack."""
    try:
        vim_info = op.ctx.vim_info
        if vim_info is None:
            vim_info = heat.vim_info_for_instance(op.ctx.tacker_context,
                                                  op.ctx.vnf_instance)
        return heat.session_for_vim(vim_info)
    except Exception as err:  # no Tacker, no VIM: say so, for these volumes
        raise volume_detach.VolumeDetachError(
            node=node.name, step='reach the VIM',
            volume_id=', '.join(v.volume_id for v in volumes),
            reason='%s: %s' % (type(err).__name__, err))


def detach(op, node, volumes):
    """Each volume detached from the old server and available."""
    session, region = _vim_session(op, node, volumes)
    return [volume_detach.detach_and_wait(session, region, node.name,
                                          node.server_id, volume.volume_id)
            for volume in volumes]


def release_work(node, mounts, server=NFS):
    work = [phases.command_work(node.name, server.stop)]
    for path in mounts:
        work.append(phases.Work(node.name, 'ssh', '%s  (when %s)' % (
            unmount_command(path).display(),
            mounted_command(path).display())))
    return tuple(work)


def detach_work(node, volumes):
    work = []
    for volume in volumes:
        work.append(phases.api_work(
            'DELETE /servers/%s/os-volume_attachments/%s (when it is in-use '
            'there)' % (node.server_id, volume.volume_id), kind='nova'))
        work.append(phases.api_work(
            'GET /volumes/%s until available' % volume.volume_id,
            kind='cinder'))
    return tuple(work)


def free_volume_phases(op, node, volumes):
    """The phases that free the kept ``volumes`` (from
    :func:`kept_volumes`; None when the heal recreates them)."""
    server, _setups = server_of(op.params)
    if volumes is None:
        yield phases.skipped(title_release(node, server), RECREATED)
        yield phases.skipped(title_detach(node), RECREATED)
        return
    mounts = tuple(mount for mount, _volume in volumes)
    attached = tuple(volume for _mount, volume in volumes)
    reachable = yield node_work.probe_phase(op, title_probe(server), [node])
    if node.name in reachable:
        yield Phase(title_release(node, server), nodes=(node.name,),
                    work=release_work(node, mounts, server),
                    action=lambda: release(op, node, mounts, server),
                    assume='%s stopped; unmounted: %s'
                    % (server.service, ', '.join(mounts)))
    else:
        yield phases.skipped(title_release(node, server),
                             '%s does not answer SSH' % node.name)
    yield Phase(title_detach(node), nodes=(node.name,),
                work=detach_work(node, attached),
                action=lambda: detach(op, node, attached),
                assume=['volume %s: detached' % v.volume_id
                        for v in attached])
