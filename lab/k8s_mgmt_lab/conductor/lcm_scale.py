"""Scale and terminate on the lab, in the order Tacker's conductor uses.

The cloud side goes through the lab's real Heat, the way Tacker's OpenStack
infra driver drives it (:mod:`.scale_cloud`: policy signals for the
complex flavour, desired_capacity updates for the others; a stack delete);
the driver's hooks get Tacker-shaped dicts and the conductor's keyword
arguments (tacker.conductor.conductor_server):

* SCALE_OUT: Heat grows the group, then ``scale_end(scale_out_id_list=<new
  member stack ids>, vnf=...)``. When scale_end fails, the op occ's error
  point is VNF_CONFIG_END and Tacker's rollback (``POST .../rollback``)
  goes through Heat alone: the new members are marked unhealthy and the
  group shrinks; **no hook is called** (tacker 16,
  ``VnfLcmDriver._rollback_vnf_pre`` calls ``scale_start`` only when the
  error point is NOTIFY_COMPLETED, i.e. when Tacker itself failed after
  scale_end returned). The lab rolls back at once, as an operator asking
  for the rollback would; ``fail_after_scale_end`` stands for the other
  case: ``scale_start(scale_name_list=<the new members>)`` with the
  SCALE_OUT request, then Heat.
* SCALE_IN: ``scale_start(scale_name_list=<members Tacker expects Heat to
  remove>, scale_out_id_list=<their stack ids>, vnf=...)``, then Heat
  shrinks the group; the result names the members Heat did remove, read
  from Heat (a warning when they are not the ones the driver was told).
* Terminate: ``terminate_start(vnf=...)``, Heat deletes the stack, then
  ``terminate_end`` (no ``vnf``) with ``vim_connection_info`` emptied.

The same operations through the real Tacker run in
``tests/lab/test_through_tacker.py``.
"""

import dataclasses
import time
import uuid

from oslo_log import log as logging

from k8s_mgmt import secrets
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import drivers
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import scale_cloud
from k8s_mgmt_lab.conductor.scale_types import DEFAULT_ASPECT
from k8s_mgmt_lab.conductor.scale_types import SCALE_IN
from k8s_mgmt_lab.conductor.scale_types import SCALE_OUT
from k8s_mgmt_lab.conductor import status as status_mod
from k8s_mgmt_lab.errors import LabError

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class ScaleResult:
    scale_type: str
    aspect_id: str
    steps: int
    member_names: list          # members added (out) or removed (in)
    member_stack_ids: list
    seconds_cloud: float
    seconds_driver: float
    rolled_back: bool = False


def scale_request(scale_type, aspect_id, steps, additional_params=None):
    return {'type': scale_type, 'aspect_id': aspect_id,
            'number_of_steps': steps,
            'additional_params': dict(additional_params or {})}


class Conductor(object):
    """What the lab's conductor needs for one LCM call."""

    def __init__(self, settings, driver):
        self.settings = settings
        self.record = lcm.read_lab(settings)
        lcm.refuse_tacker(self.record)
        if self.record.get('terminated'):
            raise LabError('the lab\'s VNF instance was terminated; run '
                           '"k8s-mgmt lab down" and "lab up" again')
        self.inst_id = lcm.instance_id(settings, self.record)
        self.pkg = lcm.package_dir(settings)
        if driver is None:
            driver = drivers.load(self.pkg, self.record['flavour'])
        self.driver = driver
        lcm.use_driver_state_dir(settings)
        self.inst_request = lcm.instantiate_request(
            manager.lab_request(self.record))
        self.heat = scale_cloud.ScaleCloud(self.record)
        self.kwargs = {'vnf_package_path': self.pkg,
                       'vim_info': lcm.vim_info(self.record)}

    def vnf_instance(self):
        topology = status_mod.read_topology(self.record)
        inst = lcm.vnf_instance(self.inst_id, self.record, self.inst_request,
                                topology)
        inst['instantiation_state'] = 'INSTANTIATED'
        return inst

    def vnf(self):
        # Tacker 16 passes the vnf dict as it read it before the
        # operation: status ACTIVE (seen through --tacker).
        vnf = lcm.vnf_dict(self.inst_id, self.record)
        vnf['status'] = 'ACTIVE'
        return vnf

    def hook_call(self, name, request, **kwargs):
        """The driver's hook ``name`` with its arguments built, ready to
        call: the conductor's own reads (Tacker has the instance in its
        database) happen here, before the caller starts the driver's
        clock."""
        method = getattr(self.driver, name)
        request_kwarg = ('terminate_vnf_request' if name.startswith(
            'terminate') else 'scale_vnf_request')
        arguments = dict(context=None, vnf_instance=self.vnf_instance(),
                         grant=None, grant_request=None,
                         **{request_kwarg: request}, **kwargs,
                         **self.kwargs)
        return lambda: method(**arguments)

    def hook(self, name, request, **kwargs):
        return self.hook_call(name, request, **kwargs)()

    def remember_servers(self):
        """New servers get VNFC ids (Tacker adds vnfcResourceInfo)."""
        topology = status_mod.read_topology(self.record)
        known = self.record.setdefault('vnfc_ids', {})
        current = {n.server_id for n in topology.all_nodes()}
        for server_id in current - set(known):
            known[server_id] = str(uuid.uuid4())
        for server_id in set(known) - current:
            del known[server_id]
        manager.write_record(self.settings.lab_file, self.record)


def scale(settings, scale_type, aspect_id=DEFAULT_ASPECT, steps=1,
          additional_params=None, driver=None, fail_after_scale_end=False):
    """One scale operation: the cloud and the driver's hooks in order.

    ``fail_after_scale_end`` (tests): a scale-out fails in the conductor
    after scale_end returned, as Tacker's would at its error point
    NOTIFY_COMPLETED, and is rolled back with the driver's scale_start.
    """
    if scale_type not in (SCALE_OUT, SCALE_IN):
        raise LabError('unknown scale type %r' % scale_type)
    if steps < 1:
        raise LabError('--steps must be at least 1')
    conductor = Conductor(settings, driver)
    request = scale_request(scale_type, aspect_id, steps, additional_params)
    if scale_type == SCALE_OUT:
        return _scale_out(conductor, request, fail_after_scale_end)
    return _scale_in(conductor, request)


class ConductorFailure(LabError):
    """The conductor failed after scale_end returned (a test's fault)."""


def _scale_out(conductor, request, fail_after_scale_end=False):
    heat = conductor.heat
    aspect = heat.aspect(request['aspect_id'])
    before = heat.members(aspect.name)
    began = time.monotonic()
    heat.scale(aspect, SCALE_OUT, request['number_of_steps'], len(before))
    new, _gone = scale_cloud.changed_members(before, heat.members(
        aspect.name))
    conductor.remember_servers()
    cloud_done = time.monotonic()
    if not new:     # Tacker calls scale_end only with members added
        LOG.warning('group %s is at its max_size %d: nothing added',
                    aspect.name, aspect.max_size)
        return ScaleResult(SCALE_OUT, aspect.name,
                           request['number_of_steps'], [], [],
                           cloud_done - began, 0.0)
    scale_end = conductor.hook_call(
        'scale_end', request, scale_out_id_list=[m['stack_id'] for m in new],
        vnf=conductor.vnf())
    cloud_done = time.monotonic()
    try:
        scale_end()
        if fail_after_scale_end:
            raise ConductorFailure('the conductor failed after scale_end '
                                   '(injected)')
    except Exception as err:
        after_hook = isinstance(err, ConductorFailure)
        LOG.warning('%s (%s); rolling the scale-out back%s',
                    'the conductor failed' if after_hook else
                    'scale_end failed',
                    secrets.redact(str(err)).splitlines()[0],
                    '' if after_hook else ' through Heat alone, as Tacker '
                    'does (no hook)')
        try:
            _roll_back(conductor, request, aspect, new,
                       call_driver=after_hook)
        except Exception as rollback_err:  # report, keep the first error
            LOG.error('the rollback failed too: %s',
                      secrets.redact(str(rollback_err)))
        raise
    return ScaleResult(SCALE_OUT, aspect.name, request['number_of_steps'],
                       [m['name'] for m in new],
                       [m['stack_id'] for m in new],
                       cloud_done - began, time.monotonic() - cloud_done)


def _roll_back(conductor, request, aspect, new, call_driver):
    """Tacker's rollback of a failed scale-out: the driver's scale_start
    only when the failure came after scale_end (its kwargs: just
    ``scale_name_list``), then Heat."""
    try:
        if call_driver:
            conductor.hook('scale_start', request,
                           scale_name_list=[m['name'] for m in new])
    finally:
        # As Tacker's rollback (scale_in_reverse, tacker 16): the new
        # members are marked unhealthy in the group's stack, so Heat
        # removes them, whatever the driver did; a plain scale-in would
        # remove the oldest.
        if new:
            current = len(conductor.heat.members(aspect.name))
            conductor.heat.shrink_by(aspect, [m['name'] for m in new],
                                     current)
        conductor.remember_servers()


def _scale_in(conductor, request):
    heat = conductor.heat
    aspect = heat.aspect(request['aspect_id'])
    before = heat.members(aspect.name)
    told = scale_cloud.tacker_scale_in_victims(
        before, aspect, request['number_of_steps'])
    scale_start = None
    if told:    # Tacker calls scale_start only with members to remove
        scale_start = conductor.hook_call(
            'scale_start', request,
            scale_name_list=[m['name'] for m in told],
            scale_out_id_list=[m['stack_id'] for m in told],
            vnf=conductor.vnf())
    else:
        LOG.warning('group %s is at its min_size %d: nothing to remove',
                    aspect.name, aspect.min_size)
    began = time.monotonic()
    if scale_start is not None:
        scale_start()
    driver_done = time.monotonic()
    heat.scale(aspect, SCALE_IN, request['number_of_steps'], len(before),
               remove=[m['name'] for m in told])
    _new, gone = scale_cloud.changed_members(before, heat.members(
        aspect.name))
    conductor.remember_servers()
    if {m['name'] for m in gone} != {m['name'] for m in told}:
        LOG.warning('Heat removed %s from group %s; the driver was told %s',
                    ', '.join(m['name'] for m in gone) or 'nothing',
                    aspect.name,
                    ', '.join(m['name'] for m in told) or 'nothing')
    return ScaleResult(SCALE_IN, aspect.name, request['number_of_steps'],
                       [m['name'] for m in gone],
                       [m['stack_id'] for m in gone],
                       time.monotonic() - driver_done, driver_done - began)


def terminate(settings, driver=None):
    """terminate_start, delete the stack, terminate_end (VIM emptied)."""
    conductor = Conductor(settings, driver)
    request = {'termination_type': 'FORCEFUL', 'additional_params': {}}
    began = time.monotonic()
    conductor.hook('terminate_start', request, vnf=conductor.vnf())
    conductor.heat.delete()
    conductor.record['terminated'] = True
    manager.write_record(settings.lab_file, conductor.record)
    # Tacker re-initialises instantiated_vnf_info and empties
    # vim_connection_info; additionalParams stay.
    inst = {'id': conductor.inst_id, 'vnfd_id': lcm.VNFD_ID,
            'instantiation_state': 'NOT_INSTANTIATED',
            'vim_connection_info': [], 'instantiated_vnf_info': {
                'instance_id': None, 'vnfc_resource_info': [],
                'flavour_id': conductor.inst_request['flavour_id'],
                'additional_params': lcm.stored_params(
                    conductor.inst_request['additional_params'])}}
    conductor.driver.terminate_end(
        context=None, vnf_instance=inst, terminate_vnf_request=request,
        grant=None, grant_request=None, **conductor.kwargs)
    return {'vnf_instance_id': conductor.inst_id,
            'seconds': round(time.monotonic() - began, 2)}
