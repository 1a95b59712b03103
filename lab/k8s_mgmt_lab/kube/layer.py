"""The stand-ins as an overlay layer of the lab VMs' root filesystem, and
as the payload of the lab's Kubernetes packages.

``write_layer(directory, ...)`` fills ``directory`` with small ``/bin/sh``
wrappers at the paths of what a lab VM has from the start
(``/usr/local/bin/systemctl`` and ``/usr/local/sbin/exportfs``, which come
before ``/usr/bin`` and ``/usr/sbin`` on the VMs' PATH and sudo's
secure_path) that exec the host's Python on a module of this package, plus
the settings file and a stand-in CNI manifest. The VM sees the host's root
read-only, so the interpreter and this source tree are visible inside it.

kubeadm, kubelet, kubectl and crictl are no part of the layer: the install
script installs them with apt-get from the lab's Kubernetes repository
(:mod:`k8s_mgmt_lab.machines.k8s_repo`), whose packages hold the wrappers
:func:`package_payload` writes, one per version. containerd is Debian's.
"""

import json
import os
import re
import shlex
import sys

from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import faults
from k8s_mgmt_lab.machines import prereq
from k8s_mgmt_lab.machines import rootfs

TOOLS = {'usr/local/bin/systemctl': 'systemctl',
         'usr/local/sbin/exportfs': 'exportfs'}
# The tools of the lab repository's packages, and their stand-in modules.
PACKAGED_TOOLS = {'kubeadm': 'kubeadm', 'kubelet': 'kubelet',
                  'kubectl': 'kubectl'}
CNI_MANIFEST = '/etc/k8s-mgmt-lab/cni.yaml'

WRAPPER = """#!/bin/sh
# k8s-mgmt lab stand-in for {tool} (not the real binary); see
# lab/k8s_mgmt_lab/kube/{module}.py
{env}{fast}PYTHONPATH={python_path}
export PYTHONPATH
exec {argv} "$@"
"""
# The package's version, for the stand-in behind the wrapper.
VERSION_ENV_LINE = """{name}={version}
export {name}
"""
CRICTL = """#!/bin/sh
# k8s-mgmt lab stand-in for crictl (cri-tools {version}), not the real one.
# The lab runs its control plane as stand-in services, not containers:
# "ps --name NAME -q" names the running service's process as a container
# id (standin-NAME-PID), "stop ID" restarts that service, as the kubelet
# restarts a static pod's container once it is stopped. Nothing else.
if [ "$1" = --runtime-endpoint ]; then shift 2; fi
case "$1" in
    --version|-v) echo "crictl version v{version}"; exit 0 ;;
    ps)
        name=""
        while [ $# -gt 0 ]; do
            [ "$1" = --name ] && name=$2
            shift
        done
        case "$name" in etcd|kube-apiserver) ;; *) exit 0 ;; esac
        [ -r {pid_dir}/$name.pid ] || exit 0
        read -r pid < {pid_dir}/$name.pid
        [ -d /proc/$pid ] && echo "standin-$name-$pid"
        exit 0 ;;
    stop)
        case "$2" in
            standin-etcd-*) exec systemctl restart etcd ;;
            standin-kube-apiserver-*) exec systemctl restart kube-apiserver ;;
        esac
        echo "crictl (k8s-mgmt lab stand-in): no container $2" >&2
        exit 1 ;;
esac
echo "crictl (k8s-mgmt lab stand-in): only ps --name and stop" >&2
exit 1
"""
# A version query answers from the wrapper, as fast as the real binary's,
# where a Python start would cost the lab's shared CPU ~50 ms (every
# node's install script asks all three tools); the same text as the
# Python stand-ins print.
VERSION_QUERIES = {
    'kubeadm': ('version -o short', '{version}'),
    'kubectl': ('version --client',
                'Client Version: {version}\nKustomize Version: v5.7.1'),
    'kubelet': ('--version', 'Kubernetes {version}'),
}
FAST_VERSION = """case "$*" in
    {query}) printf '%s\\n' {text}; exit 0 ;;
esac
"""


# systemctl verbs that find nothing to do answer from the wrapper, as fast
# as the real systemctl's D-Bus call, where the Python stand-in would cost
# the lab's shared CPU ~50 ms (the install script starts and enables
# containerd again on every join): ``is-active`` of a running service,
# ``start`` of a running one, ``enable`` of an enabled one. Everything else
# (and the NFS server, whose unit comes with a package) goes to Python.
FAST_SYSTEMCTL = """standin_running() {{
    [ -r {pid_dir}/$1.pid ] && read -r pid < {pid_dir}/$1.pid &&
        [ -r /proc/$pid/stat ] && read -r stat < /proc/$pid/stat || return 1
    state=${{stat##*) }}
    case ${{state%% *}} in Z|X) return 1 ;; esac
}}
case "$#:$1:$2" in
    2:is-active:*|3:is-active:-q|3:is-active:--quiet|2:start:*|2:enable:*)
        if [ $# = 3 ]; then unit=$3; else unit=$2; fi
        unit=${{unit%.service}}
        case $unit in
            {units})
                if [ "$1" = enable ]; then
                    [ -e {enabled_dir}/$unit ] && exit 0
                elif standin_running "$unit"; then
                    [ "$#:$1" = 2:is-active ] && echo active
                    exit 0
                fi ;;
        esac ;;
esac
"""
FAST_UNITS = ('haproxy', 'keepalived', 'etcd', 'kube-apiserver', 'kubelet',
              'containerd', 'rpcbind')


def fast_systemctl():
    """The systemctl wrapper's shell answers (FAST_SYSTEMCTL)."""
    from k8s_mgmt_lab.kube import systemctl
    return FAST_SYSTEMCTL.format(
        pid_dir=shlex.quote(systemctl.PID_DIR),
        enabled_dir=shlex.quote(systemctl.ENABLED_DIR),
        units='|'.join(FAST_UNITS))


def fast_version(tool, version):
    """The wrapper's answer to ``tool``'s version query, '' for a tool
    without one."""
    if tool not in VERSION_QUERIES:
        return ''
    query, text = VERSION_QUERIES[tool]
    return FAST_VERSION.format(
        query=shlex.quote(query),
        text=' '.join(shlex.quote(line) for line in
                      text.format(version=version).split('\n')))


# apt-get as the real one, unless the "apt" fault is set: then it fails as
# apt does when its mirror cannot be reached.
APT_GET = """#!/bin/sh
# k8s-mgmt lab: the real apt-get, or a failing one under the "apt" fault
# (lab/k8s_mgmt_lab/kube/faults.py)
if [ -e {fault} ]; then
    echo "[k8s-mgmt lab] fault \\"apt\\" is set on this VM; clear it with \\
\\"k8s-mgmt lab fault VM apt --clear\\"" >&2
    echo "E: Failed to fetch InRelease  Could not connect to the mirror \\
(k8s-mgmt lab fault)" >&2
    echo "E: Unable to fetch some archives, maybe run apt-get update or try \\
with --fix-missing?" >&2
    exit 100
fi
exec /usr/bin/apt-get "$@"
"""

# Recorded by the API server like any manifest; no pod network is made.
CNI_YAML = """# k8s-mgmt lab stand-in CNI: objects are stored, nothing runs.
apiVersion: v1
kind: ServiceAccount
metadata:
  name: standin-cni
  namespace: kube-system
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: standin-cni
  namespace: kube-system
  labels:
    k8s-app: standin-cni
spec:
  selector:
    matchLabels:
      k8s-app: standin-cni
  template:
    metadata:
      labels:
        k8s-app: standin-cni
    spec:
      serviceAccountName: standin-cni
      containers:
      - name: cni
        image: registry.invalid/k8s-mgmt-lab/standin-cni:1
"""


# The stand-ins' bytecode, compiled next to the sources when the layer is
# written: where Python may not write it (PYTHONDONTWRITEBYTECODE, or the
# VMs, which see the source tree read-only) every stand-in start compiled
# its modules again, as no real kubectl or kubeadm does. (Not through
# PYTHONPYCACHEPREFIX: that moves the lookup of every module, the standard
# library's too, and each VM then compiled them all.) The kubespray
# stand-in's tree below this package is data, copied as it is to the Ansible
# server (cp -r): no bytecode there.
KUBESPRAY_TREE = re.compile(r'[/\\]kubespray_standin[/\\]')


def compile_standins(roots=None):
    """Bytecode (``__pycache__``) of what the stand-ins import from the
    source trees (the lab package's top and ``kube``, but not the
    kubespray tree, which is data; the driver's ``k8s_mgmt.polling``;
    ``machines.prereq``), or of ``roots``."""
    import compileall
    import importlib.util
    if roots is None:
        here = os.path.dirname(os.path.abspath(__file__))
        lab = os.path.dirname(here)
        machines = os.path.join(lab, 'machines')
        roots = [here, os.path.join(lab, '__init__.py'),
                 os.path.join(machines, '__init__.py'),
                 os.path.join(machines, 'prereq.py')]
        spec = importlib.util.find_spec('k8s_mgmt.polling')
        if spec is not None and spec.origin:
            roots += [spec.origin, os.path.join(
                os.path.dirname(spec.origin), '__init__.py')]
    saved = sys.pycache_prefix
    sys.pycache_prefix = None
    try:
        for root in roots:
            if os.path.isdir(root):
                compileall.compile_dir(root, quiet=1, rx=KUBESPRAY_TREE)
            elif os.path.exists(root):
                compileall.compile_file(root, quiet=1)
    finally:
        sys.pycache_prefix = saved


def wrapper(tool, module, python=None, version=None):
    """The /bin/sh wrapper running stand-in ``module`` as ``tool``; with
    ``version`` ('1.35.1': a package's) it answers the tool's version
    query itself and tells the stand-in its version."""
    env = fast = ''
    if version is not None:
        env = VERSION_ENV_LINE.format(name=kube.VERSION_ENV,
                                      version=shlex.quote('v' + version))
        fast = fast_version(tool, 'v' + version)
    elif tool == 'systemctl':
        fast = fast_systemctl()
    return WRAPPER.format(
        tool=tool, module=module, env=env, fast=fast,
        python_path=shlex.quote(kube.python_path()),
        argv=shlex.join(kube.python_argv(module, python=python)))


def package_payload(python=None):
    """``payload(tool, version)`` for :func:`k8s_mgmt_lab.machines.
    k8s_repo.build`: the executable each package holds."""
    compile_standins()

    def payload(tool, version):
        if tool == 'crictl':
            from k8s_mgmt_lab.kube import systemctl
            return CRICTL.format(version=version,
                                 pid_dir=shlex.quote(systemctl.PID_DIR))
        return wrapper(tool, PACKAGED_TOOLS[tool], python=python,
                       version=version)
    return payload


def write_layer(directory, python=None, init_delay=0.0, join_delay=0.0,
                node_grace=None, kubernetes_version=None, etcd_timing=None,
                upgrade_delay=0.0):
    """Write the stand-in layer into ``directory`` (created if needed)."""
    python = python or sys.executable
    apt_fault = shlex.quote(os.path.join(faults.FAULT_DIR, 'apt'))
    compile_standins()
    for rel, module in TOOLS.items():
        kube.write_file(os.path.join(directory, rel),
                        wrapper(os.path.basename(rel), module, python),
                        0o755)
    kube.write_file(os.path.join(directory, 'usr/local/bin/apt-get'),
                    APT_GET.format(fault=apt_fault), 0o755)
    values = dict(kube.DEFAULTS, init_delay=float(init_delay),
                  join_delay=float(join_delay),
                  upgrade_delay=float(upgrade_delay),
                  nfs_server_root=prereq.GANESHA_ROOT)
    if node_grace is not None:
        values['node_grace'] = float(node_grace)
    if kubernetes_version:
        values['kubernetes_version'] = kubernetes_version
    if etcd_timing:
        values['etcd_timing'] = etcd_timing
    settings_path = directory + kube.SETTINGS_FILE
    kube.write_file(settings_path, json.dumps(values, indent=1) + '\n',
                    0o644)
    kube.write_file(directory + CNI_MANIFEST, CNI_YAML, 0o644)
    return directory


def host_paths(python=None):
    """Host directories the stand-ins run from: the interpreter, its standard
    library, this source tree and the site-packages on their path.

    The VMs see them bound read-only at the same paths, wherever the project
    lives (a clone under /tmp is hidden by the VM's own /tmp otherwise).
    """
    python = os.path.realpath(python or sys.executable)
    paths = [os.path.dirname(python), sys.base_prefix, sys.prefix]
    paths += kube.python_path().split(os.pathsep)
    # The local package repository and the unpacked NFS server (filled
    # later, when the lab image is built).
    os.makedirs(prereq.PACKAGE_CACHE, mode=0o755, exist_ok=True)
    paths.append(prereq.PACKAGE_CACHE)
    paths = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)},
                   key=len)
    kept = []
    for path in paths:  # a directory inside a kept one is already there
        if not any(path == k or path.startswith(k.rstrip('/') + '/')
                   for k in kept):
            kept.append(path)
    return [p for p in kept if _hidden_in_vm(p)]


def _hidden_in_vm(path):
    """True when the VM's overlay of / would not show ``path``: it lies on
    another host filesystem than /, or under a mount the VM makes its own.
    Everything else is visible already, and binding it (say /usr) would hide
    the stand-in layer above it."""
    if any(path == m or path.startswith(m + '/')
           for m in rootfs.VM_OWN_MOUNTS):
        return True
    return os.stat(path).st_dev != os.stat('/').st_dev
