"""The harness's verbs: the lab's VNF through Tacker's own conductor.

Run in a process of its own: Tacker's imports (eventlet, every versioned
object registered) break threaded servers that share the process. Each
run restores Tacker's database from ``D/tacker`` first and saves it at
the end, failed or not (:mod:`.state`); the first ``instantiate`` sets
up the VIM, the package and the instance, later runs find them there.
"""

import contextlib
import dataclasses
import os
import time

from oslo_log import log as logging

from k8s_mgmt_lab import manager
from k8s_mgmt_lab.openstack import bootstrap
from k8s_mgmt_lab.conductor import lcm as lab_lcm
from k8s_mgmt_lab.conductor.tacker_harness import cluster as cluster_mod
from k8s_mgmt_lab.conductor.tacker_harness import config
from k8s_mgmt_lab.conductor.tacker_harness import labrecord
from k8s_mgmt_lab.conductor.tacker_harness import lcm
from k8s_mgmt_lab.conductor.tacker_harness import ops
from k8s_mgmt_lab.conductor.tacker_harness import report as report_mod
from k8s_mgmt_lab.conductor.tacker_harness import state as state_mod
from k8s_mgmt_lab.errors import LabError

LOG = logging.getLogger(__name__)

# The project the harness acts in (Tacker's, not the lab Keystone's):
# the VIM, the package and the instance all belong to it.
TENANT_ID = 'a0c5bb4f-6c1e-4b6e-9a40-1f6a6b2d8c11'
USER_ID = 'k8s-mgmt-lab'


def load_tacker(state_dir):
    """Tacker's modules, configuration and database (restored from the
    last run); the conductor, started as tacker-conductor starts it
    (without its RPC server)."""
    from tacker.conductor import conductor_server
    from tacker import objects
    from tacker.sol_refactored import objects as sol_objects
    objects.register_all()
    sol_objects.register_all()
    paths = config.load(state_dir)
    config.create_database()
    state_mod.restore_database(paths)
    conductor = conductor_server.Conductor('k8s-mgmt-lab')
    trace_hooks(conductor, paths)
    conductor.init_host()       # glance_store and the CSAR dir
    conductor.start()           # coordination (file backend)
    return paths, conductor


def trace_hooks(conductor, paths):
    """Record every call Tacker makes to our drivers' hooks in
    ``<state dir>/tacker/hooks.jsonl``
    (:mod:`k8s_mgmt_lab.conductor.hook_trace`):
    the driver objects Tacker's driver manager loaded get recording hooks;
    Tacker's own code is untouched."""
    from k8s_mgmt_lab.conductor import hook_trace
    loaded = conductor.vnflcm_driver._mgmt_manager._drivers
    for name, driver in loaded.items():
        if name.startswith('mgmt-drivers-'):
            hook_trace.wrap_in_place(driver, paths.hook_trace)


def admin_context():
    from tacker import context as t_context
    return t_context.Context(user_id=USER_ID, tenant_id=TENANT_ID,
                             is_admin=True)


@dataclasses.dataclass
class Session:
    paths: config.Paths
    conductor: object
    context: object
    ctl: object
    state: dict


@contextlib.contextmanager
def tacker_session(settings):
    """Tacker loaded, its database restored; saved again on the way out."""
    paths, conductor = load_tacker(settings.state_dir)
    # The driver's own settings, as the lab's tacker.conf would give them.
    lab_lcm.use_driver_state_dir(settings)
    try:
        yield Session(paths, conductor, admin_context(),
                      lcm.controller_for(conductor), state_mod.read(paths))
    finally:
        conductor.stop()
        LOG.info('Tacker database saved to %s', state_mod.save_database(paths))


def finish(session, instance_id, op_occ_id, seconds):
    """The report of one operation, with the cluster's nodes when the
    instance is instantiated."""
    report = report_mod.summary(session.context, instance_id, op_occ_id)
    if report['instantiation_state'] == report_mod.INSTANTIATED:
        try:
            report['cluster'] = cluster_mod.nodes(session.context,
                                                  instance_id)
        except Exception as err:    # reported; the exit status says it
            LOG.error('cannot read the cluster\'s nodes: %s', err)
            report['cluster_error'] = str(err)
    report.update(session.state, database=session.paths.database,
                  seconds={k: round(v, 1) for k, v in seconds.items()})
    return report


def set_up(settings, session, record, body, name):
    """The VIM, the package and the instance, made by the first run."""
    from k8s_mgmt_lab.conductor.tacker_harness import package as package_mod
    from k8s_mgmt_lab.conductor.tacker_harness import vim as vim_mod
    state = session.state
    if not state.get('vim_id'):
        state['vim_id'] = vim_mod.register(session.context,
                                           record['heat'])['id']
        state_mod.write(session.paths, state)
    if not state.get('vnf_instance_id'):
        pkg = package_mod.onboard(session.context, session.conductor,
                                  settings.package_zip)
        state['vnf_package_id'] = pkg.id
        state['vnf_package_path'] = os.path.join(session.paths.csar_path,
                                                 pkg.id)
        state['vnf_instance_id'] = lcm.create_instance(
            session.context, session.ctl, pkg.vnfd.vnfd_id,
            name or 'k8s-lab-%s' % body['flavourId']).id
        state_mod.write(session.paths, state)
    return state['vnf_instance_id']


def instantiate(settings, request_body=None, name=None):
    """Set up (the first time), then instantiate; the lab's pre-built
    stack, if any, is deleted first so that Tacker creates its own."""
    record = lab_lcm.read_lab(settings)
    labrecord.check_ours(record)
    region = record['heat'].get('region_name')
    if region not in (None, bootstrap.REGION):
        # Tacker 16's v1 infra driver creates the stack with a heatclient
        # that names no region (without a grant it reads none from the
        # VIM), so Heat builds in its default region.
        raise LabError('Tacker drives only a lab whose stand-ins are in %s: '
                       'this lab\'s are in region %s of a shared control '
                       'plane; take it down and "lab up --own-control-plane"'
                       % (bootstrap.REGION, region))
    body = request_body or manager.lab_request(record)
    seconds = {}
    began = time.monotonic()
    if labrecord.delete_prebuilt_stack(settings, record):
        seconds['delete_lab_stack'] = time.monotonic() - began
    with tacker_session(settings) as session:
        began = time.monotonic()
        instance_id = set_up(settings, session, record, body, name)
        seconds['setup'] = time.monotonic() - began
        began = time.monotonic()
        op_occ_id = lcm.instantiate(
            session.context, session.ctl, instance_id,
            lcm.request_for_vim(body, session.state['vim_id'],
                                record['heat'].get('region_name')))
        seconds['instantiate'] = time.monotonic() - began
        report = finish(session, instance_id, op_occ_id, seconds)
    labrecord.follow(settings, report)
    return report


OPERATIONS = {'scale': ops.scale, 'heal': ops.heal,
              'terminate': ops.terminate}


def operate(settings, verb, body):
    """One of :data:`OPERATIONS` on the instance the harness made."""
    record = lab_lcm.read_lab(settings)
    labrecord.check_ours(record)
    with tacker_session(settings) as session:
        instance_id = session.state.get('vnf_instance_id')
        if not instance_id or record.get(lab_lcm.LCM_KEY) != \
                lab_lcm.TACKER:
            raise LabError('no VNF instance of Tacker\'s on this lab; run '
                           '"lab instantiate --tacker" first')
        began = time.monotonic()
        op_occ_id = OPERATIONS[verb](session.context, session.ctl,
                                     instance_id, body)
        report = finish(session, instance_id, op_occ_id,
                        {verb: time.monotonic() - began})
    labrecord.follow(settings, report)
    return report
