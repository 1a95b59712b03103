"""Topologies and parameters for the instantiate tests, built as plain data."""

import json
import os

from k8s_mgmt import params as params_mod
from k8s_mgmt.topology import model

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir,
                                    os.pardir, os.pardir))
REQUESTS = os.path.join(REPO, 'k8s_mgmt', 'samples', 'requests')
SSH_SERVER_PY = os.path.join(REPO, 'tests', 'functional', 'ssh',
                             'ssh_test_server.py')


def ssh_server_module():
    """tests/functional/ssh/ssh_test_server.py: a real SSH server
    (paramiko's server side) on loopback, loaded by path."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('ssh_test_server',
                                                  SSH_SERVER_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PinsOnlyState(object):
    """An instance's state directory as an OperationRun outside a lab
    needs it: only the pin file, under ``root``."""

    def __init__(self, root):
        self.root = root

    def host_key_file(self):
        return str(self.root / 'pins.json')

    def cluster_record(self):
        return {}


def sample_body(flavour):
    with open(os.path.join(REQUESTS, flavour + '.json')) as src:
        return json.load(src)


def sample_params(flavour, **install_overrides):
    body = sample_body(flavour)
    install = body['additionalParams']['k8s_cluster_installation_param']
    install.update(install_overrides)
    return params_mod.load_request(body)


def node(role, index, host='compute-%d', groups=()):
    name = '%s-%d' % (role, index)
    octet = (10 if role == 'master' else 20) + index
    return model.Node(role=role, name=name, server_id='srv-%s' % name,
                      vnfc_id='vnfc-%s' % name, resource_name=role + 'Node',
                      stack_id='stack-%s' % name, parent_resource=None,
                      ssh_ip='10.254.0.%d' % octet,
                      nic_ip='10.254.0.%d' % octet,
                      compute_host=host % index, server_groups=tuple(groups),
                      status='CREATE_COMPLETE')


def topology(masters=1, workers=2, vip=None, anti_affinity=False):
    groups = ()
    worker_groups = ()
    if anti_affinity:
        groups = (model.ServerGroup('workerAntiAffinity', 'sg-1',
                                    ('anti-affinity',), ()),)
        worker_groups = ('sg-1',)
    return model.Topology(
        stack_id='stack-top',
        masters=tuple(node('master', i) for i in range(1, masters + 1)),
        workers=tuple(node('worker', i, groups=worker_groups)
                      for i in range(1, workers + 1)),
        vip=vip, server_groups=groups)


def context(params, operation='instantiate', hook='instantiate_end',
            request=None, vnf_id='inst-1', scale_out_ids=(), scale_names=(),
            grant=None, package_dir=None, api='v1'):
    """The context a hook call builds, for a dry run (no Tacker, no VIM)."""
    from k8s_mgmt import context as ctx_mod
    return ctx_mod.OperationContext(
        operation=operation, hook=hook, vnf_instance_id=vnf_id,
        flavour=params.flavour, stack_id='stack-top', params=params,
        request=request, vnf_instance={'id': vnf_id}, grant=grant,
        package_dir=package_dir, scale_out_ids=tuple(scale_out_ids),
        scale_names=tuple(scale_names), api=api)


def plan(params, topo, operation='instantiate', hook='instantiate_end',
         ready=(), unreachable=(), etcd_members=None, vip_prefix=None,
         **ctx_kwargs):
    """The phases the real operation yields, walked without connecting."""
    from k8s_mgmt.modes import catalog
    from k8s_mgmt.engine import run as run_mod
    facts = run_mod.Facts(topology=topo, ready=frozenset(ready),
                          unreachable=frozenset(unreachable),
                          etcd_members=etcd_members, vip_prefix=vip_prefix)
    ctx = context(params, operation, hook, **ctx_kwargs)
    return catalog.plan(ctx, facts)


def titles(phases):
    return [p.title for p in phases]


def phase(phases, title):
    found = [p for p in phases if p.title == title]
    assert len(found) == 1, (title, titles(phases))
    return found[0]


def calls(phase_):
    """The ScriptCalls of a phase's work, in order."""
    return [w.source for w in phase_.work if w.source is not None]
