"""Lab VMs: namespaces with their own root filesystem and OpenSSH server.

A VM is started as ``ip netns exec <netns> unshare --mount --uts --pid
--fork --mount-proc sh -c BOOT``: the boot script builds the overlay root
inside the VM's private mount namespace and chroots into the init program,
which becomes PID 1 of the VM's PID namespace and starts sshd. Killing that
PID 1 ends every process of the VM and frees all its mounts.
"""

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

from oslo_log import log as logging

from k8s_mgmt.polling import Poll
from k8s_mgmt import secrets
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines import cleanup
from k8s_mgmt_lab.machines import net
from k8s_mgmt_lab.machines import registry as registry_mod
from k8s_mgmt_lab.machines import rootfs
from k8s_mgmt_lab.machines import vm_faults
from k8s_mgmt_lab.machines.host import run

LOG = logging.getLogger(__name__)

VM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
VM_ENV = {'PATH': VM_PATH, 'LANG': 'C.UTF-8', 'HOME': '/root'}
KILL_DEADLINE = 10.0       # s for a killed VM's processes to be gone
_HOSTNAME = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$')


@dataclasses.dataclass
class VMInfo:
    vm_id: str
    hostname: str
    ip: str
    netns: str
    init_pid: int  # host PID of the VM's PID 1; None after kill()
    state_dir: str
    host_key_sha256: str


class VMManager(object):
    """Creates, lists, crashes and destroys lab VMs on one LabNetwork."""

    def __init__(self, network, state_dir, password='ubuntu',
                 boot_timeout=15.0, extra_layers=(), bind_paths=()):
        self.network = network
        self.state_dir = os.path.abspath(state_dir)
        self.layers_dir = os.path.join(self.state_dir, 'vms')
        self.image_dir = os.path.join(self.layers_dir, 'image')
        self.password = secrets.Secret(password)
        self.boot_timeout = boot_timeout
        # Directories stacked above the lab image (e.g. stand-in binaries),
        # snapshotted onto the lab tmpfs on first use: a lower layer on the
        # host's root filesystem would overlap lowerdir=/ (ELOOP).
        self.extra_layers = [os.path.abspath(p) for p in extra_layers]
        # Host directories bound read-only at the same path in every VM.
        self.bind_paths = [os.path.abspath(p) for p in bind_paths]
        for path in self.bind_paths:
            if ':' in path or not os.path.isdir(path):
                raise LabError('cannot share %r with the lab VMs: not a '
                               'directory, or holds ":"' % path)
        self.registry = registry_mod.Registry(self.state_dir)
        self._image_lock = threading.Lock()
        self._launchers = {}

    # -- image --------------------------------------------------------------

    def ensure_image(self):
        """Build the image layer all VMs share, once."""
        with self._image_lock:
            done = os.path.join(self.image_dir, '.complete')
            if os.path.exists(done):
                return
            os.makedirs(self.layers_dir, exist_ok=True)
            if self.layers_dir not in cleanup.lab_mounts(self.layers_dir):
                # Upper dirs may not live on an overlay, and one tmpfs makes
                # teardown a single umount.
                run(['mount', '-t', 'tmpfs', '-o', 'mode=0700',
                     'k8slab-layers', self.layers_dir])
            rootfs.build_image(self.image_dir, self.password.reveal())
            open(done, 'w').close()

    def _layer_copy(self, source):
        name = hashlib.sha256(source.encode()).hexdigest()[:12]
        copy = os.path.join(self.layers_dir, 'extra-' + name)
        with self._image_lock:
            if not os.path.exists(copy):
                shutil.copytree(source, copy + '.tmp', symlinks=True)
                os.rename(copy + '.tmp', copy)
        return copy

    def _lowerdirs(self):
        extra = [self._layer_copy(p) for p in self.extra_layers]
        return ':'.join(extra + [self.image_dir, '/'])

    # -- lifecycle ----------------------------------------------------------

    def create(self, vm_id, hostname, ip):
        """Boot a VM; returns once its sshd answers on ip:22."""
        if not _HOSTNAME.match(hostname or ''):
            raise LabError('invalid VM hostname %r' % hostname)
        self.network.check_ip(ip)
        self.ensure_image()
        started = time.monotonic()
        short = self._claim(vm_id, hostname, ip)
        try:
            info = self._boot(vm_id, short, hostname, ip)
        except BaseException:
            self._remove(vm_id)
            raise
        LOG.info('lab VM %s (%s, %s) up in %.3f s', hostname, vm_id, ip,
                 time.monotonic() - started)
        return info

    def _claim(self, vm_id, hostname, ip):
        return self.registry.claim_vm(
            vm_id, net.short_name_candidates(vm_id),
            {'hostname': hostname, 'ip': ip, 'status': 'creating',
             'tag': self.network.tag})

    def _boot(self, vm_id, short, hostname, ip):
        vm_dir = os.path.join(self.layers_dir, short)
        dirs = {d: os.path.join(vm_dir, d) for d in ('upper', 'work', 'root')}
        for path in dirs.values():
            os.makedirs(path)
        netns = self.network.attach(short, ip)
        fingerprint = rootfs.prepare_upper(dirs['upper'], vm_id, hostname, ip)
        # Faults a test set for VMs not booted yet (lab fault --new-vms).
        vm_faults.apply_to_new(self.state_dir, dirs['upper'])
        argv = ['ip', 'netns', 'exec', netns,
                'unshare', '--mount', '--uts', '--pid', '--fork',
                '--mount-proc', '/bin/sh', '-c', rootfs.BOOT_SCRIPT,
                'k8s-lab-boot', dirs['root'], dirs['upper'], dirs['work'],
                self._lowerdirs(), hostname, ':'.join(self.bind_paths)]
        with open(os.path.join(vm_dir, 'boot.log'), 'wb') as log:
            launcher = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, env=VM_ENV, start_new_session=True)
        self._launchers[vm_id] = launcher
        self.registry.update_vm(vm_id, launcher_pid=launcher.pid,
                                netns=netns, vm_dir=vm_dir)
        init_pid = _wait_for_child(launcher, self.boot_timeout, vm_dir)
        self.registry.update_vm(vm_id, init_pid=init_pid)
        _wait_for_sshd(ip, launcher, self.boot_timeout, vm_dir)
        self.registry.update_vm(vm_id, status='running',
                                host_key_sha256=fingerprint)
        return self.get(vm_id)

    def create_many(self, specs):
        """Boot VMs in parallel; all or nothing.

        ``specs``: (vm_id, hostname, ip) tuples or dicts with those keys.
        """
        specs = [s if isinstance(s, dict) else
                 dict(zip(('vm_id', 'hostname', 'ip'), s)) for s in specs]
        if not specs:
            return []
        workers = min(len(specs), 2 * (os.cpu_count() or 1) + 2)
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            futures = [pool.submit(self.create, **s) for s in specs]
            concurrent.futures.wait(futures)
        failed = [(s['hostname'], f.exception())
                  for s, f in zip(specs, futures) if f.exception()]
        if failed:
            for spec, fut in zip(specs, futures):
                if not fut.exception():
                    self.destroy(spec['vm_id'])
            raise LabError('creating lab VMs failed: %s' % '; '.join(
                '%s: %s' % (name, err) for name, err in failed))
        return [f.result() for f in futures]

    def unplug_nic(self, vm_id, ip):
        """Take away the VM's NIC if it holds ``ip`` (a lab VM has one, at
        its first port's address): its veth is removed and the address is
        free for another VM; the VM runs on without a network until it is
        destroyed. A VM gone already, or at another address: nothing."""
        record = self.registry.read()['vms'].get(vm_id)
        if record is None or not ip or record.get('ip') != ip:
            return
        net.remove_link(net.host_veth_name(self.network.tag,
                                           record['short']))
        self.registry.update_vm(vm_id, ip=None)
        LOG.info('lab VM %s: NIC with %s unplugged', vm_id, ip)

    def kill(self, vm_id):
        """Crash the VM: every process in it dies and its link goes down;
        netns and files stay."""
        kill(self.registry, vm_id, self._launchers.pop(vm_id, None))

    def destroy(self, vm_id):
        """Kill the VM and remove its netns, veth and files."""
        self._record(vm_id)
        self._remove(vm_id)
        LOG.info('lab VM %s destroyed', vm_id)

    def _remove(self, vm_id):
        record = self.registry.read()['vms'].get(vm_id)
        if record is None:
            return
        if 'netns' in record:
            self.kill(vm_id)
            # Stray processes in the VM's netns (e.g. an exec in progress).
            cleanup.kill_processes(self._processes_of(record))
        self.network.detach(record['short'])
        vm_dir = os.path.join(self.layers_dir, record['short'])
        for point in cleanup.lab_mounts(vm_dir):
            run(['umount', '-l', point], check=False)
        shutil.rmtree(vm_dir, ignore_errors=True)
        self.registry.drop_vm(vm_id)

    def _processes_of(self, record):
        vm_dir = os.path.join(self.layers_dir, record['short'])
        return cleanup.lab_processes(vm_dir, [record.get('netns', '')])

    # -- queries ------------------------------------------------------------

    def _record(self, vm_id):
        record = self.registry.read()['vms'].get(vm_id)
        if record is None:
            raise LabError('no lab VM %s' % vm_id)
        return record

    def _info(self, vm_id, record):
        return VMInfo(vm_id=vm_id, hostname=record['hostname'],
                      ip=record['ip'], netns=record.get('netns'),
                      init_pid=record.get('init_pid'),
                      state_dir=record.get('vm_dir'),
                      host_key_sha256=record.get('host_key_sha256'))

    def get(self, vm_id):
        return self._info(vm_id, self._record(vm_id))

    def list(self):
        vms = self.registry.read()['vms']
        return [self._info(i, r) for i, r in sorted(vms.items())
                if r['status'] in ('running', 'killed')]

    def host_key_fingerprints(self, vm_id):
        """SHA256 fingerprints of every host key the VM's sshd can offer."""
        record = self._record(vm_id)
        ssh_dir = os.path.join(record['vm_dir'], 'upper', 'etc', 'ssh')
        return [rootfs.host_key_sha256(os.path.join(ssh_dir, name))
                for name in sorted(os.listdir(ssh_dir))
                if name.startswith('ssh_host_') and name.endswith('.pub')]

    def console_output(self, vm_id):
        """The VM's serial console as Nova returns it: a short boot log
        ending in the host key blocks cloud-init's keys-to-console module
        prints (through ``logger -t ec2``), made from the VM's real sshd
        host keys with ssh-keygen, as cloud-init does."""
        record = self._record(vm_id)
        ssh_dir = os.path.join(record['vm_dir'], 'upper', 'etc', 'ssh')
        pubs = [os.path.join(ssh_dir, name)
                for name in sorted(os.listdir(ssh_dir))
                if name.startswith('ssh_host_') and name.endswith('.pub')]
        prints = [run(['ssh-keygen', '-l', '-f', pub]).stdout.strip()
                  for pub in pubs]
        keys = []
        for pub in pubs:
            with open(pub) as handle:
                keys.append(handle.read().strip())
        stamp = time.strftime('%b %d %H:%M:%S', time.gmtime())
        tag = '<14>%s ec2: ' % stamp
        lines = ['[    0.000000] lab VM %s (%s): console of a network '
                 'namespace, not a kernel' % (record['hostname'], vm_id),
                 'Cloud-init v. lab running \'modules:final\'', tag,
                 tag + '#' * 61,
                 tag + '-----BEGIN SSH HOST KEY FINGERPRINTS-----']
        lines += [tag + line for line in prints]
        lines += [tag + '-----END SSH HOST KEY FINGERPRINTS-----',
                  tag + '#' * 61,
                  tag + '-----BEGIN SSH HOST KEY KEYS-----']
        lines += [tag + key for key in keys]
        lines += [tag + '-----END SSH HOST KEY KEYS-----',
                  'Cloud-init v. lab finished. Datasource DataSourceLab.']
        return '\n'.join(lines) + '\n'

    def exec(self, vm_id, argv, check=True, input=None, timeout=60.0):
        """Run argv as root inside the running VM (for the lab's own use)."""
        record = self._record(vm_id)
        if record['status'] != 'running' or not record.get('init_pid'):
            raise LabError('lab VM %s is not running' % record['hostname'])
        cmd = nsenter_argv(record['init_pid'], argv)
        proc = subprocess.run(cmd, input=input, capture_output=True,
                              text=not isinstance(input, bytes), env=VM_ENV,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise LabError('%s: %s exited %d: %s' % (
                record['hostname'], ' '.join(argv), proc.returncode,
                str(proc.stderr).strip()[-500:]))
        return proc


def nsenter_argv(init_pid, argv):
    """The host command running ``argv`` as root inside the VM whose PID 1
    is ``init_pid``: its mounts and root, hostname, processes, network."""
    return ['nsenter', '--target', str(init_pid), '--mount', '--uts',
            '--pid', '--net', '--root', '--wd', '--'] + list(argv)


def kill(registry, vm_id, launcher=None):
    """Crash VM ``vm_id``: SIGKILL its PID 1, so every process in it dies,
    and take its link down; netns and files stay. ``launcher`` is the
    VM's launcher process when this process started it (the lab daemon);
    from any other process the launcher is left to its parent to reap.
    Returns False when the VM had no PID 1 left (already dead)."""
    record = registry.read()['vms'].get(vm_id)
    if record is None:
        raise LabError('no lab VM %s' % vm_id)
    init, launcher_pid = record.get('init_pid'), record.get('launcher_pid')
    live = (cleanup.lab_processes(record['vm_dir'], [record['netns']])
            if record.get('vm_dir') and record.get('netns') else [])
    # Killing PID 1 of the VM's PID namespace kills all of its processes;
    # the launcher (unshare) then reaps it and exits.
    if init in live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(init, signal.SIGKILL)
    ours = [p for p in (init, launcher_pid) if p in live]
    try:
        # A zombie holds nothing of the VM; its parent reaps it.
        cleanup.wait_gone(ours, KILL_DEADLINE, zombies_ok=True)
    except LabError:
        cleanup.kill_processes(ours)
    if launcher is not None:
        launcher.wait()
    net.unplug(record.get('netns'))
    registry.update_vm(vm_id, status='killed', init_pid=None,
                       launcher_pid=None)
    return bool(init)


def _boot_failure(vm_dir, what):
    try:
        with open(os.path.join(vm_dir, 'boot.log'), errors='replace') as f:
            tail = f.read()[-800:].strip()
    except OSError:
        tail = ''
    return LabError('lab VM boot failed: %s; boot log: %s' % (what, tail))


def _backoff(timeout):
    """Attempts until ``timeout`` s from now, a few ms apart at first."""
    return Poll(timeout, first=0.002, maximum=0.05, factor=1.5)


def _wait_for_child(launcher, timeout, vm_dir):
    """Host PID of the VM's PID 1 (the only child of unshare --fork)."""
    path = '/proc/%d/task/%d/children' % (launcher.pid, launcher.pid)
    for _ in _backoff(timeout):
        if launcher.poll() is not None:
            raise _boot_failure(vm_dir, 'launcher exited %d'
                                % launcher.returncode)
        try:
            with open(path) as f:
                children = f.read().split()
        except OSError:
            children = []
        if children:
            return int(children[0])
    raise _boot_failure(vm_dir, 'no init process after %.1f s' % timeout)


def _wait_for_sshd(ip, launcher, timeout, vm_dir):
    for _ in _backoff(timeout):
        if launcher.poll() is not None:
            raise _boot_failure(vm_dir, 'VM init exited %d'
                                % launcher.returncode)
        try:
            with socket.create_connection((ip, 22), timeout=1.0) as sock:
                if sock.recv(8).startswith(b'SSH-'):
                    return
        except OSError:
            pass
    raise _boot_failure(vm_dir, 'sshd on %s:22 not answering after %.1f s'
                        % (ip, timeout))
