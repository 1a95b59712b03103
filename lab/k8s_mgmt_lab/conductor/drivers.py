"""The management driver of a flavour, loaded the way Tacker loads it.

Tacker's conductor reads the implementation name of the flavour's Vnflcm
interface in the VNFD (``mgmt-drivers-kubernetes``,
``mgmt-drivers-kubespray``) and loads that driver with stevedore from the
``tacker.tacker.mgmt.drivers`` entry points; the lab's LCM does the same
with the package built into its state dir, so each flavour gets the driver
its VNFD names.
"""

import os

import yaml

from k8s_mgmt_lab.errors import LabError

NAMESPACE = 'tacker.tacker.mgmt.drivers'
DEFINITIONS = 'Definitions'


def _flavour_of(vnfd):
    mappings = (vnfd.get('topology_template') or {}).get(
        'substitution_mappings') or {}
    return (mappings.get('properties') or {}).get('flavour_id')


def driver_name(package_dir, flavour, hook='instantiate_end'):
    """The implementation the flavour's VNFD gives ``hook``."""
    folder = os.path.join(package_dir, DEFINITIONS)
    for name in sorted(os.listdir(folder)):
        if not name.endswith(('.yaml', '.yml')):
            continue
        with open(os.path.join(folder, name)) as handle:
            vnfd = yaml.safe_load(handle) or {}
        if _flavour_of(vnfd) != flavour:
            continue
        vnf = vnfd['topology_template'].get('node_templates', {}).get('VNF')
        hooks = ((vnf or {}).get('interfaces') or {}).get('Vnflcm') or {}
        implementation = (hooks.get(hook) or {}).get('implementation')
        if implementation:
            return implementation
    raise LabError('no VNFD in %s gives flavour %s a %s implementation'
                   % (folder, flavour, hook))


def load(package_dir, flavour):
    """One instance of the flavour's driver, from its entry point."""
    from stevedore import driver as stevedore_driver
    name = driver_name(package_dir, flavour)
    try:
        manager = stevedore_driver.DriverManager(NAMESPACE, name,
                                                 invoke_on_load=True)
    except Exception as err:  # stevedore's NoMatches and import errors
        raise LabError('cannot load the management driver %s (%s): %s'
                       % (name, NAMESPACE, err))
    return manager.driver
