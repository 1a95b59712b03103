"""The typed model of ``additionalParams.k8s_cluster_installation_param``.

Instances are built only by :mod:`k8s_mgmt.params.validate`, so every value
here has been checked: CIDRs are normalised network strings, package paths
are normalised relative POSIX paths, and passwords, private keys and proxy
URLs are :class:`~k8s_mgmt.secrets.Secret`. Fields that a request may omit
are ``None`` (or an empty tuple); which ones an operation needs is decided by
the validator, not here.

Note: ``copy.deepcopy`` and ``dataclasses.asdict`` refuse Secrets (they
cannot be pickled); use :meth:`ClusterParams.to_dict` instead.
"""

import dataclasses
from typing import Optional, Tuple

from k8s_mgmt.secrets import Secret

# What the install step uses when the request names no CIDR: Calico's default
# pod network and kubeadm's default service network. Overlap checks use them.
DEFAULT_POD_CIDR = '192.168.0.0/16'
DEFAULT_SERVICE_CIDR = '10.96.0.0/12'

HA_FLAVOURS = ('complex', 'podaffinity')
# Built by kubespray from an Ansible server (mgmt-drivers-kubespray).
KUBESPRAY_FLAVOUR = 'kubespray'
# One VM turned into a private container registry (no cluster).
REGISTRY_FLAVOUR = 'registry'
KNOWN_FLAVOURS = ('simple', 'storage', KUBESPRAY_FLAVOUR,
                  REGISTRY_FLAVOUR) + HA_FLAVOURS
OPERATIONS = ('instantiate', 'scale', 'heal', 'terminate', 'upgrade',
              'certs')


@dataclasses.dataclass(frozen=True)
class NodeGroupParams:
    """How to reach the VMs of one group (all masters, or all workers)."""

    aspect_id: Optional[str] = None
    ssh_cp_name: Optional[str] = None
    nic_cp_name: Optional[str] = None
    username: Optional[str] = None
    password: Optional[Secret] = None
    ssh_private_key: Optional[Secret] = None


@dataclasses.dataclass(frozen=True)
class MasterNodeParams(NodeGroupParams):
    """Master group: also the cluster networks and the API endpoint CPs."""

    pod_cidr: Optional[str] = None
    cluster_cidr: Optional[str] = None  # the Kubernetes service network
    cluster_cp_name: Optional[str] = None
    cluster_fip_name: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class WorkerNodeParams(NodeGroupParams):
    """Worker group."""


@dataclasses.dataclass(frozen=True)
class ProxyParams:
    http_proxy: Optional[Secret] = None   # URLs may hold user:password@
    https_proxy: Optional[Secret] = None
    no_proxy: Optional[str] = None
    k8s_node_cidr: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class KubernetesAptRepository:
    """Where the nodes install kubeadm, kubelet and kubectl from: an apt
    repository laid out as pkgs.k8s.io (``url`` + ``v1.MINOR/deb/``), and
    its signing key, by URL or as a file of the VNF package (neither: the
    minor's ``Release.key``)."""

    url: str                          # ends with "/"
    key_url: Optional[str] = None
    key_path: Optional[str] = None    # relative to the package root


@dataclasses.dataclass(frozen=True)
class RegistryConnection:
    """A private container registry every node pulls from: an entry of
    ``private_registry_connection_info``, in Tacker's sample driver's
    shape (``connection_type`` 0 for http, 1 for https; ours also takes
    the words), normalised to the words."""

    connection_type: str              # 'http' or 'https'
    server: str                       # HOST[:PORT]
    certificate_path: Optional[str] = None   # the CA, in the package
    hosts_string: Optional[str] = None       # one /etc/hosts line
    # Ours: a login every node's containerd sends when the registry asks.
    username: Optional[str] = None
    password: Optional[Secret] = None

    @property
    def url(self):
        return '%s://%s' % (self.connection_type, self.server)


@dataclasses.dataclass(frozen=True)
class HelmInstall:
    """Helm on every master, pinned: its release archive
    (``helm-vVERSION-linux-ARCH.tar.gz``) from the VNF package
    (``archive_path``) or from a URL with its SHA-256."""

    version: str                      # 3.16.2 (no leading v)
    archive_path: Optional[str] = None
    url: Optional[str] = None
    sha256: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class CniChoice:
    """The cluster's CNI: a preset of :mod:`k8s_mgmt.cni_presets`, or a
    manifest of the operator's (a URL with its SHA-256, or a file of the
    VNF package); Multus beside it; ``mirror``: where the pinned
    manifests are fetched instead of GitHub (the same paths below it)."""

    preset: Optional[str] = None
    # An http(s) URL, or a path relative to the package root.
    manifest: Optional[str] = None
    sha256: Optional[str] = None
    mirror: Optional[str] = None          # ends with "/"
    multus: bool = False

    @property
    def manifest_url(self):
        if self.manifest and self.manifest.startswith(('http://',
                                                       'https://')):
            return self.manifest
        return None

    @property
    def manifest_path(self):
        return None if self.manifest_url else self.manifest


@dataclasses.dataclass(frozen=True)
class CinderVolumeSetup:
    volume_resource_id: str
    mount_to: str


@dataclasses.dataclass(frozen=True)
class NfsExport:
    export_dir: str
    export_to: str  # an IP address or a network, normalised
    # Root on a client stays root on the share (see doc/source/storage.rst).
    no_root_squash: bool = False


@dataclasses.dataclass(frozen=True)
class StorageServerParams:
    ssh_cp_name: Optional[str] = None
    username: Optional[str] = None
    password: Optional[Secret] = None
    ssh_private_key: Optional[Secret] = None
    cinder_volume_setup_params: Tuple[CinderVolumeSetup, ...] = ()
    nfs_server_setup_params: Tuple[NfsExport, ...] = ()
    # export_to may be wider than /16 (IPv4) or /48 (IPv6).
    allow_wide_export: bool = False


@dataclasses.dataclass(frozen=True)
class PvRegistration:
    pv_manifest_file_path: str
    nfs_server_cp: str


@dataclasses.dataclass(frozen=True)
class AnsibleParams:
    """The pre-built Ansible server of the kubespray mode.

    ``placeholders`` names the fields the request left empty or set to a
    placeholder (the sample request of Tacker's kubespray specification has
    ``"0.0.0.0"`` and empty paths). They pass validation with a warning, so
    that sample is accepted; the operation that runs kubespray must refuse
    while any remain.
    """

    ip_address: Optional[str] = None
    username: Optional[str] = None
    password: Optional[Secret] = None
    ssh_private_key: Optional[Secret] = None
    kubespray_root_path: Optional[str] = None
    transferring_inventory_path: Optional[str] = None
    # SHA256:... of its host key, read on a trusted path (it has no console).
    host_key_fingerprint: Optional[str] = None
    placeholders: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class ExternalLbParams:
    ssh_cp_name: Optional[str] = None
    ssh_username: Optional[str] = None
    ssh_password: Optional[Secret] = None
    ssh_private_key: Optional[Secret] = None
    script_path: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class RegistryTls:
    """The registry VM's certificate: self-signed for its address and
    ``host_names`` (made once, kept on the volume), or the operator's
    (certificate and CA from the package, the key a secret)."""

    host_names: Tuple[str, ...] = ()
    certificate_path: Optional[str] = None
    ca_certificate_path: Optional[str] = None
    private_key: Optional[Secret] = None

    @property
    def self_signed(self):
        return self.certificate_path is None


@dataclasses.dataclass(frozen=True)
class RegistryInstallParams:
    """``additionalParams.private_registry_installation_param``: the
    registry VNF, in the shape of Tacker's private-registry sample driver
    (``ssh_cp_name``, ``ssh_username``, ``ssh_password``, ``port_no``,
    ``proxy``) with ours beside it: a private key instead of the password,
    the Cinder volume that keeps images and certificate, and TLS."""

    ssh_cp_name: Optional[str] = None
    ssh_username: Optional[str] = None
    ssh_password: Optional[Secret] = None
    ssh_private_key: Optional[Secret] = None
    nic_cp_name: Optional[str] = None   # listened on; ssh_cp_name if unset
    port_no: int = 5000
    proxy: Optional[ProxyParams] = None
    cinder_volume_setup_params: Tuple[CinderVolumeSetup, ...] = ()
    tls: RegistryTls = RegistryTls()

    @property
    def listen_cp_name(self):
        return self.nic_cp_name or self.ssh_cp_name

    @property
    def volume(self):
        return (self.cinder_volume_setup_params[0]
                if self.cinder_volume_setup_params else None)


@dataclasses.dataclass(frozen=True)
class ClusterParams:
    """Every validated parameter of one cluster, plus what validation said."""

    kubernetes_version: str
    script_path: Optional[str] = None
    vim_name: Optional[str] = None
    master_node: Optional[MasterNodeParams] = None
    worker_node: Optional[WorkerNodeParams] = None
    proxy: Optional[ProxyParams] = None
    storage_server: Optional[StorageServerParams] = None
    pv_registration_params: Tuple[PvRegistration, ...] = ()
    ansible: Optional[AnsibleParams] = None
    external_lb_param: Optional[ExternalLbParams] = None
    kubernetes_apt_repository: Optional[KubernetesAptRepository] = None
    private_registry_connection_info: Tuple[RegistryConnection, ...] = ()
    helm: Optional[HelmInstall] = None
    # Tacker's sample driver's form: a script of the package run as root
    # on every master.
    helm_installation_script_path: Optional[str] = None
    cni: Optional[CniChoice] = None
    # A registry VNF's request: set instead of the cluster's fields.
    private_registry_installation_param: Optional[
        RegistryInstallParams] = None
    flavour: Optional[str] = None
    operation: str = 'instantiate'
    # Per-request options of scale/heal (see merge_overrides).
    force_drain: bool = False
    storage_volume_recreate: bool = False
    # (path, message) pairs; also logged when validation ran.
    warnings: Tuple[Tuple[str, str], ...] = ()
    unknown_keys: Tuple[str, ...] = ()

    @property
    def is_ha(self):
        return self.flavour in HA_FLAVOURS

    @property
    def uses_ansible(self):
        return self.ansible is not None

    @property
    def registry(self):
        return self.private_registry_installation_param

    @property
    def is_registry(self):
        return self.private_registry_installation_param is not None

    def group(self, role):
        """The SSH credentials (``username``, ``password``,
        ``ssh_private_key``) of the nodes of ``role``, as topology names
        roles: master, worker, storage, lb, ansible or registry.
        ValueError when the request has no such group."""
        lb, server = self.external_lb_param, self.ansible
        registry = self.registry
        groups = {
            'master': self.master_node,
            'worker': self.worker_node,
            'storage': self.storage_server,
            'lb': lb and NodeGroupParams(
                ssh_cp_name=lb.ssh_cp_name, username=lb.ssh_username,
                password=lb.ssh_password, ssh_private_key=lb.ssh_private_key),
            'ansible': server and NodeGroupParams(
                username=server.username, password=server.password,
                ssh_private_key=server.ssh_private_key),
            'registry': registry and NodeGroupParams(
                ssh_cp_name=registry.ssh_cp_name,
                nic_cp_name=registry.listen_cp_name,
                username=registry.ssh_username,
                password=registry.ssh_password,
                ssh_private_key=registry.ssh_private_key),
        }
        found = groups.get(role)
        if found is None:
            raise ValueError('no credentials for a %s node' % role)
        return found

    @property
    def effective_pod_cidr(self):
        master = self.master_node
        return (master and master.pod_cidr) or DEFAULT_POD_CIDR

    @property
    def effective_service_cidr(self):
        master = self.master_node
        return (master and master.cluster_cidr) or DEFAULT_SERVICE_CIDR

    def to_dict(self):
        """The cluster parameters as a snake_case request dict.

        Secrets stay :class:`Secret` objects, so the result is safe to keep
        around; the validator accepts them where it expects a secret string.
        Only fields that are set appear. Validation metadata is left out.
        """
        skip = {'flavour', 'operation', 'force_drain',
                'storage_volume_recreate', 'warnings',
                'unknown_keys'}
        return _plain(self, skip)


def _plain(value, skip=frozenset()):
    if dataclasses.is_dataclass(value):
        out = {}
        for field in dataclasses.fields(value):
            if field.name in skip or field.name == 'placeholders':
                continue
            item = getattr(value, field.name)
            # False is every boolean's default: left out, as None is.
            if item is None or item == () or item is False:
                continue
            out[field.name] = _plain(item)
        return out
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value
