"""Find and remove everything the lab made, also after its controller crashed.

What the lab creates is recorded in ``<state_dir>/lab-registry.json`` before
it is created. Teardown trusts the registry but does not depend on it: it
also finds processes whose root or network namespace belongs to the lab,
mounts under the state dir, loop devices backed by the lab's volume files
and netns/links carrying the lab tag.
"""

import contextlib
import os
import shutil
import signal

from oslo_log import log as logging

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.machines import net
from k8s_mgmt_lab.machines import volumes
from k8s_mgmt_lab.machines.host import run
from k8s_mgmt_lab.machines.registry import MARKER
from k8s_mgmt_lab.machines.registry import Registry

LOG = logging.getLogger(__name__)


def _netns_inode(name):
    try:
        return os.stat('/run/netns/%s' % name).st_ino
    except OSError:
        return None


def lab_processes(state_dir, netns_names):
    """PIDs whose root is under state_dir or whose netns is a lab netns."""
    state_dir = os.path.abspath(state_dir)
    inodes = {'net:[%d]' % i for i in map(_netns_inode, netns_names) if i}
    found = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            root = os.readlink('/proc/%s/root' % entry)
            net = os.readlink('/proc/%s/ns/net' % entry)
        except OSError:
            continue  # gone, or a kernel thread
        if root == state_dir or root.startswith(state_dir + '/') or \
                net in inodes:
            found.append(int(entry))
    return found


def lab_mounts(state_dir):
    """Mount points under state_dir in our mount namespace, deepest first."""
    state_dir = os.path.abspath(state_dir)
    points = []
    with open('/proc/self/mounts') as f:
        for line in f:
            target = line.split()[1].replace('\\040', ' ')
            if target == state_dir or target.startswith(state_dir + '/'):
                points.append(target)
    return sorted(points, key=len, reverse=True)


def lab_netns(tag):
    names = []
    out = run(['ip', 'netns', 'list'], check=False).stdout
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ''
        if name.startswith(tag + '-'):
            names.append(name)
    return names


def lab_links(tag, bridge=None):
    names = []
    for name in os.listdir('/sys/class/net'):
        if name.startswith(tag + 'h') or name == bridge:
            names.append(name)
    return names


def find_leftovers(state_dir, tag, bridge=None):
    """Everything of a lab still present; all lists empty means clean."""
    netns = lab_netns(tag)
    return {'processes': lab_processes(state_dir, netns),
            'mounts': lab_mounts(state_dir),
            'loop_devices': sorted(volumes.loop_devices(state_dir)),
            'netns': netns,
            'links': lab_links(tag, bridge),
            'state_dir': [state_dir] if os.path.exists(state_dir) else []}


def kill_processes(pids, deadline=10.0):
    """SIGKILL pids and wait until none of them runs any more.

    A killed process whose parent is not us may stay a zombie until its
    parent (often the host's PID 1) reaps it; it holds no lab resources.
    """
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_gone(pids, deadline, zombies_ok=True)


def wait_gone(pids, deadline=10.0, zombies_ok=False):
    """Wait until pids no longer exist (our own children are reaped here);
    ``deadline`` is in seconds from now."""
    alive = list(pids)
    for _ in Poll(deadline, first=0.002, maximum=0.1):
        alive = [p for p in pids if _exists(p, zombies_ok)]
        if not alive:
            return
    raise LabError('lab processes did not exit within %.0f s: %s'
                   % (deadline, alive))


def _exists(pid, zombies_ok):
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        with open('/proc/%d/stat' % pid) as f:
            state = f.read().rsplit(') ', 1)[-1][:1]
    except OSError:
        return False
    return not (zombies_ok and state == 'Z')


def namespace_inits(pids):
    """The pids that are PID 1 of their own PID namespace (VM inits)."""
    inits = []
    for pid in pids:
        try:
            with open('/proc/%d/status' % pid) as f:
                nspid = [line for line in f if line.startswith('NSpid:')]
        except OSError:
            continue
        if nspid and nspid[0].split()[-1] == '1' and \
                len(nspid[0].split()) > 2:
            inits.append(pid)
    return inits


def unmount_all(state_dir):
    for point in lab_mounts(state_dir):
        if run(['umount', point], check=False).returncode != 0:
            run(['umount', '-l', point], check=False)


def teardown(state_dir, tag=None, bridge=None):
    """Remove every process, mount, loop device, netns, link and file of
    the lab.

    ``tag`` and ``bridge`` default to what the registry recorded (or the
    lab defaults when the registry is gone). Returns what was found.
    """
    state_dir = os.path.abspath(state_dir)
    data = Registry(state_dir).read() if os.path.isdir(state_dir) else {
        'network': None, 'vms': {}}
    network = data.get('network') or {}
    tag = tag or network.get('tag') or net.DEFAULT_TAG
    bridge = bridge or network.get('bridge') or net.DEFAULT_BRIDGE
    found = find_leftovers(state_dir, tag, bridge)
    netns = set(found['netns']) | {
        net.netns_name(r.get('tag', tag), r['short'])
        for r in data['vms'].values()}
    # VM inits first: their launchers reap them and exit on their own, so no
    # orphaned zombie waits for the host's PID 1. A second pass catches
    # anything forked or left over while the first was dying.
    kill_processes(namespace_inits(lab_processes(state_dir, netns)))
    for _ in range(2):
        kill_processes(lab_processes(state_dir, netns))
    unmount_all(state_dir)
    # The VMs' mount namespaces are gone with their processes: every loop
    # device of a volume is free to go.
    volumes.release(state_dir)
    for link in lab_links(tag, bridge):
        net.remove_link(link)
    for name in netns:
        net.remove_netns(name)
    remove_state_dir(state_dir)
    if any(found.values()):
        LOG.info('lab teardown of %s removed %s', state_dir, found)
    return found


def remove_state_dir(state_dir):
    if not os.path.isdir(state_dir):
        return
    # Refuse to delete a directory the lab did not create.
    if state_dir == '/' or not os.path.exists(os.path.join(state_dir, MARKER)):
        raise LabError('%s is not a lab state dir (no %s); not removing it'
                       % (state_dir, MARKER))
    shutil.rmtree(state_dir)
