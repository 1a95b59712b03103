"""The lab as one object: network, VMs, the cloud model and its APIs.

``Lab.up`` builds everything in this process; the CLI runs it inside a
long-lived lab daemon (``k8s_mgmt_lab.daemon``) so the Heat API stays up
after ``k8s-mgmt lab up`` returns. ``Lab.status`` only needs the state file
and the API, so any process can ask.
"""

import dataclasses
import json
import os
import re
import secrets as pysecrets
import uuid

from oslo_log import log as logging

from k8s_mgmt import shipped
from k8s_mgmt_lab import api
from k8s_mgmt_lab import cloud as cloud_mod
from k8s_mgmt_lab import user_data
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.kube import layer as standins_layer
from k8s_mgmt_lab.machines import ansible_server
from k8s_mgmt_lab.machines import cleanup
from k8s_mgmt_lab.machines import net
from k8s_mgmt_lab.machines import vm as vm_mod
from k8s_mgmt_lab.machines import volumes as volumes_mod
from k8s_mgmt import package as package_mod
from k8s_mgmt_lab.machines import registry as registry_mod

LOG = logging.getLogger(__name__)

DEFAULT_STATE_DIR = '/var/lib/k8s-mgmt-lab'
FLAVOURS = ('simple', 'complex', 'podaffinity', 'storage', 'kubespray')
# Flavours whose cluster kubespray builds from the lab's Ansible server.
ANSIBLE_FLAVOURS = ('kubespray',)
LAB_FILE = 'lab.json'
PACKAGE_SUBDIR = 'vnf_package'
ROLE_OF_RESOURCE = {'masterNode': 'master', 'workerNode': 'worker',
                    'storage_server': 'storage', 'externalLB': 'external_lb'}


@dataclasses.dataclass(frozen=True)
class LabSettings:
    state_dir: str = DEFAULT_STATE_DIR
    subnet: str = net.DEFAULT_SUBNET
    bridge: str = net.DEFAULT_BRIDGE
    tag: str = net.DEFAULT_TAG
    password: str = 'ubuntu'         # of user ubuntu on every lab VM
    compute_hosts: int = 4
    init_delay: float = 0.0          # seconds the kubeadm init stand-in takes
    join_delay: float = 0.0          # seconds the kubeadm join stand-in takes
    # etcd's raft timing in the VMs: 'lab' (slow-network tuning, for a
    # loaded machine) or 'kubeadm' (etcd's defaults, as kubeadm runs it).
    etcd_timing: str = 'lab'

    @property
    def lab_file(self):
        return os.path.join(self.state_dir, LAB_FILE)

    @property
    def package_dir(self):
        """The VNF package built for this lab, unpacked as Tacker keeps
        it."""
        return os.path.join(self.state_dir, PACKAGE_SUBDIR)

    @property
    def package_zip(self):
        return self.package_dir + '.zip'


def guest_hostname(server_name):
    """The hostname a guest gets for a server name, as Nova's
    sanitize_hostname makes it: lower case, '_' and ' ' as '-', characters
    no hostname has dropped; so ``storage_server`` boots as
    ``storage-server``. A '.' becomes '-' too: a lab VM's hostname is one
    label."""
    name = re.sub(r'[ _.]', '-', server_name.lower())
    name = re.sub(r'[^a-z0-9-]', '', name)
    return name[:63].strip('.-') or 'server'


class VMProvisioner(object):
    """LabCloud's provisioner: a Nova server is a lab VM."""

    def __init__(self, vms):
        self.vms = vms

    def create_servers(self, specs):
        self.vms.create_many([(s.server_id, guest_hostname(s.name), s.ip)
                              for s in specs])

    def delete_servers(self, server_ids):
        for server_id in server_ids:
            self.vms.destroy(server_id)

    def console_output(self, server_id):
        return self.vms.console_output(server_id)


def sample_on_subnet(body, subnet, password='ubuntu'):
    """A sample request on a lab whose subnet is not the samples' node
    network: that network, where the request names it (the NFS export
    range, k8s_node_cidr), becomes the lab's subnet; and a sample with an
    ``ansible`` section (the kubespray flavour) names the lab's Ansible
    server (:func:`sample_on_ansible_server`). Nothing else changes; a
    request an operator gives is used as given."""
    root = body['additionalParams']['k8s_cluster_installation_param']
    if 'ansible' in root:
        sample_on_ansible_server(body, subnet, password)
    if subnet == net.DEFAULT_SUBNET:
        return body
    proxy = root.get('proxy') or {}
    if proxy.get('k8s_node_cidr') == net.DEFAULT_SUBNET:
        proxy['k8s_node_cidr'] = subnet
    storage = root.get('storage_server') or {}
    for export in storage.get('nfs_server_setup_params') or ():
        if export.get('export_to') == net.DEFAULT_SUBNET:
            export['export_to'] = subnet
    return body


def sample_on_ansible_server(body, subnet, password='ubuntu'):
    """The kubespray sample's ``ansible`` section filled with the lab's
    Ansible server: its address on ``subnet``, user and password, the
    kubespray root and the inventory path."""
    return ansible_server.fill_request(body, {
        'ip': ansible_server.server_ip(subnet),
        'username': ansible_server.USER, 'password': password,
        'kubespray_root_path': ansible_server.KUBESPRAY_ROOT,
        'transferring_inventory_path': ansible_server.INVENTORY_PATH})


class Lab(object):
    """One lab on this machine, identified by its state directory."""

    def __init__(self, settings=None):
        self.settings = settings or LabSettings()
        self.network = None
        self.vms = None
        self.cloud = None
        self.api_server = None

    # -- building -----------------------------------------------------------

    def up(self, request, masters=None, workers=None, max_workers=None,
           stack=True):
        """Package, bridge, VMs and stack for an InstantiateVnfRequest
        body (or a flavour name: its sample request); then serve the APIs.

        ``stack=False`` builds no stack (and so no VM): the network, the
        package and the Keystone and Heat APIs only, for a client that
        POSTs the stack itself, as Tacker's OpenStack infra driver does.
        The record's ``stack_id`` is then None.

        The stack is built from the parameters that the package's UserData
        returns for ``request`` through Tacker's own code path, as an
        operator's Tacker would build it; ``masters``/``workers`` then
        override the groups' desired capacities. The worker group's
        max_size is the BaseHOT's (5 in the sample), raised to
        ``max_workers`` or ``workers`` when either is larger, so a lab
        bigger than the sample still scales both ways."""
        s = self.settings
        if isinstance(request, str) and request in FLAVOURS:
            request = sample_on_subnet(shipped.sample_request(request),
                                       s.subnet, s.password)
        flavour = request_flavour(request)
        if os.path.exists(s.lab_file):
            raise LabError('a lab is already up in %s; run "k8s-mgmt lab '
                           'down" first' % s.state_dir)
        registry_mod.claim_state_dir(s.state_dir)
        package_mod.build(output=s.package_zip, output_dir=s.package_dir)
        check_request(request, s.package_dir)
        parameters = user_data.hot_parameters(s.package_zip, request)
        override_group_sizes(parameters, masters=masters, workers=workers)
        hosts = max(s.compute_hosts, (workers or 0) + 1)
        self.network = net.LabNetwork(s.state_dir, s.subnet, s.bridge, s.tag)
        self.network.up()
        # Kubernetes stand-ins at the real tools' paths in every VM.
        layer = standins_layer.write_layer(
            os.path.join(s.state_dir, 'standins-layer'),
            init_delay=s.init_delay, join_delay=s.join_delay,
            etcd_timing=s.etcd_timing)
        self.vms = vm_mod.VMManager(self.network, s.state_dir, s.password,
                                    extra_layers=[layer],
                                    bind_paths=standins_layer.host_paths())
        self.cloud = cloud_mod.LabCloud(
            s.package_dir, s.subnet, provisioner=VMProvisioner(self.vms),
            compute_hosts=hosts,
            state_file=os.path.join(s.state_dir, 'cloud.json'),
            group_max_sizes={'workerNode': max(workers or 0,
                                               max_workers or 0)},
            networks=request_networks(request),
            volumes=volumes_mod.LoopVolumes(s.state_dir, self.vms))
        stack_name = 'k8s-lab-%s' % flavour
        uses_ansible = flavour in ANSIBLE_FLAVOURS
        if uses_ansible:
            # Taken before the stack is built: no port may get it.
            self.cloud.state['addresses'][ansible_server.server_ip(
                s.subnet)] = ansible_server.VM_ID
        stack_id = (self.cloud.create_stack(flavour, parameters,
                                            name=stack_name)
                    if stack else None)
        server = (ansible_server.start(
            self.vms, ansible_server.server_ip(s.subnet), s.password)
            if uses_ansible else None)
        self.api_server, _url = api.serve(
            self.cloud, password=pysecrets.token_urlsafe(12))
        record = {
            'flavour': flavour, 'stack_id': stack_id,
            'stack_name': stack_name if stack_id else None,
            'daemon_pid': os.getpid(),
            'request': request,
            'heat': {'auth_url': self.api_server.auth_url,
                     'username': self.api_server.username,
                     'password': self.api_server.password,
                     'project_name': self.api_server.project_name,
                     'user_domain_name': 'Default',
                     'project_domain_name': 'Default'},
            'vnfc_ids': ({srv['server_id']: str(uuid.uuid4())
                          for srv in self.cloud.servers(stack_id)}
                         if stack_id else {}),
        }
        if server is not None:
            record['ansible_server'] = server
            ansible_server.give_host_key(request, server)
        write_record(s.lab_file, record)
        return record

    def stop_api(self):
        if self.api_server is not None:
            self.api_server.stop()
            self.api_server = None

    def down(self):
        """Remove everything this lab made; safe after a crash."""
        self.stop_api()
        return cleanup.teardown(self.settings.state_dir,
                                tag=self.settings.tag,
                                bridge=self.settings.bridge)


def override_group_sizes(parameters, masters=None, workers=None):
    """Set the master and worker groups' desired capacities in the HOT
    parameters (None: as the request's instantiation level says). Other
    VDUs, such as the storage server, are no group and keep theirs."""
    sizes = {'master': masters, 'worker': workers}
    for vdu, role in ROLE_OF_RESOURCE.items():
        if sizes.get(role) is not None and vdu in parameters['nfv']['VDU']:
            parameters['nfv']['VDU'][vdu]['desired_capacity'] = sizes[role]
    return parameters


def request_flavour(request):
    """flavourId of an InstantiateVnfRequest body the lab can build."""
    flavour = request.get('flavourId') if isinstance(request, dict) else None
    if flavour not in FLAVOURS:
        raise LabError('request: flavourId must be one of %s, got %r'
                       % (', '.join(FLAVOURS), flavour))
    return flavour


def check_request(request, package_dir):
    """The driver's own validation, with the built package: a typo is
    refused before the lab makes any VM."""
    from k8s_mgmt import exceptions
    from k8s_mgmt import params
    try:
        params.load_request(request, package_dir=package_dir)
    except exceptions.ValidationError as err:
        raise LabError('request: %s' % '; '.join(
            '%s: %s' % pair for pair in err.problems))


def request_networks(request):
    """{network id: name} of the networks the request's extVirtualLinks
    name: an operator creates them before instantiating; the lab puts them
    all on its one bridge and subnet."""
    networks = {}
    for link in request.get('extVirtualLinks') or []:
        if isinstance(link, dict) and isinstance(link.get('resourceId'),
                                                 str):
            networks.setdefault(link['resourceId'],
                                str(link.get('id') or link['resourceId']))
    return networks


def lab_request(record):
    """The InstantiateVnfRequest body the lab was built (or instantiated)
    with; the flavour's sample for a lab recorded before requests were."""
    return record.get('request') or shipped.sample_request(
        record['flavour'])


def write_record(path, record):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + '.tmp'
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as handle:
        json.dump(record, handle, indent=1)
    os.replace(tmp, path)


def read_record(settings):
    try:
        with open(settings.lab_file) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise LabError('cannot read %s: %s' % (settings.lab_file, err))
