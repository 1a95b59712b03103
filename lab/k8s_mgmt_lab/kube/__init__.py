"""Kubernetes stand-ins for the lab VMs (no Kubernetes build can be fetched).

``kubeadm``, ``kubelet``, ``kubectl`` and ``systemctl`` stand-ins with the
command-line interface ``scripts/install_k8s_cluster.sh`` and
``scripts/configure_lb.sh`` use, and an API server stand-in that keeps its
objects in a REAL etcd cluster formed by the masters (containerd is
Debian's, real). ``layer`` writes systemctl's wrapper into a directory the
lab stacks over every VM's root, and the wrappers the lab's Kubernetes
packages hold (the install script installs those with apt-get).
``kubespray_standin`` (data, not a package) is the stand-in kubespray
checkout the kubespray flavour's Ansible server gets as ``/opt/kubespray``.

These modules run inside the VMs (through the host's Python, visible through
the VM's read-only lower layer), so they import only the standard library,
PyYAML, cryptography and the driver's dependency-free
:mod:`k8s_mgmt.polling`; never oslo or the rest of the driver.
"""

import datetime
import json
import os
import sys

SETTINGS_FILE = '/etc/k8s-mgmt-lab/standins.json'
K8S_DIR = '/etc/kubernetes'
PKI_DIR = K8S_DIR + '/pki'
STANDIN_DIR = K8S_DIR + '/standin'       # service configs written by kubeadm
MANIFESTS_DIR = K8S_DIR + '/manifests'
ADMIN_CONF = K8S_DIR + '/admin.conf'
KUBELET_CONF = K8S_DIR + '/kubelet.conf'
KUBELET_STATE = '/var/lib/kubelet/standin.json'
ETCD_DATA_DIR = '/var/lib/etcd'
API_PORT = 6443
# The kubelet's heartbeat gives up after this long and tries again.
KUBELET_REQUEST_TIMEOUT = 3.0
ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380

DEFAULTS = {
    'kubernetes_version': 'v1.35.0',
    'init_delay': 0.0,            # models how long kubeadm init takes
    'join_delay': 0.0,            # models how long kubeadm join takes
    'upgrade_delay': 0.0,         # kubeadm upgrade apply|node, likewise
    'heartbeat_interval': 1.0,    # kubelet -> API server
    # No heartbeat for this long: not Ready. Above a heartbeat stalled by
    # an etcd election (2.5 s at the lab's timing) plus the kubelet's request
    # timeout (KUBELET_REQUEST_TIMEOUT): at 4 s a healthy node of a loaded
    # lab turned NotReady right after a master heal (CI, once).
    'node_grace': 8.0,
    # etcd's raft timing (ms): the lab's own by default, kubeadm's (etcd's
    # defaults) on request; see controlplane.ETCD_TIMINGS.
    'etcd_timing': 'lab',
}


# Every stand-in is a fresh interpreter (a lab join starts about 15). -S
# skips site (the venv's .pth files cost ~20 ms a start); python_path() then
# names the only directories the stand-ins import from. -P keeps the working
# directory out of sys.path.
PYTHON_FLAGS = ('-S', '-P')


def source_root():
    """The directory holding the ``k8s_mgmt_lab`` package."""
    return os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.realpath(__file__))))


def python_path():
    """sys.path entries the stand-ins need when run with PYTHON_FLAGS: the
    directories holding this package, the driver's ``k8s_mgmt`` (two
    source trees when both are installed for development), PyYAML and
    cryptography."""
    import importlib.util
    paths = [source_root()]
    for name in ('k8s_mgmt', 'yaml', 'cryptography'):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            paths.append(os.path.dirname(os.path.dirname(spec.origin)))
    return os.pathsep.join(dict.fromkeys(paths))


def python_argv(module, *args, python=None):
    """The command line running stand-in ``module`` (needs python_path()
    as PYTHONPATH)."""
    return ([python or sys.executable] + list(PYTHON_FLAGS)
            + ['-m', 'k8s_mgmt_lab.kube.' + module] + list(args))


class StandinError(Exception):
    """A stand-in command failed; the message is what the user sees."""


def settings():
    """Lab settings baked into the VM image, over the defaults."""
    values = dict(DEFAULTS)
    try:
        path = os.environ.get('K8S_MGMT_STANDINS_FILE', SETTINGS_FILE)
        with open(path) as f:
            values.update(json.load(f))
    except FileNotFoundError:
        pass
    return values


# Set by the wrappers of the lab repository's packages: the version of the
# package the tool came from (kubeadm 1.35.1-1.1 says v1.35.1).
VERSION_ENV = 'K8S_MGMT_LAB_KUBERNETES_VERSION'


def kubernetes_version():
    """The version of the running tool's package, else the lab's default
    (a stand-in run without a package: the unit tests)."""
    return os.environ.get(VERSION_ENV) or settings()['kubernetes_version']


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def rfc3339(moment=None):
    return (moment or now()).strftime('%Y-%m-%dT%H:%M:%SZ')


def parse_rfc3339(text):
    moment = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment


def write_file(path, data, mode=0o600):
    """Atomically replace ``path`` with ``data`` (str or bytes)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = '%s.tmp%d' % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, 'wb') as f:
        f.write(data.encode() if isinstance(data, str) else data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def read_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return default


def fail(prog, message, status=1):
    """Print ``prog: message`` on stderr and exit like the real tool."""
    sys.stderr.write('%s: %s\n' % (prog, message))
    sys.exit(status)
