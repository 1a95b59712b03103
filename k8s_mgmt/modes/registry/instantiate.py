"""instantiate_end of the registry VNF (also the whole VNF's heal_end)::

    Read the topology from Heat
    Connect to the registry VM
    Upload the scripts            (the library, setup_storage.sh,
                                   setup_registry.sh; the operator's
                                   certificate and CA when given)
    Prepare the registry's volume on <node>
    Set up the registry on <node>
    Publish the registry's address and CA

See :mod:`k8s_mgmt.shared_phases.registry`. Every step finds what is done
and keeps it, so a re-run completes a half-built registry and changes
nothing on a finished one.
"""

from k8s_mgmt.shared_phases import node_work
from k8s_mgmt.shared_phases import registry


def build(op, title='Connect to the registry VM', kept_volume=False):
    topology = yield node_work.topology_phase(op)
    node = registry.registry_node(topology)
    yield node_work.connect_phase(op, title, [node])
    yield node_work.upload_phase(op, [node])
    return (yield from registry.setup_phases(op, topology, node,
                                             kept_volume))
