"""Heal on the lab the way Tacker runs it, and crash a VM to heal.

Tacker's conductor's order, played with the lab's cloud:

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
from k8s_mgmt_lab import cloud as cloud_mod
from k8s_mgmt_lab import heat_wait
from k8s_mgmt_lab import hot
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import drivers
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import status as status_mod
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines import registry as registry_mod
from k8s_mgmt_lab.machines import vm as vm_mod

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


def _stack_ref(client, stack_id):
    # name/id: the lab (like Heat) answers a bare id with a redirect, which
    # an HTTP client may replay as GET.
    return '%s/%s' % (client.stacks.get(stack_id).stack_name, stack_id)


def unhealthy_resources(client, top_ref, node, include_block_storage):
    """(stack name/id, resource name) of what a VNFC heal marks unhealthy:
    the node's server and, unless kept, every volume Heat shows attached
    to it."""
    server_ref = _stack_ref(client, node.stack_id)
    marked = [(server_ref, node.resource_name)]
    if not include_block_storage:
        return marked
    server = client.resources.get(server_ref, node.resource_name)
    ids = {v['id'] for v in server.attributes.get(
        'os-extended-volumes:volumes_attached') or []}
    found = client.resources.list(top_ref, nested_depth=5,
                                  filters={'type': hot.VOLUME})
    return marked + [(status_mod.stack_of(res), res.resource_name)
                     for res in found if res.physical_resource_id in ids]


def replace_vnfc(settings, record, topology, vnfc_id,
                 include_block_storage=True):
    """Heat heals one server (and, by default, its volumes); lab.json maps
    the VNFC to the new server."""
    node = topology.by_vnfc_id(vnfc_id)
    if node is None:
        raise LabError('VNFC %s has no server in stack %s'
                       % (vnfc_id, record['stack_id']))
    client = status_mod.lab_heat(record)
    top_ref = _stack_ref(client, record['stack_id'])
    for stack_ref, name in unhealthy_resources(client, top_ref, node,
                                               include_block_storage):
        client.resources.mark_unhealthy(stack_ref, name, True, 'lab heal')
    client.stacks.update(top_ref, existing=True)
    heat_wait.stack_done(client, record['stack_id'], 'UPDATE')
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
    stack deleted (waited for until DELETE_COMPLETE), then created again
    under the same name from the package's BaseHOT with the parameters it
    had; new servers, new VNFC ids."""
    client = status_mod.lab_heat(record)
    old = client.stacks.get(record['stack_id'])
    parameters = {k: v for k, v in old.parameters.items()
                  if not k.startswith('OS::')}
    client.stacks.delete(old.id)
    heat_wait.stack_done(client, old.id, 'DELETE')
    text, files = hot.read_dir_template(cloud_mod.top_template(
        lcm.package_dir(settings), record['flavour']))
    created = client.stacks.create(
        stack_name=old.stack_name, template=text, files=files,
        parameters=parameters, timeout_mins=10, disable_rollback=True)
    record['stack_id'] = created['stack']['id']
    heat_wait.stack_done(client, record['stack_id'], 'CREATE')
    record['vnfc_ids'] = {}
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
