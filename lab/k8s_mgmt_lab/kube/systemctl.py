"""systemctl stand-in: systemd is not PID 1 in a lab VM.

Manages the services the node scripts use as plain processes of the VM, with
pid files in /run/standin: the REAL haproxy (master-worker mode, reloaded
with SIGUSR2 after ``haproxy -c``) and keepalived (reloaded with SIGHUP), the
REAL etcd (argv written by the kubeadm stand-in), the REAL rpcbind and, as
``nfs-kernel-server`` (alias ``nfs-server``), the REAL nfs-ganesha serving
/etc/exports (see ``nfs``), the Python stand-in kube-apiserver, and the
units packages bring (``PACKAGED``): the REAL containerd of Debian's
package and the kubelet of the lab repository's package (a stand-in),
each started from its unit file's ExecStart, and the REAL docker-registry
of Debian's package, from its whole ExecStart as its unit's ``User=``;
without the package, systemd's "Unit ... not found". Killing the VM's
init kills them all.
"""

import os
import pwd
import signal
import socket
import subprocess
import sys

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import nfs

PROG = 'systemctl'
PID_DIR = '/run/standin'
ENABLED_DIR = '/etc/systemd/standin-enabled'
LOG_DIR = '/var/log/standin'
# A service that dies within this many seconds of its start fails the start
# (services whose unit systemd cannot tell ready otherwise: see READINESS).
START_WINDOW = 0.3
# systemd's DefaultTimeoutStartSec: a service not ready by then fails.
START_TIMEOUT = 90.0
HAPROXY_CFG = '/etc/haproxy/haproxy.cfg'
NFS_SERVER = 'nfs-kernel-server'
ALIASES = {'nfs-server': NFS_SERVER}


def _python(module, *args):
    return kube.python_argv(module, *args)


def service_argv(name):
    """The command line of a known service, or None."""
    if name == 'haproxy':
        # -Ws as Debian's haproxy.service: master-worker, READY=1 on
        # $NOTIFY_SOCKET once the workers run.
        return ['/usr/sbin/haproxy', '-Ws', '-db', '-f', HAPROXY_CFG]
    if name == 'keepalived':
        return ['/usr/sbin/keepalived', '-n', '-l', '-D', '-f',
                '/etc/keepalived/keepalived.conf',
                '-p', PID_DIR + '/keepalived-main.pid',
                '-r', PID_DIR + '/keepalived-vrrp.pid',
                '-c', PID_DIR + '/keepalived-checkers.pid']
    if name == 'etcd':
        spec = kube.read_json(kube.STANDIN_DIR + '/etcd.json')
        return spec['argv'] if spec else None
    if name == 'kube-apiserver':
        return _python('apiserver', '--config',
                       kube.STANDIN_DIR + '/apiserver.json')
    if name in WHOLE_COMMAND:
        return unit_command(name)[0]
    if name in PACKAGED:
        return exec_start(name)
    if name == 'rpcbind':
        return ['/usr/sbin/rpcbind', '-f', '-w']
    if name == NFS_SERVER:
        return nfs.server_argv(_log_path(name))
    return None


# When a start is done, as systemd decides it from the unit (Type=):
# - 'notify': READY=1 arrives on $NOTIFY_SOCKET (Debian's haproxy.service
#   and containerd.service are Type=notify; the containerd stand-in
#   notifies as containerd does once its socket listens);
# - a path: keepalived.service is Type=notify too, but keepalived notifies
#   only when its parent process is systemd, so the pid file of its VRRP
#   child, written once that child is started, stands for READY=1;
# - anything else: still alive after START_WINDOW.
NOTIFY = 'notify'
READINESS = {'haproxy': NOTIFY, 'containerd': NOTIFY,
             'keepalived': PID_DIR + '/keepalived-vrrp.pid'}

KNOWN = ('haproxy', 'keepalived', 'etcd', 'kube-apiserver', 'kubelet',
         'containerd', 'docker-registry', 'rpcbind', NFS_SERVER)
# Verbs that need the unit file, which a package brings.
NEEDS_UNIT = ('start', 'restart', 'reload', 'reload-or-restart',
              'try-restart', 'enable')


# Units whose unit file a package installs (kubelet: the repository's
# kubelet, with kubeadm's drop-in; containerd: Debian's containerd).
PACKAGED = ('kubelet', 'containerd', 'docker-registry')
# Of those, units run as their unit file says in full: ExecStart's
# arguments as written (no variables in them) and as the unit's User=.
WHOLE_COMMAND = ('docker-registry',)
UNIT_DIRS = ('/etc/systemd/system', '/usr/lib/systemd/system',
             '/lib/systemd/system')


def unit_files(name):
    """The unit file of ``name`` and its drop-ins, in the order systemd
    reads them (the first unit file found; then every ``.conf`` of the
    ``.service.d`` directories)."""
    files = []
    for directory in UNIT_DIRS:
        path = os.path.join(directory, name + '.service')
        if os.path.isfile(path):
            files.append(path)
            break
    if not files:
        return []
    dropins = {}
    for directory in reversed(UNIT_DIRS):
        folder = os.path.join(directory, name + '.service.d')
        if os.path.isdir(folder):
            for entry in os.listdir(folder):
                if entry.endswith('.conf'):
                    dropins[entry] = os.path.join(folder, entry)
    return files + [dropins[entry] for entry in sorted(dropins)]


def exec_start(name):
    """The program of the unit's ExecStart (the last one set: an empty
    ``ExecStart=`` in a drop-in resets it), without its arguments, which
    name environment variables of the unit's EnvironmentFiles; None when
    no package installed the unit."""
    argv = unit_command(name)[0]
    return argv[:1] if argv else None


def unit_command(name):
    """(argv, user) of the unit's last ExecStart, whole, and its User=
    (None: root); (None, None) when no package installed the unit."""
    argv, user = None, None
    for path in unit_files(name):
        with open(path) as handle:
            for line in handle:
                key, _, value = line.strip().partition('=')
                if key.strip() == 'ExecStart':
                    words = value.split()
                    argv = ([words[0].lstrip('-@+!:')] + words[1:]
                            if words else None)
                elif key.strip() == 'User':
                    user = value.strip() or None
    return argv, user


def _log_path(name):
    return os.path.join(LOG_DIR, name + '.log')


def _pid_file(name):
    return os.path.join(PID_DIR, name + '.pid')


def running_pid(name):
    try:
        with open(_pid_file(name)) as f:
            pid = int(f.read().strip())
        with open('/proc/%d/stat' % pid) as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    return None if state in ('Z', 'X') else pid


def _spawn(name, argv, extra_env=None, user=None):
    os.makedirs(LOG_DIR, exist_ok=True)
    env = {'PATH': os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin'),
           'LANG': 'C.UTF-8', 'HOME': '/root',
           'PYTHONPATH': kube.python_path()}
    env.update(extra_env or {})
    account = pwd.getpwnam(user) if user else None
    if account is not None:
        env['HOME'] = account.pw_dir
    log = os.open(_log_path(name),
                  os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.dup2(os.open('/dev/null', os.O_RDONLY), 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            # An inherited SSH channel fd would keep the session open.
            os.closerange(3, 65536)
            if account is not None:
                os.initgroups(user, account.pw_gid)
                os.setgid(account.pw_gid)
                os.setuid(account.pw_uid)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    os.close(log)
    return pid


def start(name):
    if name == NFS_SERVER:
        return start_nfs_server()[0]
    return _start(name)


def _start(name):
    if running_pid(name):
        return 0
    argv = service_argv(name)
    if argv is None:
        return _fail('Job for %s.service failed: no configuration (the '
                     'stand-in was not set up for it)' % name)
    os.makedirs(PID_DIR, exist_ok=True)
    user = unit_command(name)[1] if name in WHOLE_COMMAND else None
    try:
        if user:
            pwd.getpwnam(user)
    except KeyError:
        return _fail('Job for %s.service failed: its User=%s does not exist'
                     % (name, user))
    with Readiness(name) as ready:
        pid = _spawn(name, argv, ready.env, user)
        kube.write_file(_pid_file(name), '%d\n' % pid, 0o644)
        # A process that dies before it is ready (bad config) fails the
        # start, as systemd would report.
        for _ in Poll(ready.timeout, first=0.005, maximum=0.1):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return _fail('Job for %s.service failed (exit status %d); '
                             'see %s/%s.log' % (
                                 name, os.waitstatus_to_exitcode(status),
                                 LOG_DIR, name))
            if ready.done():
                return 0
    if ready.needed:
        stop(name)
        return _fail('Job for %s.service failed: not ready within %.0f s '
                     '(timeout); see %s/%s.log'
                     % (name, ready.timeout, LOG_DIR, name))
    return 0  # alive after the window: up


class Readiness(object):
    """How one start learns its service is ready (READINESS)."""

    def __init__(self, name):
        self.how = READINESS.get(name)
        self.needed = self.how is not None
        self.timeout = START_TIMEOUT if self.needed else START_WINDOW
        self.env = {}
        self._socket = None

    def __enter__(self):
        if self.how == NOTIFY:
            # An abstract socket: the VM's network namespace is its own.
            address = '\0k8s-mgmt-standin-notify-%d' % os.getpid()
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._socket.bind(address)
            self._socket.setblocking(False)
            self.env = {'NOTIFY_SOCKET': '@' + address[1:]}
        elif self.how is not None and os.path.exists(self.how):
            os.unlink(self.how)  # a killed service's stale file
        return self

    def done(self):
        if self.how is None:
            return False  # the window decides
        if self._socket is None:
            return os.path.exists(self.how)
        while True:
            try:
                message = self._socket.recv(4096)
            except BlockingIOError:
                return False
            if b'READY=1' in message.split(b'\n'):
                return True

    def __exit__(self, *exc):
        if self._socket is not None:
            self._socket.close()
        return False


def start_nfs_server():
    """rpcbind, then ganesha on /etc/exports, serving when this returns.
    Returns (status, errors): errors are the exports left out, which the
    service log keeps (as ``ExecStartPre=-exportfs -r`` would)."""
    if running_pid(NFS_SERVER):
        return 0, []
    status = _start('rpcbind')
    if status:
        return status, []
    try:
        errors = nfs.prepare()
    except nfs.ExportsError as exc:
        errors = ['%s: %s' % (nfs.PROG, exc)]
    log = _log_path(NFS_SERVER)
    offset = os.path.getsize(log) if os.path.exists(log) else 0
    status = _start(NFS_SERVER)
    if status:
        return status, errors
    serving, failed = nfs.wait_serving(
        lambda: running_pid(NFS_SERVER) is not None, log, offset)
    if not serving:
        stop(NFS_SERVER)
        return _fail('Job for %s.service failed: ganesha.nfsd did not '
                     'start serving; see %s' % (NFS_SERVER, log)), errors
    with open(log, 'a') as f:
        f.writelines('[k8s-mgmt lab] %s\n' % line for line in errors + failed)
    return 0, errors + failed


def restart_nfs_server():
    stop(NFS_SERVER)
    return start_nfs_server()


def stop(name):
    pid = running_pid(name)
    if pid:
        for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            if _wait_gone(name, grace):
                break
    try:
        os.unlink(_pid_file(name))
    except FileNotFoundError:
        pass
    return 0


def stop_no_block(name):
    """``systemctl stop --no-block``: the stop job is queued and the
    service signalled (SIGTERM) at once; the wait for its exit (and the
    SIGKILL after the grace) goes on after systemctl returns, as in
    systemd's job queue. Here a detached process does that part."""
    pid = running_pid(name)
    if not pid:
        return stop(name)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    child = os.fork()
    if child == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                # Off the caller's stdout and stderr (an SSH channel would
                # stay open until this exits).
                null = os.open('/dev/null', os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.closerange(3, 65536)
                stop(name)
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    return 0


def _wait_gone(name, grace):
    for _ in Poll(grace, first=0.01, maximum=0.2):
        if not running_pid(name):
            return True
    return False


def reload(name):
    pid = running_pid(name)
    if not pid:
        return _fail('Job for %s.service failed: the service is not active'
                     % name)
    if name == 'haproxy':
        check = subprocess.run(['/usr/sbin/haproxy', '-c', '-q', '-f',
                                HAPROXY_CFG])
        if check.returncode != 0:
            return _fail('Job for haproxy.service failed: haproxy -c '
                         'rejected %s' % HAPROXY_CFG)
        os.kill(pid, signal.SIGUSR2)  # master-worker reload
    elif name == 'keepalived':
        os.kill(pid, signal.SIGHUP)
    else:
        return restart(name)
    return 0


def restart(name):
    stop(name)
    return start(name)


def _enable(name, on):
    marker = os.path.join(ENABLED_DIR, name)
    if on:
        kube.write_file(marker, '', 0o644)
    elif os.path.exists(marker):
        os.unlink(marker)
    return 0


def _fail(message, status=1):
    sys.stderr.write(message + '\n')
    return status


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    quiet = any(a in ('-q', '--quiet') for a in args)
    now = '--now' in args
    # --no-block: only a stop returns before the job is done (the verbs the
    # scripts send it with); any other verb waits, as without it.
    no_block = '--no-block' in args
    # show: --property=NAME[,NAME] (the form the scripts use) and --value.
    properties = [n for a in args if a.startswith('--property=')
                  for n in a.split('=', 1)[1].split(',') if n]
    value_only = '--value' in args
    words = [a for a in args if not a.startswith('-')]
    if not words:
        return _fail('%s: missing command' % PROG)
    verb, units = words[0], [u[:-len('.service')] if u.endswith('.service')
                             else u for u in words[1:]]
    units = [ALIASES.get(u, u) for u in units]
    if verb == 'daemon-reload':
        return 0
    unknown = [u for u in units if u not in KNOWN or (
        u == NFS_SERVER and verb in NEEDS_UNIT and not nfs.unit_installed())
        or (u in PACKAGED and verb in NEEDS_UNIT and not unit_files(u))]
    if unknown:
        return _fail('Unit %s.service not found.' % unknown[0], 5)
    status = 0
    for unit in units:
        if verb == 'stop' and no_block:
            status = max(status, stop_no_block(unit))
            continue
        status = max(status, _one(verb, unit, quiet, now, properties,
                                  value_only))
    return status


def _show(unit, properties, value_only):
    """``systemctl show --property=P[,Q] [--value] UNIT`` for the
    properties the scripts read: MainPID (0 when not running, as systemd
    says it) and ActiveState."""
    pid = running_pid(unit)
    known = {'MainPID': str(pid or 0),
             'ActiveState': 'active' if pid else 'inactive'}
    for name in properties or sorted(known):
        if name not in known:
            return _fail('%s: the lab stand-in does not know property %s'
                         % (PROG, name))
        print(known[name] if value_only else '%s=%s' % (name, known[name]))
    return 0


def _one(verb, unit, quiet, now, properties=(), value_only=False):
    if verb in ('start', 'stop', 'restart', 'reload'):
        return {'start': start, 'stop': stop, 'restart': restart,
                'reload': reload}[verb](unit)
    if verb == 'reload-or-restart':
        return reload(unit) if running_pid(unit) else start(unit)
    if verb == 'try-restart':
        # systemd: restart a running unit; one that is not running stays so.
        return restart(unit) if running_pid(unit) else 0
    if verb in ('enable', 'disable'):
        _enable(unit, verb == 'enable')
        if now:
            return (start if verb == 'enable' else stop)(unit)
        return 0
    if verb == 'is-active':
        active = bool(running_pid(unit))
        quiet or print('active' if active else 'inactive')
        return 0 if active else 3
    if verb == 'is-enabled':
        enabled = os.path.exists(os.path.join(ENABLED_DIR, unit))
        quiet or print('enabled' if enabled else 'disabled')
        return 0 if enabled else 1
    if verb == 'show':
        return _show(unit, properties, value_only)
    if verb == 'status':
        pid = running_pid(unit)
        print('%s.service - %s (lab stand-in)\n   Active: %s' % (
            unit, unit, 'active (running) pid %d' % pid if pid
            else 'inactive (dead)'))
        return 0 if pid else 3
    return _fail('%s: unknown command %s' % (PROG, verb))


if __name__ == '__main__':
    sys.exit(main())
