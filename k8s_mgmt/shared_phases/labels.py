"""Node labels derived from real placement: decided from data, no I/O.

* ``CIS-node=<compute host>`` on workers that sit in an anti-affinity
  server group (the podaffinity flavour): pods can then spread over compute
  hosts with a pod anti-affinity on that label.
* ``topology.kubernetes.io/zone=<zone>`` from the grant, when the NFVO
  granted zones.
"""

import re

from oslo_log import log as logging

from k8s_mgmt.tacker_objects import field

LOG = logging.getLogger(__name__)

CIS_NODE = 'CIS-node'
ZONE = 'topology.kubernetes.io/zone'
ANTI_AFFINITY = ('anti-affinity', 'soft-anti-affinity')
_LABEL_VALUE = re.compile(
    r'^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$')


def anti_affinity_group_ids(topology):
    return {g.group_id for g in topology.server_groups
            if any(p in ANTI_AFFINITY for p in g.policies)}


def _get(obj, snake, camel):
    """A grant field: Tacker objects are snake_case, SOL003 JSON camelCase."""
    value = field(obj, snake)
    return value if value is not None else field(obj, camel)


def _grant_zones(grant):
    """(zone_id -> zone name, resource definition id -> zone_id)."""
    zones = {}
    for zone in _get(grant, 'zones', 'zones') or ():
        if field(zone, 'id'):
            zones[field(zone, 'id')] = _get(zone, 'zone_id', 'zoneId')
    by_resource = {}
    for item in _get(grant, 'add_resources', 'addResources') or ():
        rid = _get(item, 'resource_definition_id', 'resourceDefinitionId')
        zone_id = _get(item, 'zone_id', 'zoneId')
        if rid and zone_id:
            by_resource[rid] = zone_id
    return zones, by_resource


def _zone_of(node, grant):
    zones, by_resource = _grant_zones(grant)
    for key in (node.vnfc_id, node.server_id, node.resource_name):
        if key in by_resource and zones.get(by_resource[key]):
            return zones[by_resource[key]]
    names = {z for z in zones.values() if z}
    # One zone for everything: it is every node's zone.
    return names.pop() if len(names) == 1 else None


def _valid(node, key, value):
    if value and _LABEL_VALUE.match(value):
        return True
    LOG.warning('%s: label %s not set: %r is no valid label value',
                node.name, key, value)
    return False


def worker_labels(topology, grant=None):
    """{worker name: {label: value}} for the workers that get labels."""
    anti = anti_affinity_group_ids(topology)
    labels = {}
    for worker in topology.workers:
        wanted = {}
        if anti & set(worker.server_groups or ()):
            if _valid(worker, CIS_NODE, worker.compute_host):
                wanted[CIS_NODE] = worker.compute_host
        zone = _zone_of(worker, grant) if grant is not None else None
        if zone and _valid(worker, ZONE, zone):
            wanted[ZONE] = zone
        if wanted:
            labels[worker.name] = wanted
    return labels


def missing_labels(wanted, states):
    """The part of ``wanted`` the nodes do not carry yet (re-runs: none)."""
    todo = {}
    for name, labels in wanted.items():
        have = states[name].labels if name in states else {}
        diff = {k: v for k, v in labels.items() if have.get(k) != v}
        if diff:
            todo[name] = diff
    return todo


def apply_missing(api, wanted, states, prefix):
    """Patch onto the nodes the labels of ``wanted`` they lack; returns them.

    ``states``: the nodes as the API reported them, by name. Re-runs find
    nothing missing and patch nothing.
    """
    todo = missing_labels(wanted, states)
    for name, labels in sorted(todo.items()):
        LOG.info('%s %s: labels %s', prefix, name,
                 ', '.join('%s=%s' % kv for kv in sorted(labels.items())))
        api.label_node(name, labels)
    return todo
