"""Real packages and a real NFS server in lab VMs.

apt in a VM installs the real Debian nfs-common / nfs-kernel-server from the
lab's local repository into that VM only; ``systemctl restart
nfs-kernel-server`` runs the real nfs-ganesha on the /etc/exports written in
the VM, and other VMs read and write through it with the user-space NFS
client (libnfs-utils), since nothing can mount NFS here.
"""

import subprocess
import time
import uuid

import pytest

from session_lab import SUBNET  # the shared lab's, this worker's


@pytest.fixture(scope='module')
def standin_vms(vm_manager, lab_network, tmp_path_factory):
    """make(n): VMs with the stand-ins layer (systemctl, exportfs); all
    destroyed after the module."""
    from k8s_mgmt_lab.machines import vm
    from k8s_mgmt_lab.kube import layer
    directory = layer.write_layer(str(tmp_path_factory.mktemp('standins')))
    manager = vm.VMManager(lab_network, vm_manager.state_dir,
                           extra_layers=[directory],
                           bind_paths=layer.host_paths())
    made = []

    def make(count):
        used = [v.ip for v in manager.list()]
        specs = [(str(uuid.uuid4()), 'nfs-%d' % (len(made) + i), ip)
                 for i, ip in enumerate(lab_network.free_ips(used)[:count])]
        infos = manager.create_many(specs)
        made.extend(infos)
        return [VM(manager, info) for info in infos]

    yield make
    for info in made:
        if info.vm_id in manager.registry.read()['vms']:
            manager.destroy(info.vm_id)


class VM(object):
    def __init__(self, manager, info):
        self.manager, self.info, self.ip = manager, info, info.ip

    def root(self, *argv, check=True):
        return self.manager.exec(self.info.vm_id, list(argv), check=check)

    def sudo(self, *argv, check=True):
        """As user ubuntu through sudo, as the driver's scripts run."""
        return self.root('sudo', '-u', 'ubuntu', '--', 'sudo', '-n',
                         'env', 'DEBIAN_FRONTEND=noninteractive', *argv,
                         check=check)

    def host_pids(self):
        return set(subprocess.run(
            ['ip', 'netns', 'pids', self.info.netns], capture_output=True,
            text=True, check=True).stdout.split())


def _status(vm, package):
    return vm.root('dpkg-query', '-W', '-f=${Status}', package,
                   check=False).stdout


def test_fresh_vm_apt_sees_only_the_local_repository(standin_vms):
    [vm] = standin_vms(1)
    assert _status(vm, 'nfs-common') != 'install ok installed'
    assert vm.root('sh', '-c', '/usr/sbin/policy-rc.d; echo $?').stdout \
        == '101\n'
    update = vm.sudo('apt-get', 'update').stdout
    assert 'file:/var/cache/k8s-mgmt-lab/debs' in update
    assert 'http' not in update, update
    # The lab's "apt" fault still makes apt-get fail as a dead mirror.
    vm.root('sh', '-c', 'mkdir -p /etc/k8s-mgmt-lab/faults && '
            'touch /etc/k8s-mgmt-lab/faults/apt')
    failed = vm.sudo('apt-get', 'update', check=False)
    assert failed.returncode == 100 and 'fault "apt"' in failed.stderr
    vm.root('rm', '/etc/k8s-mgmt-lab/faults/apt')
    started = time.monotonic()
    vm.sudo('apt-get', 'install', '-y', 'nfs-common')
    assert time.monotonic() - started < 30
    assert _status(vm, 'nfs-common') == 'install ok installed'
    assert vm.root('test', '-x', '/sbin/mount.nfs', check=False) \
        .returncode == 0
    # Nothing on the host: the install went to the VM's own upper dir.
    host = subprocess.run(['dpkg-query', '-W', '-f=${Status}',
                           'nfs-common'], capture_output=True, text=True)
    assert host.stdout != 'install ok installed'


def _exports(writer_ip):
    rw = 'rw,sync,no_subtree_check'
    return ('# written by the NFS test\n'
            '/srv/nfs/data %s(%s,no_root_squash)\n'
            '/srv/nfs/logs %s(%s,root_squash)\n'
            '/srv/nfs/private %s/32(%s)\n' % (SUBNET, rw, SUBNET, rw,
                                              writer_ip, rw))


def _nfs(vm, tool, *args, check=True):
    return vm.root(tool, *args, check=check)


def test_nfs_server_serves_etc_exports(standin_vms):
    server, writer, reader = standin_vms(3)
    refused = server.sudo('systemctl', 'start', 'nfs-kernel-server',
                          check=False)
    assert refused.returncode == 5 and 'not found' in refused.stderr
    server.sudo('apt-get', 'update')
    server.sudo('apt-get', 'install', '-y', 'nfs-kernel-server')
    assert server.sudo('sh', '-c', 'command -v exportfs').stdout == \
        '/usr/local/sbin/exportfs\n'
    # ganesha's VFS FSAL needs file handles, which the VM's overlay root
    # cannot give; the storage VM exports from its volume's ext4.
    server.root('sh', '-c', 'mkdir -p /srv/nfs && mount -t tmpfs nfs '
                '/srv/nfs && mkdir /srv/nfs/data /srv/nfs/logs '
                '/srv/nfs/private && chmod 777 /srv/nfs/logs')
    server.manager.exec(server.info.vm_id, ['sh', '-c', 'cat > /etc/exports'],
                        input=_exports(writer.ip))
    server.sudo('systemctl', 'restart', 'nfs-kernel-server')
    assert server.sudo('systemctl', 'is-active', 'nfs-kernel-server') \
        .stdout == 'active\n'
    url = 'nfs://%s/srv/nfs' % server.ip
    for vm in (writer, reader):
        vm.sudo('apt-get', 'update')
        vm.sudo('apt-get', 'install', '-y', 'nfs-common')
    writer.root('sh', '-c', 'echo kept > /tmp/note')
    _nfs(writer, 'nfs-cp', '/tmp/note', url + '/data/note.txt')
    _nfs(writer, 'nfs-cp', '/tmp/note', url + '/logs/note.txt')
    assert _nfs(reader, 'nfs-cat', url + '/data/note.txt').stdout == 'kept\n'
    assert _nfs(reader, 'nfs-cat', url + '/data/note.txt?version=4') \
        .stdout == 'kept\n'
    owners = server.root('stat', '-c', '%u', '/srv/nfs/data/note.txt',
                         '/srv/nfs/logs/note.txt').stdout.split()
    assert owners == ['0', '65534']   # no_root_squash, root_squash
    # /srv/nfs/private is the writer's only.
    _nfs(writer, 'nfs-ls', url + '/private')
    outside = _nfs(reader, 'nfs-ls', url + '/private', check=False)
    assert outside.returncode != 0 and 'denied' in outside.stderr.lower()

    # exportfs -ra serves a directory added to /etc/exports.
    server.root('sh', '-c', 'mkdir /srv/nfs/more && echo '
                '"/srv/nfs/more %s(ro,sync,no_subtree_check)" >> /etc/exports'
                % SUBNET)
    assert _nfs(reader, 'nfs-ls', url + '/more', check=False).returncode
    server.sudo('exportfs', '-ra')
    _nfs(reader, 'nfs-ls', url + '/more')
    read_only = _nfs(writer, 'nfs-cp', '/tmp/note', url + '/more/x',
                     check=False)
    assert read_only.returncode != 0
    listed = server.sudo('exportfs', '-v').stdout
    assert '/srv/nfs/more\t%s(sync,wdelay,hide,no_subtree_check,sec=sys,' \
        'ro,secure,root_squash,no_all_squash)' % SUBNET in listed
    assert listed.count('(sync,') == 4
    # Mistakes fail loudly.
    server.root('sh', '-c', 'echo "/srv/nfs/gone %s(rw)" >> /etc/exports'
                % SUBNET)
    missing = server.sudo('exportfs', '-ra', check=False)
    assert missing.returncode == 1 and 'Failed to stat /srv/nfs/gone' in \
        missing.stderr
    assert server.sudo('exportfs', '-u', '/srv/nfs/data', check=False) \
        .returncode == 2

    # Everything is a process of the VM: stop ends ganesha, the VM's end
    # ends rpcbind.
    before = server.host_pids()
    server.sudo('systemctl', 'stop', 'nfs-kernel-server')
    assert server.sudo('systemctl', 'is-active', 'nfs-kernel-server',
                       check=False).stdout == 'inactive\n'
    assert _nfs(reader, 'nfs-ls', url + '/data', check=False).returncode
    server.manager.destroy(server.info.vm_id)
    alive = [pid for pid in before
             if subprocess.run(['kill', '-0', pid]).returncode == 0]
    assert not alive
