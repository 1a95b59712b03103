"""Which node scripts go to which node, and from where: the one upload.

A node gets the scripts' shared library (first: the scripts source it)
and the install script; a master of an HA cluster also gets the
load-balancer script, and with a storage server every node gets the
storage script (the storage server gets only that one and the library).
Each is the VNF package's copy when the package has one (``script_path``
for the install script, ``Scripts/<name>`` for the others), else the copy
this distribution ships. They land in
:data:`REMOTE_DIR` (a directory of the login user's home, mode 0700) with
mode 0700.
"""

import collections
import dataclasses
import functools
import os
import posixpath

from k8s_mgmt import shipped
from k8s_mgmt import ssh

INSTALL = shipped.INSTALL_SCRIPT
CONFIGURE_LB = shipped.LB_SCRIPT
LIBRARY = shipped.SCRIPT_LIBRARY
UPGRADE = shipped.UPGRADE_LIBRARY
STORAGE = shipped.STORAGE_SCRIPT
EXTERNAL_LB = shipped.EXTERNAL_LB_SCRIPT
REGISTRY = shipped.REGISTRY_SCRIPT
# The registry VNF's certificate and its CA, when the request gives the
# operator's (tls.certificate_path, tls.ca_certificate_path).
REGISTRY_TLS_CERT = 'registry-tls.crt'
REGISTRY_TLS_CA = 'registry-tls-ca.crt'
# The Kubernetes apt repository's signing key, when the request names a
# file of the VNF package (kubernetes_apt_repository.key_path).
REPO_KEY = 'kubernetes-apt-repository.key'
# The CA certificate of a private registry (certificate_path), one file
# per registry, named for its server.
REGISTRY_CA = 'registry-ca-%s.crt'


# Helm for the masters: its release archive from the VNF package
# (helm.archive_path), or Tacker's form, a script of the package
# (helm_installation_script_path).
HELM_ARCHIVE = 'helm-release.tar.gz'
HELM_SCRIPT = 'install_helm.sh'
# The request's own CNI manifest, when it is a file of the package
# (cni.manifest), beside the scripts of every master.
CNI_MANIFEST = 'cni-manifest.yaml'
# Relative to the login user's home (SSH exec and SFTP both start there).
REMOTE_DIR = '.k8s-mgmt'
PACKAGE_SCRIPTS_DIR = 'Scripts'


def helm_names(params):
    """What a master needs of the package to install Helm."""
    if params.helm is not None and params.helm.archive_path:
        return [HELM_ARCHIVE]
    if params.helm_installation_script_path:
        return [HELM_SCRIPT]
    return []


def registry_ca_name(registry):
    """The uploaded name of ``registry``'s CA file."""
    return REGISTRY_CA % registry.server.replace(':', '_')


class LocalScript(collections.namedtuple(
        'LocalScript', 'name data origin from_package')):
    """A script to upload: its name on the node, its bytes, where they came
    from, and whether that is the VNF package (else the shipped copy)."""

    @property
    def remote_path(self):
        return posixpath.join(REMOTE_DIR, self.name)

    @property
    def features(self):
        """What the script declares beyond its first version, on a
        ``# k8s-mgmt-features: a b`` line of its header: options the driver
        passes only to a copy that has them (a VNF package may ship an
        older one)."""
        return shipped.script_features(self.data)


@dataclasses.dataclass(frozen=True)
class Features:
    """What this operation's copies of the install and load balancer
    scripts can do (their ``k8s-mgmt-features`` lines), read once per
    operation (:attr:`ScriptSet.features`)."""

    prepare: bool = False       # install: the prepare mode
    prepared: bool = False      # install: -p, skip what prepare checked
    init_report: bool = False   # install: init prints join data and token
    join_first: bool = False    # install: the join data before the end
    apt_turn: bool = False      # install and configure_lb: apt-get in turn
    apt_repo: bool = False      # install: -r/-K (repository), -V (version)
    upgrade: bool = False       # install: the upgrade-check/-apply/-node modes
    certs: bool = False         # install: certs-check
    certs_renew: bool = False   # install: certs-renew
    lb_bootstrap: bool = False  # configure_lb: -B, the VIP before the API

    @classmethod
    def of(cls, install, configure_lb):
        """From the two scripts' ``LocalScript.features``."""
        return cls(prepare='prepare' in install,
                   prepared='prepared' in install,
                   init_report='init-report' in install,
                   join_first='join-first' in install,
                   apt_turn=('apt-turn' in install and
                             'apt-turn' in configure_lb),
                   lb_bootstrap='bootstrap' in configure_lb,
                   apt_repo='apt-repo' in install,
                   upgrade='upgrade' in install,
                   certs='certs' in install,
                   certs_renew='certs-renew' in install)


def local_script(package_dir, relative_path, name):
    """The package's copy of a script when it has one, else ours."""
    if package_dir and relative_path:
        candidate = os.path.join(package_dir, relative_path)
        if os.path.isfile(candidate):
            with open(candidate, 'rb') as handle:
                return LocalScript(name, handle.read(), candidate, True)
    entry = shipped.script(name)
    return LocalScript(name, entry.read_bytes(), str(entry), False)


def package_path(params, name):
    """Where the VNF package keeps script ``name``."""
    if name == INSTALL and params.script_path:
        return params.script_path
    if name == REPO_KEY:
        return params.kubernetes_apt_repository.key_path
    for registry in params.private_registry_connection_info:
        if registry.certificate_path and name == registry_ca_name(registry):
            return registry.certificate_path
    registry_vnf = params.registry
    if name == REGISTRY_TLS_CERT:
        return registry_vnf.tls.certificate_path
    if name == REGISTRY_TLS_CA:
        return registry_vnf.tls.ca_certificate_path
    if name == HELM_ARCHIVE:
        return params.helm.archive_path
    if name == HELM_SCRIPT:
        return params.helm_installation_script_path
    if name == CNI_MANIFEST:
        return params.cni.manifest_path
    lb = params.external_lb_param
    if name == EXTERNAL_LB and lb is not None and lb.script_path:
        return lb.script_path
    return posixpath.join(PACKAGE_SCRIPTS_DIR, name)


def names_for(node, params):
    """The scripts ``node`` needs, in upload order: first the library
    the scripts source from their own directory. The storage server
    gets only the storage script; with a storage server, masters and
    workers get it too (its ``client`` mode installs the NFS client).
    The registry VM gets the storage script (its ``volumes`` mode), the
    registry script and the operator's certificate files."""
    if node.role == 'registry':
        tls = params.registry.tls
        return [LIBRARY, STORAGE, REGISTRY] + (
            [] if tls.self_signed else [REGISTRY_TLS_CERT, REGISTRY_TLS_CA])
    if node.role == 'storage':
        return [LIBRARY, STORAGE]
    if node.role == 'lb':
        return [LIBRARY, EXTERNAL_LB]
    if params.uses_ansible:
        # Kubespray installs the nodes; a master only needs the install
        # script's token-secret mode (the VIM's credentials).
        return [LIBRARY, INSTALL] if node.role == 'master' else []
    names = [LIBRARY, INSTALL, UPGRADE]
    repository = params.kubernetes_apt_repository
    if repository is not None and repository.key_path:
        names.append(REPO_KEY)
    names += [registry_ca_name(registry) for registry in
              params.private_registry_connection_info
              if registry.certificate_path]
    if params.is_ha and node.role == 'master':
        names.append(CONFIGURE_LB)
    if node.role == 'master':
        names += helm_names(params)
        if params.cni is not None and params.cni.manifest_path:
            names.append(CNI_MANIFEST)
    if params.storage_server is not None:
        names.append(STORAGE)
    return names


class ScriptSet(object):
    """The scripts of one operation, each read once from its origin."""

    def __init__(self, package_dir, params):
        self.package_dir = package_dir
        self.params = params
        self._read = {}

    def get(self, name):
        if name not in self._read:
            self._read[name] = local_script(
                self.package_dir, package_path(self.params, name), name)
        return self._read[name]

    @functools.cached_property
    def features(self):
        """The Features of this operation's install and LB scripts."""
        return Features.of(self.get(INSTALL).features,
                           self.get(CONFIGURE_LB).features)

    def for_node(self, node):
        return [self.get(name) for name in names_for(node, self.params)]

    def shipped_instead(self, nodes):
        """Scripts of ``nodes`` the package lacks (ours are used)."""
        names = []
        for node in nodes:
            for name in names_for(node, self.params):
                if name not in names:
                    names.append(name)
        return [s for s in map(self.get, names) if not s.from_package]


def mkdir_command():
    return ssh.Command('mkdir', '-p', '-m', '0700', REMOTE_DIR)


def upload_to(session, node, script_set):
    """Put ``node``'s scripts on it over its open session."""
    session.run(mkdir_command(), step='upload')
    for script in script_set.for_node(node):
        session.put(script.data, script.remote_path, mode=0o700)
