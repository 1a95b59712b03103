"""The node scripts' invocations as data: argv, stdin secrets, order.

Nothing here touches the network. Each function turns the topology and the
cluster parameters into :class:`ScriptCall` values; the operation runs them
over SSH, the unit tests compare them. Secrets (join token, certificate key,
proxy URLs, VRRP password) are never in ``argv``: they travel as
``KEY=VALUE`` lines on the script's stdin (``-s -``, doc/source/scripts.rst).
"""

import base64
import dataclasses
import ipaddress
import posixpath
import re

from oslo_log import log as logging

from k8s_mgmt import cni_presets
from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt import ssh
from k8s_mgmt.engine import uploads

LOG = logging.getLogger(__name__)

INSTALL = uploads.INSTALL
CONFIGURE_LB = uploads.CONFIGURE_LB
STORAGE = uploads.STORAGE
EXTERNAL_LB = uploads.EXTERNAL_LB
REGISTRY = uploads.REGISTRY
REMOTE_DIR = uploads.REMOTE_DIR
HAPROXY_PORT = 16443
APISERVER_PORT = 6443
# First master gets the highest VRRP priority, each next one STEP less. A
# backup takes the VIP over (256 - priority) / 256 s after the holder gives
# it up; 10 apart, those timers are 39 ms apart, so one backup clearly wins
# rather than two claiming the VIP for an advert (1 apart: 4 ms).
TOP_VRRP_PRIORITY = 250
VRRP_PRIORITY_STEP = 10
# Priorities stay in 1-254 and distinct up to this many masters.
MAX_VRRP_MASTERS = 25
# Bounded by the script's own wait deadline (-w): a node that needs longer
# for one wait is broken, not slow.
SCRIPT_WAIT_SECONDS = 600


def vrrp_priority(index):
    """The VRRP priority of the master at ``index`` in the topology."""
    if not 0 <= index < MAX_VRRP_MASTERS:
        raise ValueError('VRRP priorities cover %d masters, not index %d'
                         % (MAX_VRRP_MASTERS, index))
    return TOP_VRRP_PRIORITY - VRRP_PRIORITY_STEP * index


@dataclasses.dataclass(frozen=True)
class ScriptCall:
    """One run of a node script on one node."""

    node: str                 # topology node name
    script: str               # INSTALL, CONFIGURE_LB or STORAGE
    argv: tuple               # mode and options; never a secret
    stdin_secrets: tuple = ()  # ((key, Secret), ...) sent as KEY=VALUE

    @property
    def mode(self):
        if self.script == INSTALL:
            return self.argv[0]
        if self.script == uploads.HELM_SCRIPT:
            return 'helm-script'
        if self.script == STORAGE:
            return 'storage-%s' % self.argv[0]
        if self.script == EXTERNAL_LB:
            return 'external-lb'
        if self.script == REGISTRY:
            return 'registry'
        return 'configure-lb'

    def command(self, remote_dir=REMOTE_DIR):
        argv = list(self.argv)
        if self.stdin_secrets:
            argv += ['-s', '-']
        return ssh.Command('bash', posixpath.join(remote_dir, self.script),
                           *argv)

    def stdin(self):
        """The secrets as one Secret of KEY=VALUE lines, or None.

        A key that is not a plain name, or a value holding a newline or
        any other control character, is refused whatever the caller
        checked: one such character would add a line, and so a key, of the
        sender's choosing. The error names the key, never the value.
        """
        if not self.stdin_secrets:
            return None
        lines = []
        for key, value in self.stdin_secrets:
            text = secrets.reveal(value)
            if not _STDIN_KEY.fullmatch(key) or _CONTROL.search(text):
                raise exceptions.ValidationError(problems=[(
                    '%s stdin of %s' % (self.script, self.node),
                    'secret %r is not a plain name or holds a control '
                    'character (newline, tab, ...)' % key)])
            lines.append('%s=%s\n' % (key, text))
        return secrets.Secret(''.join(lines))


# What a node script reports on stderr and still succeeds: a setting it
# could not make (a container's kernel) or a warning; the operation's log
# shows each, never only the node's.
_NOTABLE = re.compile(r'^[\w.-]+\.sh: (?:skipped|warning): ')


def run_call(session, call, remote_dir=REMOTE_DIR, on_line=None):
    """Run ``call`` over its node's open session; secrets go on stdin.
    ``on_line``: called with each stdout line as it arrives. The script's
    "skipped:" and "warning:" lines are logged as warnings."""
    result = session.run(call.command(remote_dir), step=call.mode,
                         stdin=call.stdin(), on_line=on_line)
    for line in (result.stderr or '').splitlines():
        if _NOTABLE.match(line):
            LOG.warning('%(node)s %(mode)s: %(line)s',
                        {'node': call.node, 'mode': call.mode,
                         'line': secrets.redact(line.strip())})
    return result


_STDIN_KEY = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
_CONTROL = re.compile(r'[\x00-\x1f\x7f]')


@dataclasses.dataclass(frozen=True)
class Endpoints:
    """Where the cluster's API answers.

    ``join`` is what nodes use (``-e``): the VIP and HAProxy port for HA,
    else the first master's cluster-network address. ``api_url`` is what
    the driver and the VIM use: the floating IP when there is one.
    """

    join: str
    api_host: str
    api_port: int
    extra_sans: tuple = ()

    @property
    def api_url(self):
        return 'https://%s:%d' % (self.api_host, self.api_port)


def endpoints(topology, params, first_master):
    if params.uses_ansible:
        return lb_endpoints(topology)
    if params.is_ha:
        if not topology.vip:
            raise ValueError('HA flavour %s needs a VIP (cluster_cp_name)'
                             % params.flavour)
        host = topology.vip_fip or topology.vip
        sans = (host,) if host != topology.vip else ()
        return Endpoints('%s:%d' % (topology.vip, HAPROXY_PORT), host,
                         HAPROXY_PORT, sans)
    host = topology.vip_fip or first_master.ssh_ip
    sans = (host,) if host != first_master.nic_ip else ()
    return Endpoints('%s:%d' % (first_master.nic_ip, APISERVER_PORT), host,
                     APISERVER_PORT, sans)


def lb_endpoints(topology):
    """The kubespray mode: the API answers on the external load balancer
    VM (its cluster-network address for the nodes, its SSH address,
    a floating IP when there is one, for the driver and the VIM)."""
    if not topology.lbs:
        raise ValueError('the kubespray mode needs the external load '
                         'balancer VM (external_lb_param.ssh_cp_name)')
    lb = topology.lbs[0]
    port = conf.CONF.k8s_mgmt.external_lb_api_port
    sans = (lb.ssh_ip,) if lb.ssh_ip != lb.nic_ip else ()
    return Endpoints('%s:%d' % (lb.nic_ip, port), lb.ssh_ip, port, sans)


def _install_options(params, apt_repo=False):
    """Options every install mode that prepares a node takes; with
    ``apt_repo`` (the script's feature apt-repo) the exact version and the
    Kubernetes apt repository too, and the private registries (the
    package checks refused a script without their feature)."""
    opts = ['-k', minor_of(params)] + (
        _repository_options(params) if apt_repo else []) + \
        _registry_options(params) + [
        '-P', params.effective_pod_cidr,
            '-S', params.effective_service_cidr,
            '-w', str(SCRIPT_WAIT_SECONDS)]
    proxy = params.proxy
    if proxy is not None and proxy.k8s_node_cidr:
        opts += ['-C', proxy.k8s_node_cidr]
    if proxy is not None and proxy.no_proxy:
        opts += ['-x', proxy.no_proxy]
    return opts + _cni_options(params.cni)


def _cni_options(cni):
    """-c/-d (and -N) for the request's CNI, else the conductor's
    cni_manifest; -y/-Y/-T for Multus."""
    if cni is None:
        manifest = conf.CONF.k8s_mgmt.cni_manifest
        if not manifest:
            return []
        opts = ['-c', manifest]
        if conf.CONF.k8s_mgmt.cni_manifest_sha256:
            opts += ['-d', conf.CONF.k8s_mgmt.cni_manifest_sha256]
        return opts
    if cni.preset:
        preset = cni_presets.PRESETS[cni.preset]
        opts = ['-c', preset.url(cni.mirror), '-d', preset.sha256]
        if preset.edit:
            opts += ['-N', preset.edit]
    elif cni.manifest_url:
        opts = ['-c', cni.manifest_url, '-d', cni.sha256]
    else:
        opts = ['-c', posixpath.join(uploads.REMOTE_DIR,
                                     uploads.CNI_MANIFEST)]
    if cni.multus:
        multus = cni_presets.MULTUS
        opts += ['-y', multus.url(cni.mirror), '-Y', multus.sha256,
                 '-T', cni_presets.multus_image_tag()]
    return opts


def _registry_options(params):
    """-g per private registry (its CA as uploaded next to the script),
    -G per hosts line."""
    opts = []
    for registry in params.private_registry_connection_info:
        spec = registry.url
        if registry.certificate_path:
            spec += ',' + posixpath.join(uploads.REMOTE_DIR,
                                         uploads.registry_ca_name(registry))
        opts += ['-g', spec]
    for registry in params.private_registry_connection_info:
        if registry.hosts_string:
            opts += ['-G', registry.hosts_string]
    return opts


def _repository_options(params):
    """-V when the request names a patch version; -r and -K when it names
    a repository (-K: its key's URL, or the package's key file uploaded
    next to the script)."""
    opts = []
    version = params.kubernetes_version.lstrip('v')
    if version.count('.') == 2:
        opts += ['-V', version]
    return opts + repository_options(params)


def repository_options(params):
    """-r and -K when the request names a repository."""
    opts = []
    repository = params.kubernetes_apt_repository
    if repository is not None:
        opts += ['-r', repository.url]
        if repository.key_url:
            opts += ['-K', repository.key_url]
        elif repository.key_path:
            opts += ['-K', posixpath.join(uploads.REMOTE_DIR,
                                          uploads.REPO_KEY)]
    return opts


def proxy_secrets(params):
    proxy = params.proxy
    found = []
    if proxy is not None:
        for key in ('http_proxy', 'https_proxy'):
            if getattr(proxy, key):
                found.append((key, getattr(proxy, key)))
    return found


def _install_secrets(params):
    """What an install mode that prepares a node reads on stdin: the
    proxy URLs and each private registry's login (``registry_auth_N``
    for the N-th ``-g``: base64 of USER:PASSWORD, containerd's form)."""
    found = proxy_secrets(params)
    for index, registry in enumerate(
            params.private_registry_connection_info, 1):
        if registry.username:
            login = '%s:%s' % (registry.username,
                               secrets.reveal(registry.password))
            found.append(('registry_auth_%d' % index, secrets.Secret(
                base64.b64encode(login.encode()).decode())))
    return found


def _ha_flag(params):
    return ['-A'] if params.is_ha else []


def _prepared_flag(prepared):
    return ['-p'] if prepared else []


def init_call(node, params, ends, report=False, prepared=False,
              apt_repo=False):
    """``report``: the init also prints the join data and the VIM's
    credentials (-R; InitReport). ``prepared``: the node's prepare ran in
    this operation (-p: its checks are skipped). ``apt_repo``: the
    script's feature apt-repo (see _install_options)."""
    argv = (['init', '-a', node.nic_ip, '-H', node.name, '-e', ends.join] +
            _ha_flag(params) + (['-R'] if report else []) +
            _prepared_flag(prepared) + _install_options(params, apt_repo))
    if ends.extra_sans:
        argv += ['-F', ','.join(ends.extra_sans)]
    return ScriptCall(node.name, INSTALL, tuple(argv),
                      tuple(_install_secrets(params)))


def helm_call(node, params):
    """Helm on a master: the install script's helm mode with the pinned
    archive (uploaded from the package, or its URL and SHA-256), or
    Tacker's form, the package's own script; None when the request names
    neither."""
    helm = params.helm
    if helm is None:
        if params.helm_installation_script_path:
            return ScriptCall(node.name, uploads.HELM_SCRIPT, ())
        return None
    source = helm.url or posixpath.join(uploads.REMOTE_DIR,
                                        uploads.HELM_ARCHIVE)
    argv = ['helm', '-L', helm.version, '-m', source]
    if helm.sha256:
        argv += ['-M', helm.sha256]
    return ScriptCall(node.name, INSTALL, tuple(argv),
                      tuple(proxy_secrets(params)))


def prepare_call(node, params, ends, apt_repo=False):
    """The install script's prepare mode on a node about to join: what the
    join would do first (containerd, kernel settings, packages), with the
    same options, so the join finds it done. ``-e``: the endpoint goes
    into no_proxy, as the join's would."""
    return ScriptCall(node.name, INSTALL,
                      tuple(['prepare', '-e', ends.join] +
                            _install_options(params, apt_repo)),
                      tuple(_install_secrets(params)))


def print_join_call(node, params, certificate_key=True):
    """``certificate_key``: HA, a master is to join (-A: the certificates
    are uploaded under a fresh key)."""
    return ScriptCall(node.name, INSTALL,
                      tuple(['print-join', '-k', minor_of(params)] +
                            (_ha_flag(params) if certificate_key else [])))


def token_secret_call(node, params):
    return ScriptCall(node.name, INSTALL,
                      ('token-secret', '-k', minor_of(params)))


def join_call(node, params, ends, join, prepared=False, apt_repo=False):
    """``prepared``, ``apt_repo``: as for init_call."""
    role = 'join-master' if node.role == 'master' else 'join-worker'
    argv = ([role, '-a', node.nic_ip, '-H', node.name, '-e', ends.join,
             '-t', join.ca_cert_hash] + _prepared_flag(prepared) +
            _install_options(params, apt_repo))
    stdin = [('token', join.token)]
    if node.role == 'master':
        if join.certificate_key is None:
            raise ValueError('joining master %s needs a certificate key'
                             % node.name)
        stdin.append(('certificate_key', join.certificate_key))
        if ends.extra_sans:
            argv += ['-F', ','.join(ends.extra_sans)]
    return ScriptCall(node.name, INSTALL, tuple(argv),
                      tuple(stdin + _install_secrets(params)))


def storage_server_call(node, params, volumes):
    """setup_storage.sh server on the storage node: each Cinder volume
    (its id, the device Cinder reports, where to mount it), each export
    with its squash, and whether wide exports are allowed. ``volumes``:
    {volume_resource_id: topology Volume}."""
    storage = params.storage_server
    argv = ['server']
    for setup in storage.cinder_volume_setup_params:
        volume = volumes[setup.volume_resource_id]
        argv += ['--volume', '%s,%s,%s' % (volume.volume_id,
                                           volume.device or '',
                                           setup.mount_to)]
    for export in storage.nfs_server_setup_params:
        squash = 'no_root_squash' if export.no_root_squash else 'root_squash'
        argv += ['--export', '%s,%s,%s' % (export.export_dir,
                                           export.export_to, squash)]
    if storage.allow_wide_export:
        argv.append('--allow-wide-export')
    return ScriptCall(node.name, STORAGE, tuple(argv),
                      tuple(proxy_secrets(params)))


def registry_volume_call(node, params, volume):
    """setup_storage.sh volumes on the registry VM: its one Cinder volume
    found by id (or the device Cinder reports), formatted only when it
    holds no filesystem, mounted where the registry keeps its data; no
    NFS. ``volume``: the topology Volume."""
    setup = params.registry.volume
    return ScriptCall(node.name, STORAGE, (
        'volumes', '--volume', '%s,%s,%s' % (
            volume.volume_id, volume.device or '', setup.mount_to)),
        tuple(proxy_secrets(params.registry)))


def registry_call(node, params):
    """setup_registry.sh on the registry VM: docker-registry on its NIC
    address and port, images and TLS on the volume (which must be
    mounted), the certificate self-signed or the operator's (its key on
    stdin, base64: one line); the CA clients trust printed last."""
    registry = params.registry
    tls = registry.tls
    argv = ['--listen', '%s:%d' % (node.nic_ip, registry.port_no),
            '--dir', registry.volume.mount_to]
    found = proxy_secrets(registry)
    if not tls.self_signed:
        argv += ['--certificate', posixpath.join(uploads.REMOTE_DIR,
                                                 uploads.REGISTRY_TLS_CERT),
                 '--ca', posixpath.join(uploads.REMOTE_DIR,
                                        uploads.REGISTRY_TLS_CA)]
        found.append(('tls_key_base64', secrets.Secret(base64.b64encode(
            secrets.reveal(tls.private_key).encode()).decode())))
    elif tls.host_names:
        argv += ['--self-signed', ','.join(tls.host_names)]
    else:
        argv.append('--self-signed-ip')
    argv += ['--require-mount', '--print-ca']
    return ScriptCall(node.name, REGISTRY, tuple(argv), tuple(found))


def nfs_client_call(node, params):
    """setup_storage.sh client: the NFS client packages on ``node``."""
    return ScriptCall(node.name, STORAGE, ('client',),
                      tuple(proxy_secrets(params)))


def vip_prefix_from(params, vip, interface_prefix=None):
    """The VIP's prefix length: the master NIC's, else the node CIDR's."""
    if interface_prefix:
        return int(interface_prefix)
    proxy = params.proxy
    if proxy is not None and proxy.k8s_node_cidr:
        network = ipaddress.ip_network(proxy.k8s_node_cidr, strict=False)
        if ipaddress.ip_address(vip) in network:
            return network.prefixlen
    return 32


def minor_of(params):
    """'1.35' from '1.35', 'v1.35' or '1.35.2': the script pins a minor."""
    return '.'.join(params.kubernetes_version.lstrip('v').split('.')[:2])


# Step titles, shared by the plan and the operation's log.
TITLE_LB = 'Configure the load balancer on every master'
TITLE_TOKEN = 'Create the VIM token'
TITLE_JOIN_DATA = 'Read join data'
TITLE_JOIN_WORKERS = 'Join workers'


def title_init(node):
    return 'Initialise the first master (%s)' % node.name


def title_join_master(node):
    return 'Join master %s' % node.name
