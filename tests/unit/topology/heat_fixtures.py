"""Loading the captured Heat response shapes in tests/fixtures/heat."""

import copy
import json
import os

from k8s_mgmt.topology import model

FIXTURES = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                        'fixtures', 'heat')


def load(name):
    with open(os.path.join(FIXTURES, name + '.json')) as src:
        return json.load(src)


def details_of(fixture):
    """Every shown resource, keyed as build_topology expects."""
    return {(s['stack_id'], s['resource']['resource_name']):
            copy.deepcopy(s['resource']) for s in fixture['shown']}


def k8s_spec(cluster_cp='vip_CP', cluster_fip=None, volumes=(),
             storage_cp=None):
    groups = [model.GroupSpec('master', 'masterNode_CP1',
                              aspect_id='master_instance'),
              model.GroupSpec('worker', 'workerNode_CP2',
                              aspect_id='worker_instance')]
    if storage_cp:
        groups.append(model.GroupSpec('storage', storage_cp))
    return model.TopologySpec(groups=tuple(groups),
                              cluster_cp_name=cluster_cp,
                              cluster_fip_name=cluster_fip,
                              volume_resource_ids=tuple(volumes))


def resources_where(fixture, **match):
    return [r for r in fixture['resources']
            if all(r.get(k) == v for k, v in match.items())]
