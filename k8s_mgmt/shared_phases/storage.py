"""The storage server, the NFS clients and the PersistentVolumes as phases.

With ``storage_server`` in the request, instantiate (and the whole-VNF
heal, which runs instantiate's phases on the new VMs) adds::

    Initialise the first master ..., set up the storage server and the
    NFS clients              (kubeadm init, setup_storage.sh server and
                              client on every other node: all at once)
    ...
    Register the PersistentVolumes
    Wait until the PersistentVolumes are Available

Every join (scale-out, heal of a master or a worker) installs the NFS
client right after the node joined. Healing the storage server VNFC::

    heal_start: Check that no PersistentVolume is in use (refused, naming
                PV, claim and pods, when one is), Delete the
                PersistentVolumes; a kept volume is then unmounted on the
                old server and detached from it (storage_release.py)
    heal_end:   Connect, Upload, Set up the storage server, Register the
                PersistentVolumes (with the new server address), Wait ...

Whether the volume is formatted is decided on the VM by the script, right
before ``mkfs``: only a volume with no signature at all is formatted, so a
volume Tacker kept across the heal is mounted with its files.
"""

from k8s_mgmt import exceptions
from k8s_mgmt.engine import phases
from k8s_mgmt.engine import scripts
from k8s_mgmt.kube import volumes as volumes_api
from k8s_mgmt.params import pv_manifests
from k8s_mgmt.shared_phases import node_work

Phase = phases.Phase

TITLE_REGISTER = 'Register the PersistentVolumes'
TITLE_AVAILABLE = 'Wait until the PersistentVolumes are Available'
TITLE_CHECK = 'Check that no PersistentVolume is in use'
TITLE_DELETE = 'Delete the PersistentVolumes'


def enabled(params):
    return params.storage_server is not None


def title_server(node):
    return 'Set up the storage server (%s)' % node.name


def storage_node(topology):
    """The storage server's node; TopologyError when the stack has none."""
    if len(topology.storage) != 1:
        raise exceptions.TopologyError(
            reason='stack %s has %d storage server(s); storage_server needs '
                   'exactly one' % (topology.stack_id, len(topology.storage)))
    return topology.storage[0]


def attached_volumes(params, topology, node):
    """{volume_resource_id: Volume} of the request's Cinder volumes, each
    checked to be attached to the storage server ``node``."""
    by_name = {v.resource_name: v for v in topology.volumes}
    found, problems = {}, []
    for setup in params.storage_server.cinder_volume_setup_params:
        volume = by_name.get(setup.volume_resource_id)
        if volume is None:
            problems.append('no volume resource %s' % setup.volume_resource_id)
        elif volume.server_id != node.server_id:
            problems.append('volume %s (%s) is attached to %s, not to the '
                            'storage server %s (%s)' % (
                                setup.volume_resource_id, volume.volume_id,
                                volume.server_id or 'no server', node.name,
                                node.server_id))
        else:
            found[setup.volume_resource_id] = volume
    if problems:
        raise exceptions.TopologyError(
            reason='stack %s: %s' % (topology.stack_id, '; '.join(problems)))
    return found


def server_call(op, topology):
    node = storage_node(topology)
    return node, scripts.storage_server_call(
        node, op.params, attached_volumes(op.params, topology, node))


TITLE_ALONGSIDE_INIT = ', set up the storage server and the NFS clients'


def alongside_init(op, nodes, server, call):
    """What runs while the first master initialises (node_work.Alongside):
    the storage server's set-up and the NFS client of every master and
    worker (see instantiate.init_phase)."""
    calls = node_work.nfs_clients(op, nodes)
    calls[server.name] = [call]
    return node_work.Alongside(tuple(nodes) + (server,), calls)


def manifests(op):
    """The request's PV manifests, checked (as validation did)."""
    found, problems = pv_manifests.load_all(op.ctx.package_dir, op.params)
    if problems:
        raise exceptions.ValidationError(problems=problems)
    return found


def bodies(op, topology):
    """The PersistentVolumes to create, pointing at the storage server's
    NFS address (its ``nfs_server_cp``)."""
    server = storage_node(topology)
    return [pv_manifests.body_for(m, server.nic_ip, op.ctx.vnf_instance_id)
            for m in manifests(op)]


def register_phases(op, access, topology):
    """Register the PVs, then wait until they are Available."""
    if not op.params.pv_registration_params:
        yield phases.skipped(TITLE_REGISTER, 'no pv_registration_params')
        return
    wanted = bodies(op, topology)
    names = [b['metadata']['name'] for b in wanted]
    work = tuple(phases.api_work(
        'create PersistentVolume %s (nfs %s:%s, label %s=%s) unless it '
        'exists with that source' % (
            b['metadata']['name'], b['spec']['nfs']['server'],
            b['spec']['nfs']['path'], pv_manifests.INSTANCE_LABEL,
            op.ctx.vnf_instance_id)) for b in wanted)
    yield Phase(TITLE_REGISTER, work=work,
                action=lambda: volumes_api.register(access.api, wanted,
                                                    prefix=op.prefix),
                assume={n: 'created' for n in names})
    yield Phase(TITLE_AVAILABLE, work=(phases.api_work(
        'GET PersistentVolumes %s until Available' % ', '.join(names)),),
        action=lambda: volumes_api.wait_available(access.api, names,
                                                  prefix=op.prefix),
        assume={n: 'Available' for n in names})


def _selector(op):
    return '%s=%s' % (pv_manifests.INSTANCE_LABEL, op.ctx.vnf_instance_id)


def check_phase(op, access, what):
    """The instance's PVs and who uses them; VolumesInUse when any is
    Bound or mounted. Returns the PV names."""
    def check():
        pvs = volumes_api.list_pvs(access.api, op.ctx.vnf_instance_id)
        uses = volumes_api.usage(access.api, pvs)
        volumes_api.refuse_if_used(uses, what)
        return [u.name for u in uses]
    return Phase(TITLE_CHECK, work=(
        phases.api_work('GET PersistentVolumes -l %s' % _selector(op)),
        phases.api_work('GET pods in the namespaces of their claims')),
        action=check, assume=op.assume(lambda: [
            m.name for m in manifests(op)]))


def delete_phase(op, access, names):
    if not names:
        return phases.skipped(TITLE_DELETE, 'the instance has no '
                                            'PersistentVolume')
    return Phase(TITLE_DELETE, work=tuple(phases.api_work(
        'DELETE PersistentVolume %s (then wait until it is gone)' % name)
        for name in names),
        action=lambda: volumes_api.delete(access.api, names,
                                          prefix=op.prefix))


def heal_server(op, topology):
    """heal_end of the storage server VNFC: set up the new VM. A volume
    that came back with its filesystem is mounted as it is."""
    node, call = server_call(op, topology)
    yield node_work.connect_phase(op, 'Connect to the new storage server',
                                  [node])
    yield node_work.upload_phase(op, [node])
    yield node_work.script_phase(op, title_server(node), node, call)
