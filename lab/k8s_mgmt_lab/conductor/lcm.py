"""LCM on the lab: the driver's hooks called the way Tacker's conductor calls
them.

The lab has no Tacker, so this module plays the conductor's part: it builds
the objects Tacker would pass (as plain dicts; the driver reads dicts and
Tacker objects alike through :func:`k8s_mgmt.context.field`) and calls the
hooks on ONE instance of the driver the flavour's VNFD names (loaded from
its ``tacker.tacker.mgmt.drivers`` entry point) with keyword
arguments only, exactly as the conductor does:
``instantiate_start`` before Heat (no kwargs) and ``instantiate_end`` after
it with ``vnf=<vnf dict>``. Two lab-only kwargs tell the driver what Tacker
would otherwise look up itself: ``vnf_package_path`` (the package built into
the lab's state dir) and ``vim_info`` (the lab's Keystone credentials).
"""

import copy
import dataclasses
import json
import os
import time
import uuid

from oslo_log import log as logging

from k8s_mgmt import conf
from k8s_mgmt import package as package_mod
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import drivers
from k8s_mgmt_lab.conductor import status as status_mod
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.kube import layer

LOG = logging.getLogger(__name__)

# descriptor_id of the sample VNFD (Definitions/sample_kubernetes_types.yaml).
VNFD_ID = '2807101a-7250-45ae-8908-d3151a302ea9'
DRIVER_STATE_SUBDIR = 'driver'


def stored_params(params):
    """additionalParams the way Tacker 16 stores them in
    ``instantiated_vnf_info``: as the request sent them (its v1 API
    snake_cases every key of the body but those under additionalParams)."""
    return copy.deepcopy(params)


def driver_state_dir(settings):
    """Where the driver keeps its state for lab instances (``lab down``
    removes it with the rest of the state dir)."""
    return os.path.join(settings.state_dir, DRIVER_STATE_SUBDIR)


def package_dir(settings):
    return settings.package_dir


def read_lab(settings):
    """lab.json of a lab that is up (its daemon alive), else LabError."""
    record = manager.read_record(settings)
    if record is None:
        raise LabError('no lab is up in %s; run "k8s-mgmt lab up"'
                       % settings.state_dir)
    if not status_mod.pid_alive(record.get('daemon_pid')):
        raise LabError('the lab daemon (pid %s) is not running; run '
                       '"k8s-mgmt lab down" to clean up'
                       % record.get('daemon_pid'))
    return record


def refuse_tacker(record):
    """LabError when the lab runs a Tacker: its VNF is Tacker's, and two
    conductors must never act on one VNF."""
    if record.get('tacker'):
        raise LabError('the lab runs Tacker, which drives its VNF: "k8s-mgmt '
                       'lab instantiate|scale|heal|terminate" go through '
                       'Tacker\'s API; the lab\'s own conductor drives only '
                       'a lab on a shared control plane')


def instance_id(settings, record):
    """The lab's VNF instance id: made once, kept in lab.json."""
    if not record.get('vnf_instance_id'):
        record['vnf_instance_id'] = str(uuid.uuid4())
        manager.write_record(settings.lab_file, record)
    return record['vnf_instance_id']


def vim_info(record):
    """The VIM as Tacker's ``_get_vim`` hands it over: the lab's Keystone
    credentials and its region (``region``, as Tacker names it)."""
    heat = record['heat']
    auth = {key: heat[key] for key in (
        'auth_url', 'username', 'password', 'project_name',
        'user_domain_name', 'project_domain_name')}
    if heat.get('region_name'):
        auth['region'] = heat['region_name']
    return {'vim_type': 'openstack', 'vim_auth': auth}


def vim_connections(body):
    """The request's vimConnectionInfo as Tacker's objects hold it (the
    instance carries them at every hook but ``terminate_end``)."""
    return [{'id': conn.get('id'), 'vim_id': conn.get('vimId'),
             'vim_type': conn.get('vimType'), 'access_info': {},
             'interface_info': {}, 'extra': {}}
            for conn in body.get('vimConnectionInfo') or ()]


def instantiate_request(body):
    """InstantiateVnfRequest from an API body (snake_case params, as sent)."""
    return {'flavour_id': body['flavourId'],
            'instantiation_level_id': body.get('instantiationLevelId'),
            'vim_connection_info': vim_connections(body),
            'additional_params': copy.deepcopy(
                body.get('additionalParams') or {})}


def vnfc_resources(topology):
    return [{'id': node.vnfc_id, 'vdu_id': node.resource_name,
             'compute_resource': {
                 'resource_id': node.server_id,
                 'vim_level_resource_type': 'OS::Nova::Server'}}
            for node in topology.all_nodes()]


def vnfc_skeleton(topology):
    """What Tacker's conductor gives instantiate_start: one VNFC per VDU
    instance of the instantiation level, with no server yet."""
    return [dict(entry, compute_resource={})
            for entry in vnfc_resources(topology)]


def vnf_instance(inst_id, record, request, topology=None, skeleton=None):
    """The VnfInstance as a dict; ``topology`` None means "before Heat"
    (``skeleton``: the VNFCs without servers, as Tacker has them then)."""
    info = {'flavour_id': request['flavour_id'],
            'additional_params': stored_params(request['additional_params'])}
    if topology is not None:
        info.update(instance_id=record['stack_id'],
                    vnfc_resource_info=vnfc_resources(topology))
    elif skeleton is not None:
        info.update(vnfc_resource_info=skeleton)
    return {'id': inst_id, 'vnfd_id': VNFD_ID,
            'instantiation_state': 'NOT_INSTANTIATED',
            'vim_connection_info': copy.deepcopy(
                request['vim_connection_info']),
            'instantiated_vnf_info': info}


def vnf_dict(inst_id, record):
    """The conductor's ``vnf`` kwarg (its VNF DB row, as a dict)."""
    return {'id': inst_id, 'vnfd_id': VNFD_ID,
            'instance_id': record['stack_id'], 'status': 'PENDING_CREATE',
            'attributes': {}, 'placement_attr': {}, 'vim_id': None,
            'grant': None}


@dataclasses.dataclass
class InstantiateResult:
    vnf_instance_id: str
    flavour: str
    seconds_start: float
    seconds_end: float
    driver_state: str               # <driver state dir>/<instance id>
    package_dir: str


def use_driver_state_dir(settings):
    """Configure the driver as the lab's tacker.conf would.

    Its state lives inside the lab state dir (``lab down`` removes it) and
    the CNI manifest is the one in the lab image: lab VMs have no Internet.
    """
    path = driver_state_dir(settings)
    os.makedirs(path, mode=0o700, exist_ok=True)
    conf.CONF.set_override('state_dir', path, group='k8s_mgmt')
    conf.CONF.set_override('cni_manifest', layer.CNI_MANIFEST,
                           group='k8s_mgmt')
    return path


def instantiate(settings, driver=None, request_body=None,
                package_files=None):
    """instantiate_start then instantiate_end on the lab's stack.

    ``driver`` defaults to the one the flavour's VNFD names, loaded from
    its entry point (:mod:`k8s_mgmt_lab.conductor.drivers`); one instance
    serves both hooks, as in Tacker. Errors of the hooks propagate unchanged.
    ``package_files`` ({path in the package: bytes}) go into the package
    the driver reads, beside the shipped files (a registry's CA, a Helm
    archive), for this and every later operation.
    """
    record = read_lab(settings)
    refuse_tacker(record)
    if request_body is not None and request_body != record.get('request'):
        # scale, heal and status go on with the body the cluster was
        # built with.
        record['request'] = request_body
        manager.write_record(settings.lab_file, record)
    body = manager.lab_request(record)
    inst_id = instance_id(settings, record)
    pkg = package_dir(settings)
    package_mod.build(output_dir=pkg)
    for relative, data in (package_files or {}).items():
        target = os.path.join(pkg, *relative.split('/'))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, 'wb') as handle:
            handle.write(data)
    if driver is None:
        driver = drivers.load(pkg, record['flavour'])
    state_dir = use_driver_state_dir(settings)
    request = instantiate_request(body)
    lab_kwargs = {'vnf_package_path': pkg, 'vim_info': vim_info(record)}

    # The lab's stack stands from "lab up" on: one read serves the
    # skeleton Tacker has before Heat and the instance it has after.
    topology = status_mod.read_topology(record)
    began = time.monotonic()
    driver.instantiate_start(
        context=None, vnf_instance=vnf_instance(
            inst_id, record, request, skeleton=vnfc_skeleton(topology)),
        instantiate_vnf_request=request, grant=None, grant_request=None,
        **lab_kwargs)
    started = time.monotonic()
    driver.instantiate_end(
        context=None,
        vnf_instance=vnf_instance(inst_id, record, request, topology),
        instantiate_vnf_request=request, grant=None, grant_request=None,
        vnf=vnf_dict(inst_id, record), **lab_kwargs)
    ended = time.monotonic()
    return InstantiateResult(
        vnf_instance_id=inst_id, flavour=record['flavour'],
        seconds_start=started - began, seconds_end=ended - started,
        driver_state=os.path.join(state_dir, inst_id), package_dir=pkg)


def load_yaml(path):
    import yaml
    with open(path) as handle:
        return yaml.safe_load(handle)


def cluster_report(result):
    """Nodes (from the cluster's API), VIM endpoint and kubeconfig path."""
    from k8s_mgmt.kube import client as kube_client
    from k8s_mgmt import state as state_mod
    vim_path = os.path.join(result.driver_state, state_mod.VIM_CONFIG)
    kube_path = os.path.join(result.driver_state, state_mod.KUBECONFIG)
    try:
        vim = load_yaml(vim_path)
    except (OSError, ValueError) as err:
        raise LabError('instantiate_end finished but left no VIM config '
                       '(%s): %s' % (vim_path, err))
    with kube_client.ClusterAPI(vim['auth_url'], vim['bearer_token'],
                                vim['ssl_ca_cert']) as api:
        nodes = api.nodes()
    return {
        'vnf_instance_id': result.vnf_instance_id,
        'flavour': result.flavour,
        'vim_endpoint': vim['auth_url'],
        'kubeconfig': kube_path,
        'vim_config': vim_path,
        'nodes': [{'name': n.name, 'ready': n.ready, 'roles': list(n.roles),
                   'labels': n.labels} for n in
                  sorted(nodes.values(), key=lambda n: n.name)],
        'seconds': {'instantiate_start': round(result.seconds_start, 2),
                    'instantiate_end': round(result.seconds_end, 2)},
    }


def registry_report(result):
    """The registry VNF's address and CA, as the driver published them."""
    from k8s_mgmt import state as state_mod
    path = os.path.join(result.driver_state, state_mod.REGISTRY)
    try:
        with open(path) as handle:
            record = json.load(handle)
    except (OSError, ValueError) as err:
        raise LabError('instantiate_end finished but published no '
                       'registry (%s): %s' % (path, err))
    return {
        'vnf_instance_id': result.vnf_instance_id,
        'flavour': result.flavour, 'url': record['url'],
        'server': record['server'], 'certificate': record['certificate'],
        'ca_sha256': record['ca_sha256'], 'record': path,
        'seconds': {'instantiate_start': round(result.seconds_start, 2),
                    'instantiate_end': round(result.seconds_end, 2)},
    }


def dump(report):
    return json.dumps(report, indent=2, sort_keys=True)
