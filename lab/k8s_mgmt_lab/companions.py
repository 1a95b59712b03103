"""A second VNF in a lab: its own Heat stack in the lab's region and
subnet, beside the lab's own VNF, as an operator runs a registry VNF and
the cluster that pulls from it on one network.

Labs do not route to each other (each has its bridge and subnet), so two
VNFs that talk share one lab. A companion has a record of its own,
``companion-<name>.json`` in the lab's state directory, shaped as
``lab.json``; :func:`settings_of` gives the :class:`~k8s_mgmt_lab.manager.
LabSettings` whose ``lab_file`` is that record, so the lab's conductor
(:mod:`k8s_mgmt_lab.conductor`) drives the companion with the same calls
(``lcm.instantiate(settings_of(...))``, ``lcm_heal.heal(...)``,
``lcm_scale.terminate(...)``). The companion's VMs are the lab's (same VM
manager, same tag), so ``lab down`` removes them with the rest; its stack
goes with the lab's project.

Only a lab whose stand-ins serve in this process (the tests' labs) can
add one: the stack is created through the lab's region.
"""

import dataclasses
import os
import uuid

from k8s_mgmt_lab import manager
from k8s_mgmt_lab import stack_request
from k8s_mgmt_lab import user_data
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.openstack import stacks as stacks_mod

RECORD = 'companion-%s.json'


@dataclasses.dataclass(frozen=True)
class CompanionSettings(manager.LabSettings):
    """A lab's settings, its record being the companion's."""

    companion: str = 'companion'

    @property
    def lab_file(self):
        return os.path.join(self.state_dir, RECORD % self.companion)


def settings_of(settings, name):
    return CompanionSettings(**dict(dataclasses.asdict(settings),
                                    companion=name))


def add(lab, name, request):
    """Create the companion ``name``'s stack for ``request`` (an
    InstantiateVnfRequest body) in ``lab`` (a
    :class:`~k8s_mgmt_lab.manager.Lab` that is up, its region serving
    here); its settings."""
    s = lab.settings
    main = manager.read_record(s)
    if main is None or lab.region is None:
        raise LabError('a companion needs a lab that is up in this process')
    if main.get('tacker'):
        raise LabError('a lab that runs Tacker instantiates a second VNF '
                       'through Tacker\'s API, not as a companion')
    companion = settings_of(s, name)
    if os.path.exists(companion.lab_file):
        raise LabError('companion %s already exists' % name)
    flavour = manager.request_flavour(request)
    stack_request.check_request(request, s.package_dir)
    parameters = user_data.hot_parameters(s.package_zip, request)
    template, files = stacks_mod.package_templates(s.package_dir, flavour)
    heat = lab.region.stacks()
    stack_name = 'k8s-lab-%s-%s' % (name, flavour)
    path = heat.create(stack_name, template, files, parameters)
    heat.wait(path, 'CREATE')
    record = {
        'flavour': flavour, 'companion_of': s.lab_file,
        'stack_id': path.split('/')[1], 'stack_name': stack_name,
        'daemon_pid': main['daemon_pid'], 'request': request,
        'api': main.get('api', 'v1'), 'heat': main['heat'],
        'openstack': main['openstack'],
        'vnfc_ids': {srv.server_id: str(uuid.uuid4())
                     for srv in heat.servers(path)},
    }
    manager.write_record(companion.lab_file, record)
    return companion
