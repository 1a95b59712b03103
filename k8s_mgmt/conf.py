"""oslo.config options of k8s-mgmt, group ``[k8s_mgmt]``.

Tacker's conductor loads them through the ``oslo.config.opts`` entry point;
``oslo-config-generator --config-file etc/k8s-mgmt-config-generator.conf``
writes the sample file.
"""

from oslo_config import cfg

from k8s_mgmt import shipped

GROUP = 'k8s_mgmt'

DEFAULT_K8S_VERSION = '1.35'


def _group():
    return cfg.OptGroup(
        GROUP, title='Kubernetes management driver options',
        help='Options of the k8s-mgmt Tacker management driver '
             '(mgmt-drivers-kubernetes).')


k8s_mgmt_group = _group()

ssh_opts = [
    cfg.FloatOpt('connect_deadline', default=300.0, min=1.0,
                 help='Seconds to keep retrying an SSH connection to a VM '
                      'that does not answer yet (it may still be booting). '
                      'Retries back off with jitter. Authentication failures '
                      'are never retried.'),
    cfg.FloatOpt('connect_timeout', default=10.0, min=0.1,
                 help='Seconds one TCP connect plus SSH handshake attempt may '
                      'take before it is abandoned and retried.'),
    cfg.FloatOpt('probe_deadline', default=12.0, min=1.0,
                 help='Seconds a heal (and its search for a master to work '
                      'through) gives a node to answer SSH before it counts '
                      'as dead. A dead node to replace is not drained (its '
                      'pods are deleted with its Node) and gets no VIP '
                      'hand-over or kubelet stop. Shorter heals a crashed VM '
                      'sooner; too short counts a slow live one as dead.'),
    cfg.FloatOpt('command_timeout', default=1800.0, min=1.0,
                 help='Default seconds a remote command may run before it is '
                      'treated as failed. Steps may set shorter limits.'),
    cfg.StrOpt('host_key_policy', default='console',
               choices=[('console', 'Before the first SSH connection to a '
                                    'VM, compare the host key it offers with '
                                    'the fingerprints cloud-init printed to '
                                    'its console (read through the compute '
                                    'API) and pin it only when they match. '
                                    'Where the cloud offers no console '
                                    'output, fall back to tofu with a '
                                    'WARNING naming the VM.'),
                        ('tofu', 'Trust on first use: pin the key a new VM '
                                 'offers and log it at WARNING.'),
                        ('strict', 'Accept only host keys already present in '
                                   'the pin file (see "k8s-mgmt hostkeys"); '
                                   'never pin automatically.')],
               help='How the SSH host key of a VM seen for the first time is '
                    'verified. Pins are keyed by the Nova server id: a '
                    'changed key for a pinned server is always refused, a '
                    'new server id (a healed or added VM) is first contact. '
                    'There is no policy that accepts keys without pinning '
                    'them.'),
    cfg.FloatOpt('console_key_deadline', default=600.0, min=1.0,
                 help='Seconds to keep reading a new VM\'s console output '
                      'for the host key fingerprints cloud-init prints at '
                      'the end of its boot (host_key_policy = console). '
                      'Polled with backoff.'),
    cfg.StrOpt('host_key_file', default=None,
               help='JSON file holding pinned host keys. Defaults to '
                    '<state_dir>/host_keys.json.'),
    cfg.StrOpt('state_key_file', default='/etc/tacker/k8s-mgmt/state.key',
               help='Fernet key sealing each VNF instance\'s shared state '
                    '(pinned host keys, the first master, the VRRP '
                    'password), kept in the instance\'s metadata in '
                    'Tacker\'s database so that any tacker-conductor can '
                    'run its next operation. Every conductor host needs the '
                    'same file, mode 0600: "k8s-mgmt statekey create" '
                    'makes one; the first operation makes it when missing, '
                    'with a WARNING.'),
]

api_opts = [
    cfg.FloatOpt('api_timeout', default=60.0, min=1.0,
                 help='Seconds one OpenStack API request (Keystone, Heat, '
                      'Nova) may take before it fails with an error naming '
                      'the service and the call. An endpoint that accepts '
                      'the connection and never answers ends here.'),
    cfg.FloatOpt('kube_api_timeout', default=30.0, min=1.0,
                 help='Seconds one Kubernetes API request may take (connect '
                      'plus read) before it fails.'),
]

runtime_opts = [
    cfg.IntOpt('max_parallel_nodes', default=32, min=1, max=1024,
               help='How many nodes one step works on at the same time '
                    '(e.g. workers joining the cluster). Each costs the '
                    'driver an SSH session (green threads under eventlet; '
                    'about 1 MB); the nodes do the work.'),
    cfg.StrOpt('state_dir', default='/var/lib/k8s-mgmt',
               help='Directory for per-instance state: pinned host keys, '
                    'kubeconfig and VIM files written outside Tacker.'),
    cfg.StrOpt('kubernetes_version', default=DEFAULT_K8S_VERSION,
               regex=shipped.VERSION_OPTION_REGEX,
               help='Kubernetes minor version (e.g. 1.35) installed when the '
                    'request does not pin one: one the install script '
                    'supports (%s), in ASCII digits. Packages come from the '
                    'pkgs.k8s.io repository of that minor version.'
                    % shipped.supported_range()),
    cfg.FloatOpt('held_session_limit', default=900.0, min=0.0,
                 help='Seconds a successful heal_start keeps its SSH '
                      'sessions to the nodes that are not healed (the other '
                      'masters), so that heal_end reuses them instead of '
                      'connecting again while Heat replaces the VMs. '
                      'Sessions not taken by then are closed; so is every '
                      'one whose VM changed. 0: close them with heal_start, '
                      'as every other hook does.'),
    cfg.FloatOpt('node_ready_timeout', default=900.0, min=1.0,
                 help='Seconds to wait for every node to report Ready.'),
    cfg.FloatOpt('volume_detach_timeout', default=300.0, min=1.0,
                 help='Seconds to wait, in heal_start of a storage server '
                      'heal that keeps its Cinder volume, for the volume '
                      'to become available after the driver asked Nova to '
                      'detach it from the old server (Heat\'s replacement '
                      'server can only take an available volume).'),
    cfg.StrOpt('cni_manifest', default=None,
               help='CNI manifest the install script applies on the first '
                    'master when the request names no cni: an http(s) URL, '
                    'an absolute path on the master, or "none" to install '
                    'no CNI. Unset: the script\'s default, Calico 3.31.7 '
                    'checked against its SHA-256 (the cni preset calico). '
                    'Set it where the masters cannot reach the Internet.'),
    cfg.StrOpt('cni_manifest_sha256', default=None,
               regex=r'^[0-9a-f]{64}$',
               help='Expected SHA-256 of the cni_manifest file; the install '
                    'fails when the downloaded manifest differs.'),
    cfg.FloatOpt('drain_timeout', default=300.0, min=1.0,
                 help='Seconds to wait for one node to drain (scale-in, '
                      'worker heal): its pods are evicted through the '
                      'Eviction API, which respects PodDisruptionBudgets, '
                      'and evictions the budgets refuse are retried with '
                      'backoff until this deadline. A drain that does not '
                      'finish fails the operation naming the pods that '
                      'blocked it. With force_drain: true in the '
                      'request\'s additionalParams, a pod whose eviction is '
                      'refused is deleted at once instead. A NotReady '
                      '(unreachable) node is deleted without waiting on its '
                      'pods.'),
    cfg.IntOpt('upgrade_max_unavailable', default=1, min=1,
               help='How many workers a Kubernetes upgrade drains and '
                    'upgrades at once (masters always go one at a time); '
                    'an upgrade request may ask for another number.'),
]

# The kubespray mode (mgmt-drivers-kubespray).
lb_opts = [
    cfg.PortOpt('external_lb_api_port', default=8383,
                help='Port the external load balancer VM of the kubespray '
                     'mode serves the Kubernetes API on. Kubespray puts '
                     'this address and port in the API certificate and '
                     'in every kubeconfig (loadbalancer_apiserver), and the '
                     'VIM is registered with it. The masters\' API servers '
                     'listen on 6443 behind it.'),
]

kubespray_opts = [
    cfg.FloatOpt('playbook_timeout', default=7200.0, min=1.0,
                 help='Seconds one ansible-playbook run on the Ansible server '
                      '(kubespray mode: cluster.yml, scale.yml, '
                      'remove-node.yml, ...) may take. When it runs longer, '
                      'the run is stopped (on the Ansible server too) and '
                      'the operation fails naming the playbook and the last '
                      'task it started.'),
]

ALL_OPTS = ssh_opts + api_opts + runtime_opts + lb_opts + kubespray_opts


def register_opts(conf):
    """Our options in ``conf``. A ConfigOpts keeps a group's option values
    and overrides in the group object it was given (shallow-copied), so
    each ConfigOpts but the global one gets a group of its own: an
    override set on one never shows in another."""
    group = k8s_mgmt_group if conf is cfg.CONF else _group()
    conf.register_group(group)
    conf.register_opts(ALL_OPTS, group=group)


def list_opts():
    """Options for oslo-config-generator."""
    return [(k8s_mgmt_group, ALL_OPTS)]


CONF = cfg.CONF
register_opts(CONF)
