"""The kubespray flavour's pre-built Ansible server: one lab VM outside the
stack.

An operator of the kubespray mode brings an Ansible server of their own;
the lab starts one for them: a VM like the others on the lab bridge (not a
Heat resource, so no LCM operation touches it), with the real ansible-core
of the lab's Python environment on the SSH user's PATH and, as
``/opt/kubespray``, the lab's stand-in for a kubespray checkout
(``k8s_mgmt_lab/kube/kubespray_standin``: real playbooks that install
containerd, download the kubeadm, kubelet and kubectl stand-ins from the
lab's mirror of dl.k8s.io onto the nodes, as kubespray downloads the real
ones, and drive them). A callback in Ansible's system plugin directory
appends every playbook run to an audit log outside the kubespray directory;
:func:`playbook_runs` reads it back.
"""

import importlib.metadata
import json
import os
import shlex
import socket
import sys

from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines import rootfs

VM_ID = 'lab-ansible-server'
HOSTNAME = 'ansible-server'
USER = 'ubuntu'
KUBESPRAY_ROOT = '/opt/kubespray'
# Where the sample request tells the driver to put the inventory.
INVENTORY_PATH = '/home/ubuntu/k8s-mgmt-inventory'
AUDIT_LOG = '/var/log/k8s-mgmt-lab/playbook-runs.jsonl'
CALLBACK_DIR = '/usr/share/ansible/plugins/callback'
STANDIN_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    'kube', 'kubespray_standin')
CALLBACK_FILE = os.path.join(STANDIN_DIR, 'audit', 'k8s_mgmt_lab_audit.py')
# Where the copied stand-in gets the lab's mirror of dl.k8s.io, as
# kubespray's dl_k8s_io_url. An operator of an air-gapped site sets that
# variable in the group_vars beside their inventory; but the driver writes
# an inventory of its own (transferring_inventory_path), so nothing beside
# an inventory is read. A role default is read by every stand-in playbook
# that prepares or resets nodes (cluster.yml, scale.yml, remove-node.yml,
# reset.yml) whatever the inventory, and still yields to an inventory or
# -e value, which a vars_files entry of the playbooks would not.
DL_K8S_IO_URL_FILE = (KUBESPRAY_ROOT +
                      '/roles/lab_kubeadm/defaults/main/dl_k8s_io_url.yml')
SSH_PROBE_TIMEOUT = 5.0
ANSIBLE_TOOLS = ('ansible', 'ansible-playbook', 'ansible-inventory',
                 'ansible-config')
STAND_IN = ('a lab VM with the real ansible-core (%s) and /opt/kubespray: '
            'the lab\'s stand-in playbooks with kubespray\'s names, not '
            'kubespray')


def server_ip(subnet):
    """The Ansible server's address: the last host of the lab subnet, which
    the lab cloud hands out last (it is reserved before the stack is
    built)."""
    import ipaddress
    network = ipaddress.ip_network(subnet)
    return str(network.broadcast_address - 1)


def _venv_bin():
    return os.path.dirname(os.path.abspath(sys.executable))


def _python_paths():
    """The host directories the Ansible server's tools run from: the
    environment's bin, its interpreter, the prefixes and this code."""
    import k8s_mgmt
    import k8s_mgmt_lab
    return [_venv_bin(), os.path.dirname(os.path.realpath(sys.executable)),
            sys.prefix, sys.base_prefix,
            os.path.dirname(os.path.dirname(k8s_mgmt.__file__)),
            os.path.dirname(os.path.dirname(k8s_mgmt_lab.__file__))]


def closed_ancestors(paths):
    """The directories on the way to ``paths`` (themselves included) that
    others may not enter on the host (no o+x: /root, a checkout made with
    mktemp -d under /var/tmp), on the host's root filesystem: the VM sees
    them through its overlay, where a chmod changes only the VM's copy.
    Under the VM's own mounts and on other filesystems the lab binds the
    host's directories read-only; they are left as they are."""
    root_dev = os.stat('/').st_dev
    found = set()
    for path in paths:
        path = os.path.realpath(path)
        while True:
            if any(path == m or path.startswith(m + '/')
                   for m in rootfs.VM_OWN_MOUNTS):
                break
            try:
                info = os.stat(path)
            except OSError:
                break
            if info.st_dev == root_dev and not info.st_mode & 0o001:
                found.add(path)
            if path == '/':
                break
            path = os.path.dirname(path)
    return sorted(found)


def dl_k8s_io_url_yaml(downloads):
    """The role-defaults file that points kubespray's ``dl_k8s_io_url`` at
    ``downloads`` (a JSON string is a YAML double-quoted scalar)."""
    return ('---\n'
            '# Written by "k8s-mgmt lab up": the mirror of dl.k8s.io on the '
            'lab bridge,\n'
            '# as kubespray dl_k8s_io_url (an inventory or -e value '
            'overrides it).\n'
            'dl_k8s_io_url: %s\n' % json.dumps(downloads))


def setup_script(venv_bin, downloads=None, closed=None):
    """The root shell script that makes a fresh lab VM the Ansible server.

    Every path comes from the host's filesystem, which the VM sees through
    its overlay (the lab source tree and the Python environment are bound
    at the same paths). With ``downloads`` (the lab's mirror of dl.k8s.io,
    ``http://GATEWAY:PORT/dl``) the copied stand-in downloads the
    Kubernetes binaries from there (:data:`DL_K8S_IO_URL_FILE`); without
    it, from dl.k8s.io. ``closed``: the directories the SSH user must be
    let through in the VM (default: :func:`closed_ancestors` of the
    environment and this code)."""
    if closed is None:
        closed = closed_ancestors(_python_paths())
    site = []
    if downloads is not None:
        # One line of the script: printf writes each argument as a line.
        site = ['%s >%s' % (
            shlex.join(['printf', r'%s\n'] +
                       dl_k8s_io_url_yaml(downloads).splitlines()),
            shlex.quote(DL_K8S_IO_URL_FILE))]
    links = ' '.join(shlex.quote(os.path.join(venv_bin, tool))
                     for tool in ANSIBLE_TOOLS)
    return '\n'.join([
        'set -eu',
    ] + [
        # The environment's interpreter may live under /root (pyenv), the
        # checkout under a directory only root may enter: the SSH user must
        # reach them. Only this VM's copy of each directory changes.
        'chmod o+x %s' % shlex.quote(path) for path in closed
    ] + [
        'rm -rf %s' % KUBESPRAY_ROOT,
        'mkdir -p /opt %s %s' % (CALLBACK_DIR,
                                 shlex.quote(os.path.dirname(AUDIT_LOG))),
        'cp -r %s %s' % (shlex.quote(STANDIN_DIR), KUBESPRAY_ROOT),
        'rm -rf %s/audit' % KUBESPRAY_ROOT,
    ] + site + [
        'cp %s %s/' % (shlex.quote(CALLBACK_FILE), CALLBACK_DIR),
        'chown -R %s: %s %s' % (USER, KUBESPRAY_ROOT,
                                shlex.quote(os.path.dirname(AUDIT_LOG))),
        'for tool in %s; do ln -sf "$tool" /usr/local/bin/; done' % links,
        'su - %s -c "ansible-playbook --version" >/dev/null' % USER,
    ]) + '\n'


def start(vms, ip, password, downloads=None):
    """Boot the Ansible server VM on ``ip`` and set it up; its record for
    lab.json. ``downloads``: the lab's mirror of dl.k8s.io, for the
    stand-in's ``dl_k8s_io_url`` (:func:`setup_script`)."""
    info = vms.create(VM_ID, HOSTNAME, ip)
    try:
        vms.exec(VM_ID, ['/bin/sh', '-c',
                         setup_script(_venv_bin(), downloads)],
                 timeout=120)
    except Exception:
        vms.destroy(VM_ID)
        raise
    return {'vm_id': VM_ID, 'hostname': HOSTNAME, 'ip': info.ip,
            'username': USER, 'password': password,
            'kubespray_root_path': KUBESPRAY_ROOT,
            'transferring_inventory_path': INVENTORY_PATH,
            'audit_log': AUDIT_LOG,
            'host_key_sha256': info.host_key_sha256}


def fill_request(body, server):
    """The sample request's ``ansible`` section pointed at the lab's
    Ansible server ``server`` (its lab.json record)."""
    root = body['additionalParams']['k8s_cluster_installation_param']
    section = root.setdefault('ansible', {})
    section.update(ip_address=server['ip'], username=server['username'],
                   password=server['password'],
                   kubespray_root_path=server['kubespray_root_path'],
                   transferring_inventory_path=server[
                       'transferring_inventory_path'])
    return body


def give_host_key(body, server):
    """The request's ``ansible`` section, when it names the lab's Ansible
    server ``server`` and gives no fingerprint, gets the fingerprint of
    the host key the lab made for it: an operator reads it on the server's
    console, and the driver refuses a first contact it cannot verify."""
    root = body['additionalParams']['k8s_cluster_installation_param']
    section = root.get('ansible')
    if (isinstance(section, dict) and server.get('host_key_sha256') and
            section.get('ip_address') == server['ip'] and
            'host_key_fingerprint' not in section):
        section['host_key_fingerprint'] = server['host_key_sha256']
    return body


def _audit_file(vm_dir):
    return os.path.join(vm_dir, 'upper', AUDIT_LOG.lstrip('/'))


def playbook_runs(registry, record):
    """Every playbook run on the lab's Ansible server, oldest first: one
    dict per run, as the audit callback wrote it (``playbook``,
    ``limit``, ``extra_vars``, ``hosts``, ``connected``, ``delegated_to``,
    ``ssh`` settings, ``recap``, ``failed``...)."""
    server = (record or {}).get('ansible_server')
    if not server:
        raise LabError('this lab has no Ansible server (it is started by '
                       '"k8s-mgmt lab up --flavour kubespray")')
    vm = registry.read()['vms'].get(server['vm_id']) or {}
    if not vm.get('vm_dir'):
        raise LabError('the Ansible server VM %s is gone' % server['vm_id'])
    try:
        with open(_audit_file(vm['vm_dir'])) as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines if line.strip()]


def answers_ssh(ip, timeout=SSH_PROBE_TIMEOUT):
    """Does an SSH server answer on ``ip``:22 (its banner)?"""
    try:
        with socket.create_connection((ip, 22), timeout=timeout) as sock:
            return sock.recv(8).startswith(b'SSH-')
    except OSError:
        return False


def ansible_core_version():
    try:
        return importlib.metadata.version('ansible-core')
    except importlib.metadata.PackageNotFoundError:
        return 'not installed'


def status_entry(registry, record):
    """The Ansible server's row of ``lab status`` (None without one)."""
    server = (record or {}).get('ansible_server')
    if not server:
        return None
    vm = registry.read()['vms'].get(server['vm_id']) or {}
    entry = {'name': server['hostname'], 'role': 'ansible_server',
             'server_id': None, 'vm_id': server['vm_id'],
             'ip': server['ip'], 'username': server['username'],
             'kubespray_root_path': server['kubespray_root_path'],
             'transferring_inventory_path': server[
                 'transferring_inventory_path'],
             'audit_log': server['audit_log'],
             'running': vm.get('status') == 'running',
             'stand_in': STAND_IN % ansible_core_version()}
    try:
        entry['playbook_runs'] = len(playbook_runs(registry, record))
    except (LabError, ValueError):
        entry['playbook_runs'] = None
    return entry
