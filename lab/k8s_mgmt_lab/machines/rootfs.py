"""Copy-on-write root filesystems of lab VMs.

A VM's root is an overlay of three layers: its own upper dir (hostname, host
key, sshd config, everything the VM writes), the lab image layer shared by all
VMs (user ``ubuntu``, sudo rule, init program, hidden host keys, apt pointed
at the lab's local package repository) and the host's ``/`` as the read-only
bottom. Nothing is copied from the host's root
and nothing is written to it. All layers live on a tmpfs under the lab state
dir, so an upper dir is never itself on an overlay and teardown is one umount.
"""

import base64
import hashlib
import os
import shutil

from k8s_mgmt_lab.machines import prereq
from k8s_mgmt_lab.machines.host import run

USER = 'ubuntu'
INIT_PATH = '/usr/local/sbin/k8s-lab-init'
HOST_KEY = '/etc/ssh/ssh_host_ed25519_key'
SUDOERS_FILE = '/etc/sudoers.d/90-k8s-mgmt-lab-ubuntu'
APT_SOURCE = '/etc/apt/sources.list.d/k8s-mgmt-lab.list'
APT_LISTS = '/var/lib/apt/lists'
DPKG_STATUS = '/var/lib/dpkg/status'
DPKG_INFO = '/var/lib/dpkg/info'
# Packages a fresh VM has not got, whatever the host has: the install
# script installs them (the host of this project's CI has Google Cloud
# SDK's kubectl package, which every VM would otherwise see installed).
HIDDEN_PACKAGES = ('kubeadm', 'kubelet', 'kubectl', 'cri-tools',
                   'kubernetes-cni', 'containerd', 'containerd.io', 'runc')
POLICY_RC_D = '/usr/sbin/policy-rc.d'
# The VM mounts its own tmpfs on these (the boot script below), hiding the
# host's content: what the host has there is bound into the VM read-only.
VM_OWN_MOUNTS = ('/tmp', '/run', '/dev')
# Package scripts start no daemon (as in an image build); the node scripts
# start services through systemctl.
POLICY_RC_D_SCRIPT = """#!/bin/sh
# k8s-mgmt lab VM: invoke-rc.d starts nothing
exit 101
"""

SSHD_CONFIG = """\
# sshd of a k8s-mgmt lab VM (generated per VM boot)
ListenAddress {ip}:22
HostKey {host_key}
PidFile /run/sshd.pid
UseDNS no
UsePAM no
PasswordAuthentication yes
KbdInteractiveAuthentication no
PermitRootLogin no
PrintMotd no
AcceptEnv LANG LC_*
# The driver opens many sessions to one VM at once.
MaxStartups 200:30:400
MaxSessions 100
Subsystem sftp /usr/lib/openssh/sftp-server
"""

HOSTS = """\
127.0.0.1\tlocalhost
::1\tlocalhost ip6-localhost ip6-loopback
{ip}\t{hostname}
"""

# PID 1 of a VM's PID namespace. Signals stay blocked and are taken with
# sigwait, so no SIGCHLD is lost between reaping and waiting. It runs under
# the VM's python3 -I -S and so imports nothing but the standard library.
INIT_PROGRAM = r'''"""k8s-mgmt lab VM init: runs sshd, reaps orphans."""
import os
import signal
import time

WATCHED = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT}
SSHD = ['/usr/sbin/sshd', '-D', '-e', '-f', '/etc/ssh/sshd_config']


def start_sshd():
    os.makedirs('/run/sshd', 0o755, exist_ok=True)
    log = os.open('/run/sshd.log', os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                  0o600)
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.dup2(os.open('/dev/null', os.O_RDONLY), 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.execv(SSHD[0], SSHD)
    os.close(log)


def reap():
    """Reap every exited child; True when no child is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False


def shutdown():
    # Each exit wakes sigtimedwait (SIGCHLD stays blocked), so the grace
    # is a deadline, not a sleep: a child ignoring SIGTERM cannot hold it.
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 0)):
        try:
            os.kill(-1, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while not reap():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            signal.sigtimedwait({signal.SIGCHLD}, remaining)


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    start_sshd()
    while True:
        reap()
        if signal.sigwait(WATCHED) != signal.SIGCHLD:
            shutdown()
            return


main()
'''

# Runs as PID 1 of the new PID namespace, inside the VM's netns and private
# mount namespace, before the chroot: builds the VM's root and execs init.
BOOT_SCRIPT = r"""
set -eu
root=$1 upper=$2 work=$3 lower=$4 name=$5 binds=${6:-}
opts="lowerdir=$lower,upperdir=$upper,workdir=$work"
mount -t overlay -o "$opts" k8slab-root "$root"
mount -t proc proc "$root/proc"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
mount -t tmpfs -o mode=755,size=8m,nosuid k8slab-dev "$root/dev"
cd "$root/dev"
mknod -m 666 null c 1 3; mknod -m 666 zero c 1 5; mknod -m 666 full c 1 7
mknod -m 666 random c 1 8; mknod -m 666 urandom c 1 9; mknod -m 666 tty c 5 0
ln -s pts/ptmx ptmx; ln -s /proc/self/fd fd
ln -s /proc/self/fd/0 stdin; ln -s /proc/self/fd/1 stdout
ln -s /proc/self/fd/2 stderr
mkdir pts shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts pts
mount -t tmpfs -o mode=1777,nosuid,nodev k8slab-shm shm
mount -t tmpfs -o mode=755,nosuid,nodev k8slab-run "$root/run"
# A container shares the host's kernel: systemd's convention, which the
# install script reads to report the kernel settings it cannot change.
mkdir -p "$root/run/systemd"
echo k8s-mgmt-lab >"$root/run/systemd/container"
mount -t tmpfs -o mode=1777,nosuid,nodev k8slab-tmp "$root/tmp"
# Host paths the VM must see as they are (the stand-ins' Python and code),
# read-only, even where a tmpfs above or a host mount below hides them.
IFS=:
for path in $binds; do
    mkdir -p "$root$path"
    mount --bind "$path" "$root$path"
    mount -o remount,bind,ro "$root$path"
done
unset IFS
cd /
hostname "$name"
exec chroot "$root" /usr/bin/python3 -I -S """ + INIT_PATH + "\n"


def hash_password(password):
    """SHA-512 crypt hash; the password goes through stdin, never argv."""
    proc = run(['openssl', 'passwd', '-6', '-stdin'], input=password + '\n')
    return proc.stdout.strip()


def _write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)
    os.chmod(path, mode)


def _read_lines(path):
    with open(path) as f:
        return [line for line in f.read().splitlines() if line]


def _user_entries(password_hash):
    """Host account files plus user ubuntu, for the image layer only."""
    passwd = [entry for entry in _read_lines('/etc/passwd')
              if not entry.startswith(USER + ':')]
    used_ids = {int(entry.split(':')[2]) for entry in passwd}
    uid = next(i for i in range(1000, 60000) if i not in used_ids)
    group = [entry for entry in _read_lines('/etc/group')
             if not entry.startswith(USER + ':')]
    gids = {int(entry.split(':')[2]) for entry in group}
    gid = uid if uid not in gids else next(
        i for i in range(1000, 60000) if i not in gids)
    passwd.append('%s:x:%d:%d:Lab VM user:/home/%s:/bin/bash'
                  % (USER, uid, gid, USER))
    group = [_add_member(entry, 'sudo') for entry in group]
    group.append('%s:x:%d:' % (USER, gid))
    shadow = [entry for entry in _read_lines('/etc/shadow')
              if not entry.startswith(USER + ':')]
    shadow.append('%s:%s:19000:0:99999:7:::' % (USER, password_hash))
    return uid, gid, passwd, group, shadow


def _add_member(group_line, name):
    fields = group_line.split(':')
    if fields[0] != name:
        return group_line
    members = [m for m in fields[3].split(',') if m]
    fields[3] = ','.join(members + [USER])
    return ':'.join(fields)


def build_image(image_dir, password):
    """Write the layer all VMs share. ``password`` is the plain password."""
    uid, gid, passwd, group, shadow = _user_entries(hash_password(password))
    etc = os.path.join(image_dir, 'etc')
    _write(os.path.join(etc, 'passwd'), '\n'.join(passwd) + '\n')
    _write(os.path.join(etc, 'group'), '\n'.join(group) + '\n')
    _write(os.path.join(etc, 'shadow'), '\n'.join(shadow) + '\n', 0o640)
    os.chown(os.path.join(etc, 'shadow'), 0, _shadow_gid(group))
    _write(image_dir + SUDOERS_FILE, '%s ALL=(ALL) NOPASSWD:ALL\n' % USER,
           0o440)
    _write(os.path.join(etc, 'resolv.conf'),
           '# lab VM: no name server; lab traffic stays on the lab subnet\n')
    _write(image_dir + INIT_PATH, INIT_PROGRAM, 0o755)
    _hide_host_keys(os.path.join(etc, 'ssh'))
    _apt_layer(image_dir)
    home = os.path.join(image_dir, 'home', USER)
    shutil.copytree('/etc/skel', home, dirs_exist_ok=True)
    for dirpath, _, files in os.walk(home):
        os.chown(dirpath, uid, gid)
        for name in files:
            os.chown(os.path.join(dirpath, name), uid, gid)
    os.chmod(home, 0o750)


def _shadow_gid(group_lines):
    for line in group_lines:
        if line.startswith('shadow:'):
            return int(line.split(':')[2])
    return 0


def _whiteout(path):
    # A char device 0/0 is an overlay whiteout: the host's file at that path
    # is invisible inside every VM.
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.mknod(path, 0o600 | 0o020000, 0)


def _hide_host_keys(ssh_dir):
    os.makedirs(ssh_dir, exist_ok=True)
    for name in os.listdir('/etc/ssh'):
        if name.startswith('ssh_host_'):
            _whiteout(os.path.join(ssh_dir, name))


def _apt_layer(image_dir):
    """apt in a VM knows only the lab's local repository (the host's sources
    and package lists are hidden) and package scripts start no daemon."""
    repository = prereq.local_packages()
    sources = '/etc/apt/sources.list.d'
    hidden = [os.path.join(sources, n) for n in os.listdir(sources)] \
        if os.path.isdir(sources) else []
    for path in hidden + ['/etc/apt/sources.list']:
        if os.path.lexists(path):
            _whiteout(image_dir + path)
    _write(image_dir + APT_SOURCE, '# k8s-mgmt lab: the only package source '
           'of a lab VM\ndeb [trusted=yes] file:%s ./\n' % repository)
    lists = image_dir + APT_LISTS
    os.makedirs(os.path.join(lists, 'partial'))
    os.setxattr(lists, 'trusted.overlay.opaque', b'y')
    _write(image_dir + POLICY_RC_D, POLICY_RC_D_SCRIPT, 0o755)
    hide_packages(image_dir, HIDDEN_PACKAGES)
    # dpkg's man-db trigger rebuilds the whole manual index (about 10 s per
    # install); without this flag file it does nothing.
    if os.path.exists('/var/lib/man-db/auto-update'):
        _whiteout(image_dir + '/var/lib/man-db/auto-update')


def hide_packages(image_dir, names, status_path=DPKG_STATUS,
                  info_dir=DPKG_INFO):
    """The host's installed packages among ``names`` are not in the VMs:
    their files and dpkg's records of them are whited out, and dpkg's
    status in the layer lists everything else. Returns the names hidden."""
    try:
        with open(status_path) as handle:
            stanzas = handle.read().split('\n\n')
    except FileNotFoundError:
        return []
    kept, hidden = [], []
    for stanza in stanzas:
        package = next((line.split(':', 1)[1].strip()
                        for line in stanza.splitlines()
                        if line.startswith('Package:')), None)
        if package in names:
            hidden.append(package)
        else:
            kept.append(stanza)
    if not hidden:
        return []
    for package in hidden:
        for path in _package_files(info_dir, package):
            if os.path.islink(path) or (os.path.lexists(path) and
                                        not os.path.isdir(path)):
                # Through the host's directory links (merged /usr: /bin
                # is usr/bin), or the layer's directory would hide them.
                _whiteout(image_dir + os.path.join(
                    os.path.realpath(os.path.dirname(path)),
                    os.path.basename(path)))
    _write(image_dir + status_path,
           '\n\n'.join(s for s in kept if s.strip()).rstrip('\n') + '\n\n')
    return hidden


def _package_files(info_dir, package):
    """The files dpkg installed for ``package`` and dpkg's own files
    about it (its ``info`` entries)."""
    found = []
    for arch in ('', ':amd64'):
        listing = os.path.join(info_dir, '%s%s.list' % (package, arch))
        try:
            with open(listing) as handle:
                found += [line.rstrip('\n') for line in handle
                          if line.strip() not in ('', '/.')]
        except FileNotFoundError:
            continue
    prefixes = (package + '.', package + ':')
    found += [os.path.join(info_dir, entry) for entry in
              (os.listdir(info_dir) if os.path.isdir(info_dir) else ())
              if entry.startswith(prefixes)]
    return found


def prepare_upper(upper, vm_id, hostname, ip):
    """Per-VM files: identity, sshd config and a fresh ed25519 host key."""
    etc = os.path.join(upper, 'etc')
    _write(os.path.join(etc, 'hostname'), hostname + '\n')
    _write(os.path.join(etc, 'hosts'), HOSTS.format(ip=ip, hostname=hostname))
    _write(os.path.join(etc, 'machine-id'),
           hashlib.md5(vm_id.encode()).hexdigest() + '\n', 0o444)
    _write(upper + '/etc/ssh/sshd_config',
           SSHD_CONFIG.format(ip=ip, host_key=HOST_KEY), 0o644)
    run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C',
         'root@%s' % hostname, '-f', upper + HOST_KEY])
    return host_key_sha256(upper + HOST_KEY + '.pub')


def host_key_sha256(pub_path):
    """OpenSSH-style fingerprint (``SHA256:...``) of a public key file."""
    with open(pub_path) as f:
        blob = base64.b64decode(f.read().split()[1])
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode()
    return 'SHA256:' + digest.rstrip('=')
