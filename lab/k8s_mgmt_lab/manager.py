"""The lab as one object: network, VMs, real Keystone and Heat, and the
stand-in Nova, Neutron, Cinder and Glance that make a Heat server a VM.

``Lab.up`` builds everything from this process; the CLI runs it inside a
long-lived lab daemon (``k8s_mgmt_lab.daemon``) so the stand-ins stay up
after ``k8s-mgmt lab up`` returns (the control plane's services run on
their own, stopped by PID at ``lab down``). Status only needs the record
and the APIs, so any process can ask.
"""

import concurrent.futures
import json
import os
import re
import uuid

from oslo_log import log as logging

from k8s_mgmt import shipped
from k8s_mgmt.cli import package as package_cli
from k8s_mgmt_lab import stack_request
from k8s_mgmt_lab import user_data
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.kube import layer as standins_layer
from k8s_mgmt_lab.machines import ansible_server
from k8s_mgmt_lab.machines import cleanup
from k8s_mgmt_lab.machines import cni_mirror
from k8s_mgmt_lab.machines import k8s_repo
from k8s_mgmt_lab.machines import prereq
from k8s_mgmt_lab.machines import repo_server
from k8s_mgmt_lab.machines import net
from k8s_mgmt_lab.machines import vm as vm_mod
from k8s_mgmt_lab.machines import volumes as volumes_mod
from k8s_mgmt_lab.openstack import lab_region
from k8s_mgmt_lab.openstack import stacks as stacks_mod
from k8s_mgmt import package as package_mod
from k8s_mgmt_lab.machines import registry as registry_mod
# Re-exported: defined with the lab's settings, which the command line
# reads without importing the lab.
from k8s_mgmt_lab.settings import APIS  # noqa: F401
from k8s_mgmt_lab.settings import DEFAULT_STATE_DIR  # noqa: F401
from k8s_mgmt_lab.settings import FLAVOURS
from k8s_mgmt_lab.settings import LAB_FILE  # noqa: F401
from k8s_mgmt_lab.settings import LabSettings
from k8s_mgmt_lab.settings import PACKAGE_SUBDIR  # noqa: F401
from k8s_mgmt_lab.settings import read_record

LOG = logging.getLogger(__name__)

# Flavours whose cluster kubespray builds from the lab's Ansible server.
ANSIBLE_FLAVOURS = ('kubespray',)
# The port of the lab's Kubernetes apt repository on the bridge's gateway
# address (each lab has its own subnet, so its own address).
REPOSITORY_PORT = 8088
REPOSITORY_DIR = 'k8s-apt'
REPOSITORY_GNUPG = 'k8s-apt-gnupg'
REPOSITORY_CACHE = os.path.join(prereq.PACKAGE_CACHE, 'k8s-debs')
# Under the served repository tree: the mirror of the CNI presets'
# manifests (cni_mirror), served beside the apt repository.
CNI_MIRROR_DIR = 'github-raw'
# Under the state dir: console texts that replace a server's own.
CONSOLE_FAULTS = 'console'


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
    """The stand-in Nova's provisioner: a Nova server is a lab VM, booted
    under the server's id with the hostname Nova gives its name."""

    def __init__(self, vms):
        self.vms = vms

    def create_servers(self, specs):
        self.vms.create_many([(s.server_id, guest_hostname(s.name), s.ip)
                              for s in specs])

    def detach_interface(self, server_id, port_id, ip):
        """Nova's interface detach: the VM's NIC, when it holds the port's
        address, is unplugged and the address freed."""
        self.vms.unplug_nic(server_id, ip)

    def delete_servers(self, server_ids):
        for server_id in server_ids:
            self.vms.destroy(server_id)

    def console_output(self, server_id):
        """The VM's console, or the text of ``<state dir>/console/<server
        id>`` when that file exists: a fault the lab's tests inject (a
        console that lies about the host key), served by Nova as the
        console of that server."""
        injected = os.path.join(self.vms.state_dir, CONSOLE_FAULTS,
                                server_id)
        try:
            with open(injected) as handle:
                return handle.read()
        except FileNotFoundError:
            return self.vms.console_output(server_id)


def sample_on_subnet(body, subnet, password='ubuntu'):
    """A sample request on a lab whose subnet is not the samples' node
    network: that network, where the request names it (the NFS export
    range, k8s_node_cidr), becomes the lab's subnet; and a sample with an
    ``ansible`` section (the kubespray flavour) names the lab's Ansible
    server (:func:`sample_on_ansible_server`). Nothing else changes; a
    request an operator gives is used as given. The registry flavour's
    sample names nothing of the network but the network itself."""
    if 'k8s_cluster_installation_param' not in body['additionalParams']:
        return body
    root = body['additionalParams']['k8s_cluster_installation_param']
    if 'ansible' in root:
        sample_on_ansible_server(body, subnet, password)
    else:
        # The nodes install Kubernetes from the lab's mirror of
        # pkgs.k8s.io, as an operator's VMs without Internet do from
        # theirs.
        root['kubernetes_apt_repository'] = {
            'url': repository_url(subnet)}
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


def repository_url(subnet):
    """The base URL of the lab's Kubernetes apt repository on ``subnet``
    (its gateway address), as a request names it."""
    return k8s_repo.base_url(net.gateway_of(subnet), REPOSITORY_PORT)


def cni_mirror_url(subnet):
    """The URL of the lab's mirror of the CNI presets' manifests on
    ``subnet``, as a request's ``cni.mirror`` names it (served once
    :func:`build_cni_mirror` has laid it out)."""
    return cni_mirror.url(net.gateway_of(subnet), REPOSITORY_PORT,
                          CNI_MIRROR_DIR)


def build_cni_mirror(settings, source_root=None):
    """Lay the CNI presets' upstream manifests (read from the clones under
    ``source_root``, by default :func:`cni_mirror.default_source`, each
    checked against its pin) out in the lab's
    served repository tree, where the lab's server (up from ``lab up``,
    in whichever process) serves them; their URL for ``cni.mirror``."""
    cni_mirror.build(os.path.join(settings.state_dir, REPOSITORY_DIR,
                                  CNI_MIRROR_DIR), source_root)
    return cni_mirror_url(settings.subnet)


def sample_on_ansible_server(body, subnet, password='ubuntu'):
    """The kubespray sample's ``ansible`` section filled with the lab's
    Ansible server: its address on ``subnet``, user and password, the
    kubespray root and the inventory path."""
    return ansible_server.fill_request(body, {
        'ip': ansible_server.server_ip(subnet),
        'username': ansible_server.USER, 'password': password,
        'kubespray_root_path': ansible_server.KUBESPRAY_ROOT,
        'transferring_inventory_path': ansible_server.INVENTORY_PATH})


def build_package(settings, tacker=False, api='v1'):
    """The lab's VNF package (zip and directory) for Tacker's ``api``;
    for a lab that runs Tacker under a new VNFD id (Tacker never onboards
    one twice: its vnfd row outlives the package, and a lab's Tacker may
    outlive the lab)."""
    package_mod.build(output=settings.package_zip,
                      output_dir=settings.package_dir,
                      vnfd_id=str(uuid.uuid4()) if tacker else None,
                      api=api)


class Lab(object):
    """One lab on this machine, identified by its state directory."""

    def __init__(self, settings=None):
        self.settings = settings or LabSettings()
        self.network = None
        self.vms = None
        self.region = None
        self.repository = None

    # -- building -----------------------------------------------------------

    def up(self, request, masters=None, workers=None, max_workers=None,
           stack=True):
        """Package, bridge, real Keystone and Heat, the stand-ins, and the
        stack for an InstantiateVnfRequest body (or a flavour name: its
        sample request); the stand-ins keep serving in this process.

        ``stack=False`` builds no stack (and so no VM): the network, the
        package, the control plane and the stand-ins only, for a client
        that creates the stack itself. The record's ``stack_id`` is then
        None. A lab with a control plane of its own runs Tacker and builds
        no stack either: Tacker's OpenStack infra driver creates it at
        instantiate (the daemon then registers the lab's OpenStack as
        Tacker's default VIM: :func:`k8s_mgmt_lab.tacker_lcm.vim.
        register_default`).

        The stack is created by real Heat from the flavour's BaseHOT and
        the parameters that the package's UserData returns for
        ``request`` through Tacker's own code path, as an operator's
        Tacker would create it; ``masters``/``workers`` then override the
        groups' desired capacities. The worker group's max_size is the
        BaseHOT's (5 in the sample), raised to ``max_workers`` or
        ``workers`` when either is larger (as an operator edits the
        template), so a lab bigger than the sample still scales."""
        s = self.settings
        if isinstance(request, str) and request in FLAVOURS:
            request = sample_on_subnet(shipped.sample_request(request),
                                       s.subnet, s.password)
        flavour = request_flavour(request)
        network_id = stack_request.request_network(request)
        if os.path.exists(s.lab_file):
            raise LabError('a lab is already up in %s; run "k8s-mgmt lab '
                           'down" first' % s.state_dir)
        registry_mod.claim_state_dir(s.state_dir)
        # --own-control-plane with --control-plane DIR: a plane of the
        # lab's own kept in DIR (warm for the next lab), not shared.
        self.region = lab_region.LabRegion(
            s.state_dir, s.tag, None if s.own_control_plane else
            s.control_plane or lab_region.shared_plane_default(),
            kept_plane=s.control_plane if s.own_control_plane else None,
            conductors=s.conductors,
            warm_plane=lab_region.warm_plane_default())
        if s.api != 'v1' and not self.region.tacker:
            raise LabError('--api %s needs a lab that runs Tacker: add '
                           '--own-control-plane' % s.api)
        if self.region.tacker and (masters or workers or max_workers):
            raise LabError('a lab with its own control plane runs Tacker, '
                           'which sizes the VNF from the request\'s '
                           'instantiation level: --masters, --workers and '
                           '--max-workers apply only to a lab on a shared '
                           'control plane')
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            # The control plane starts (10 to 50 s) while the package, the
            # request's parameters, the bridge and the VM layers are made.
            plane = pool.submit(self.region.start_plane)
            try:
                parameters = self._prepare(request, masters, workers)
            finally:
                concurrent.futures.wait([plane])
            plane.result()
        hosts = max(s.compute_hosts, (workers or 0) + 1)
        uses_ansible = flavour in ANSIBLE_FLAVOURS
        ansible_ip = ansible_server.server_ip(s.subnet)
        self.region.serve(
            s.subnet, network_id, hosts, VMProvisioner(self.vms),
            volumes_mod.LoopVolumes(s.state_dir, self.vms),
            reserved={ansible_ip: 'ansible-server'} if uses_ansible
            else None)
        stack_name = 'k8s-lab-%s' % flavour
        heat = self.region.stacks()
        path = None
        # With a Tacker, Tacker creates the stack at instantiate.
        if stack and not self.region.tacker:
            template, files = stacks_mod.package_templates(s.package_dir,
                                                           flavour)
            template = stack_request.raise_max_size(
                template, 'workerNode', max(workers or 0, max_workers or 0))
            path = heat.create(stack_name, template, files, parameters)
            heat.wait(path, 'CREATE')
        server = (ansible_server.start(
            self.vms, ansible_ip, s.password,
            downloads=k8s_repo.downloads_url(repository_url(s.subnet)))
            if uses_ansible else None)
        record = {
            'flavour': flavour,
            'stack_id': path.split('/')[1] if path else None,
            'stack_name': stack_name if path else None,
            'daemon_pid': os.getpid(),
            'request': request,
            'api': s.api,
            'heat': dict(self.region.credentials),
            'openstack': self.region.record(daemon_log(s)),
            'vnfc_ids': ({srv.server_id: str(uuid.uuid4())
                          for srv in heat.servers(path)} if path else {}),
        }
        if server is not None:
            record['ansible_server'] = server
            ansible_server.give_host_key(request, server)
        write_record(s.lab_file, record)
        return record

    def _prepare(self, request, masters, workers):
        """The package, the request checked against it, its stack
        parameters, the bridge and the VM manager with the Kubernetes
        stand-ins' layer; the stack parameters."""
        s = self.settings
        build_package(s, tacker=bool(self.region.tacker), api=s.api)
        if s.api == 'v1':
            stack_request.check_request(request, s.package_dir)
            parameters = user_data.hot_parameters(s.package_zip, request)
            stack_request.override_group_sizes(parameters, masters=masters,
                                               workers=workers)
        else:
            # Tacker's v2 DefaultUserData makes the stack's parameters
            # at instantiate; the request is checked in its v2 shape.
            stack_request.check_request(package_cli.v2_request(request),
                                        s.package_dir, api=s.api)
            parameters = None
        self.network = net.LabNetwork(s.state_dir, s.subnet, s.bridge, s.tag)
        self.network.up()
        self.repository = serve_repository(s, self.network.gateway)
        # The stand-ins every VM has from the start (systemctl, exportfs).
        layer = standins_layer.write_layer(
            os.path.join(s.state_dir, 'standins-layer'),
            init_delay=s.init_delay, join_delay=s.join_delay,
            upgrade_delay=s.upgrade_delay,
            etcd_timing=s.etcd_timing)
        self.vms = vm_mod.VMManager(self.network, s.state_dir, s.password,
                                    extra_layers=[layer],
                                    bind_paths=standins_layer.host_paths())
        return parameters

    def stop_api(self):
        """Stop serving the stand-ins and the repository (the daemon's
        part)."""
        if self.region is not None:
            self.region.stop_serving()
        if self.repository is not None:
            self.repository.close()
            self.repository = None

    def down(self):
        """Remove everything this lab made; safe after a crash."""
        self.stop_api()
        return teardown(self.settings.state_dir, tag=self.settings.tag,
                        bridge=self.settings.bridge)


def serve_repository(settings, gateway):
    """The lab's Kubernetes apt repository (every supported minor, the
    stand-ins' packages), built into the state directory and served on
    the bridge's ``gateway`` address at REPOSITORY_PORT."""
    root = os.path.join(settings.state_dir, REPOSITORY_DIR)
    gnupg = os.path.join(settings.state_dir, REPOSITORY_GNUPG)
    os.makedirs(gnupg, mode=0o700, exist_ok=True)
    payload = standins_layer.package_payload()
    k8s_repo.build(root, gnupg, REPOSITORY_CACHE, payload)
    k8s_repo.write_downloads(root, payload)
    return repo_server.serve(root, gateway, REPOSITORY_PORT,
                             log_path=os.path.join(settings.state_dir,
                                                   'k8s-apt.log'))


def teardown(state_dir, tag=None, bridge=None):
    """The lab's region (or its own control plane) released, then every
    VM, mount, link and file removed; safe after a crash."""
    settings = LabSettings(state_dir=state_dir)
    try:
        record = read_record(settings)
    except LabError:
        record = None
    lab_region.release(state_dir, record)
    return cleanup.teardown(state_dir, tag=tag, bridge=bridge)


def daemon_log(settings):
    """Where the lab daemon (and so the stand-ins) logs."""
    return settings.state_dir.rstrip('/') + '.daemon.log'


def request_flavour(request):
    """flavourId of an InstantiateVnfRequest body the lab can build."""
    flavour = request.get('flavourId') if isinstance(request, dict) else None
    if flavour not in FLAVOURS:
        raise LabError('request: flavourId must be one of %s, got %r'
                       % (', '.join(FLAVOURS), flavour))
    return flavour


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
