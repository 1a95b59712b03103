"""Heal on the lab the way Tacker runs it, and crash a VM to heal.

Tacker's conductor's order, played with the lab's real Heat
(:class:`k8s_mgmt_lab.openstack.stacks.Stacks`, in the lab's region):

* one VNFC: ``heal_start`` (no kwargs beyond the lab's two), then Heat
  replaces the server (mark the server resource unhealthy, stack update:
  new server id, same port and IP, maybe another compute host; lab.json
  maps the VNFC id to the new server id, as Tacker's vnfc_resource_info
  does), then ``heal_end`` with ``vnf=``. As in Tacker, the server's
  Cinder volumes are marked unhealthy too, so Heat gives the new server
  new, empty ones, unless the request's additionalParams carry
  ``tacker_extension_heal_include_block_storage: false``: then the new
  server gets the same volumes, data and all.
* the whole VNF (no VNFC id): ``heal_start``, then the stack is deleted and
  created again (new stack id, new servers, new VNFC ids), then
  ``heal_end``.

:func:`kill` (``lab kill``) crashes a VM (every process in it dies; Heat
still shows the server) so a heal can be tried on a dead node.
"""

import dataclasses
import os
import time
import uuid


from k8s_mgmt import package as package_mod
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import drivers
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import status as status_mod
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines import registry as registry_mod
from k8s_mgmt_lab.machines import vm as vm_mod
from k8s_mgmt_lab.openstack import stacks as stacks_mod

# Tacker's additionalParams switch of a VNFC heal: false keeps the volumes.
INCLUDE_BLOCK_STORAGE = 'tacker_extension_heal_include_block_storage'
RECREATE_VOLUMES = 'storage_volume_recreate'


def server_of_vnfc(record, vnfc_id):
    by_vnfc = {v: s for s, v in (record.get('vnfc_ids') or {}).items()}
    if vnfc_id not in by_vnfc:
        raise LabError('no VNFC %s in this lab; its VNFCs are: %s'
                       % (vnfc_id, ', '.join(sorted(by_vnfc)) or 'none'))
    return by_vnfc[vnfc_id]


def kill(settings, vnfc_id):
    """Crash the VM of ``vnfc_id``; its server id (False: already dead)."""
    record = lcm.read_lab(settings)
    server_id = server_of_vnfc(record, vnfc_id)
    registry = registry_mod.Registry(settings.state_dir)
    return server_id, vm_mod.kill(registry, server_id)


SERVER = 'OS::Nova::Server'


def marked_for_heal(listing, server_id, volume_ids=()):
    """(stack name/id, resource name) of what a VNFC heal marks unhealthy,
    from the stack's nested resource listing: the server ``server_id``
    and the volumes among ``volume_ids`` (those attached to it)."""
    servers = [r for r in listing if r.get('resource_type') == SERVER and
               r.get('physical_resource_id') == server_id]
    if not servers:
        raise LabError('Heat shows no server %s in the stack' % server_id)
    server = servers[0]
    return [(status_mod.stack_of(server), server['resource_name'])] + [
        (status_mod.stack_of(r), r['resource_name'])
        for r in status_mod.volume_resources(listing)
        if r.get('physical_resource_id') in set(volume_ids)]


def unhealthy_resources(stacks, path, server_id, include_block_storage):
    """What a VNFC heal marks unhealthy: the server and, unless kept,
    every volume Heat shows attached to it."""
    listing = stacks.resources(path)
    marked = marked_for_heal(listing, server_id)
    if not include_block_storage:
        return marked
    shown = stacks.resource(*marked[0]).get('attributes') or {}
    attached = [v['id'] for v in shown.get(
        'os-extended-volumes:volumes_attached') or ()]
    return marked_for_heal(listing, server_id, attached)


def replace_vnfc(settings, record, topology, vnfc_id,
                 include_block_storage=True):
    """Heat heals one server (and, by default, its volumes): each marked
    unhealthy in its own stack, then the top stack updated as it is;
    lab.json maps the VNFC to the new server."""
    node = topology.by_vnfc_id(vnfc_id)
    if node is None:
        raise LabError('VNFC %s has no server in stack %s'
                       % (vnfc_id, record['stack_id']))
    stacks = status_mod.lab_stacks(record)
    path = status_mod.stack_path(record)
    for stack, name in unhealthy_resources(stacks, path, node.server_id,
                                           include_block_storage):
        stacks.mark_unhealthy(stack, name, 'lab heal')
    stacks.update(path)
    stacks.wait(path, 'UPDATE')
    healed = status_mod.read_topology(record).by_stack_id(node.stack_id)
    if healed is None or healed.server_id == node.server_id:
        raise LabError('the stack update did not replace server %s'
                       % node.server_id)
    ids = dict(record.get('vnfc_ids') or {})
    ids.pop(node.server_id, None)
    ids[healed.server_id] = vnfc_id
    record['vnfc_ids'] = ids
    manager.write_record(settings.lab_file, record)
    return healed.server_id


def recreate_stack(settings, record):
    """Whole-VNF heal on the cloud, as Tacker's infra driver runs it: the
    stack deleted (waited for until Heat no longer knows it), then created
    again under the same name from the flavour's BaseHOT with the
    parameters it had; new servers, new VNFC ids. The top template is the
    one Heat held, which ``lab up`` may have edited (a raised max_size),
    as an operator's package would hold it; the nested ones the
    package's."""
    stacks = status_mod.lab_stacks(record)
    old = status_mod.stack_path(record)
    parameters = stacks.parameters(old)
    template = status_mod.lab_heat(record).stacks.template(old)
    _top, files = stacks_mod.package_templates(lcm.package_dir(settings),
                                               record['flavour'])
    stacks.delete_and_wait(old)
    new = stacks.create(record['stack_name'], template, files, parameters)
    record['stack_id'] = new.split('/', 1)[1]
    # Written before the wait: a failed create still names the stack.
    record['vnfc_ids'] = {}
    manager.write_record(settings.lab_file, record)
    stacks.wait(new, 'CREATE')
    topology = status_mod.read_topology(record)
    record['vnfc_ids'] = {n.server_id: str(uuid.uuid4())
                          for n in topology.all_nodes()}
    manager.write_record(settings.lab_file, record)
    return record['stack_id']


@dataclasses.dataclass
class HealResult:
    vnf_instance_id: str
    vnfc_id: str                 # None: the whole VNF
    old: str                     # server id (VNFC) or stack id (whole VNF)
    new: str
    seconds_start: float
    seconds_cloud: float
    seconds_end: float


def _instance(settings, record):
    inst_id = record.get('vnf_instance_id')
    if not inst_id:
        raise LabError('no VNF instance on this lab yet; run "k8s-mgmt lab '
                       'instantiate" first')
    body = manager.lab_request(record)
    pkg = lcm.package_dir(settings)
    if not os.path.isdir(pkg):
        package_mod.build(output_dir=pkg)
    lcm.use_driver_state_dir(settings)
    return inst_id, lcm.instantiate_request(body), {
        'vnf_package_path': pkg, 'vim_info': lcm.vim_info(record)}


def _instantiated(inst_id, record, request, topology):
    inst = lcm.vnf_instance(inst_id, record, request, topology)
    inst['instantiation_state'] = 'INSTANTIATED'
    return inst


def heal(settings, vnfc_id=None, driver=None, keep_volumes=False,
         recreate_volumes=False):
    """heal_start, the cloud's part, heal_end; errors propagate.

    ``keep_volumes``: the request asks Tacker to keep the VNFC's Cinder
    volumes (additionalParams ``tacker_extension_heal_include_block_storage:
    false``). ``recreate_volumes``: the request accepts that the storage
    server's volume is recreated empty (``storage_volume_recreate: true``);
    without either, the driver refuses to heal the storage server."""
    record = lcm.read_lab(settings)
    lcm.refuse_tacker(record)
    inst_id, request, lab_kwargs = _instance(settings, record)
    if driver is None:
        driver = drivers.load(lcm.package_dir(settings), record['flavour'])
    additional = {INCLUDE_BLOCK_STORAGE: False} if keep_volumes else {}
    if recreate_volumes:
        additional[RECREATE_VOLUMES] = True
    heal_request = {'vnfc_instance_id': [vnfc_id] if vnfc_id else [],
                    'cause': 'k8s-mgmt lab heal',
                    'additional_params': additional}
    topology = status_mod.read_topology(record)
    began = time.monotonic()
    driver.heal_start(context=None,
                      vnf_instance=_instantiated(inst_id, record, request,
                                                 topology),
                      heal_vnf_request=heal_request, grant=None,
                      grant_request=None, **lab_kwargs)
    started = time.monotonic()
    if vnfc_id:
        old = server_of_vnfc(record, vnfc_id)
        new = replace_vnfc(settings, record, topology, vnfc_id,
                           additional.get(INCLUDE_BLOCK_STORAGE, True))
    else:
        old = record['stack_id']
        new = recreate_stack(settings, record)
    topology = status_mod.read_topology(record)
    replaced = time.monotonic()
    driver.heal_end(context=None,
                    vnf_instance=_instantiated(inst_id, record, request,
                                               topology),
                    heal_vnf_request=heal_request, grant=None,
                    grant_request=None, vnf=lcm.vnf_dict(inst_id, record),
                    **lab_kwargs)
    return HealResult(inst_id, vnfc_id, old, new, started - began,
                      replaced - started, time.monotonic() - replaced)
