"""``instantiate``: the lab's VNF instantiated by Tacker's own conductor.

Run in a process of its own: Tacker's imports (eventlet, every versioned
object registered) break threaded servers that share the process.
"""

import os
import time

from oslo_log import log as logging

from k8s_mgmt_lab import lcm as lab_lcm
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.tacker_harness import cluster as cluster_mod
from k8s_mgmt_lab.tacker_harness import config
from k8s_mgmt_lab.tacker_harness import lcm
from k8s_mgmt_lab.tacker_harness import package as package_mod
from k8s_mgmt_lab.tacker_harness import report as report_mod
from k8s_mgmt_lab.tacker_harness import vim as vim_mod

LOG = logging.getLogger(__name__)

# The project the harness acts in (Tacker's, not the lab Keystone's):
# the VIM, the package and the instance all belong to it.
TENANT_ID = 'a0c5bb4f-6c1e-4b6e-9a40-1f6a6b2d8c11'
USER_ID = 'k8s-mgmt-lab'


def load_tacker(state_dir):
    """Tacker's modules, configuration and database; the conductor,
    started as tacker-conductor starts it (without its RPC server)."""
    from tacker.conductor import conductor_server
    from tacker import objects
    from tacker.sol_refactored import objects as sol_objects
    objects.register_all()
    sol_objects.register_all()
    paths = config.load(state_dir)
    config.create_database()
    conductor = conductor_server.Conductor('k8s-mgmt-lab')
    conductor.init_host()       # glance_store and the CSAR dir
    conductor.start()           # coordination (file backend)
    return paths, conductor


def admin_context():
    from tacker import context as t_context
    return t_context.Context(user_id=USER_ID, tenant_id=TENANT_ID,
                             is_admin=True)


def instantiate(settings, request_body=None, name=None):
    """Register the VIM, onboard the CSAR, create the instance and
    instantiate it; returns (report dict, timings)."""
    record = lab_lcm.read_lab(settings)
    if record.get('stack_id'):
        raise RuntimeError('the lab in %s has a stack already; bring it up '
                           'with "lab up --no-stack" so that Tacker creates '
                           'it' % settings.state_dir)
    body = request_body or manager.lab_request(record)
    timings = {}
    began = time.monotonic()
    paths, conductor = load_tacker(settings.state_dir)
    # The driver's own settings, as the lab's tacker.conf would give them.
    lab_lcm.use_driver_state_dir(settings)
    context = admin_context()
    vim = vim_mod.register(context, record['heat'])
    pkg = package_mod.onboard(context, conductor, settings.package_zip)
    timings['setup'] = time.monotonic() - began

    ctl = lcm.controller_for(conductor)
    instance = lcm.create_instance(
        context, ctl, pkg.vnfd.vnfd_id,
        name or 'k8s-lab-%s' % body['flavourId'])
    started = time.monotonic()
    try:
        op_occ_id = lcm.instantiate(context, ctl, instance.id,
                                    lcm.request_for_vim(body, vim['id']))
        timings['instantiate'] = time.monotonic() - started
        report = report_mod.summary(context, instance.id, op_occ_id)
        if report_mod.succeeded(report):
            report['cluster'] = cluster_mod.nodes(context, instance.id)
    finally:
        conductor.stop()
        LOG.info('Tacker database saved to %s',
                 config.save_database(paths))
    report['vnf_package_id'] = pkg.id
    report['vnf_package_path'] = os.path.join(paths.csar_path, pkg.id)
    report['vim_id'] = vim['id']
    report['database'] = paths.database
    report['seconds'] = {k: round(v, 1) for k, v in timings.items()}
    return report
