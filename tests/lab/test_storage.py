"""The storage flavour end to end on the lab: the real driver, called as
Tacker calls it.

Real parts: namespace VMs with OpenSSH, setup_storage.sh, apt-get and dpkg
installing the real nfs-kernel-server and nfs-common packages (from the
lab's local repository), ext4 on a file-backed loop device seen as
/dev/vdb with its by-id link, the real nfs-ganesha and rpcbind serving
/etc/exports, the user-space NFS client (libnfs-utils) reading and
writing files, the kubernetes Python client. Stand-ins: the OpenStack
APIs, kubeadm/kubelet/API server (which binds claims to PVs as the PV
controller does) and the service manager.

One storage lab is built once; the tests run in order (instantiate, data
through NFS, refused heals, heals that keep and replace the volume,
scale-out), each leaving a lab the next one uses.
"""

import json
import re

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt.params import pv_manifests
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.cli import lab_tools
from k8s_mgmt_lab.conductor import lcm_heal
from k8s_mgmt_lab.conductor import lcm_scale
from k8s_mgmt_lab.conductor import status as lab_status

import claims
from lab_cli import LabCLI

SETTINGS = manager.LabSettings(
    state_dir='/var/lib/k8s-mgmt-lab-test-storage', subnet='10.254.212.0/24',
    bridge='k8slabt12', tag='k8s', compute_hosts=3)
EXPORTS = ('/volume/nfs/pv1', '/volume/nfs/pv2', '/volume/nfs/pv3')
MARKER = 'written through NFS before the heal\n'


k8s_mgmt = LabCLI(SETTINGS.state_dir, bridge=SETTINGS.bridge,
                  tag=SETTINGS.tag, timeout=900)
RUN_LINE = re.compile(r'\] ==> (.*)$')


@pytest.fixture(scope='module')
def storage_lab(assert_lab_clean):
    """The storage lab, up; its first test instantiates it."""
    with k8s_mgmt.fresh(assert_lab_clean):
        k8s_mgmt('up', '--flavour', 'storage', '--workers', '2',
                 '--subnet', SETTINGS.subnet)
        yield


def test_instantiate_runs_the_storage_plan(storage_lab):
    """``lab plan`` shows the storage phases; instantiate runs them, line
    for line, in order."""
    planned = [p['title'] for p in json.loads(
        k8s_mgmt('plan', 'instantiate', '--json').stdout)]
    assert planned[4] == ('Prepare the other nodes, set up the storage '
                          'server and the NFS clients')
    assert planned[-3:] == ['Register the PersistentVolumes',
                            'Wait until the PersistentVolumes are Available',
                            'Register the VIM']
    ran = [m.group(1) for m in map(RUN_LINE.search, k8s_mgmt(
        'instantiate').stderr.splitlines()) if m]
    assert ran == planned


def status():
    return lab_status.lab_status(SETTINGS, check_ssh=False)


def vms(report, role):
    return [v for v in report['vms'] if v['role'] == role]


def run_in(vm, *argv, check=True):
    proc = lab_tools.exec_in_vm(SETTINGS.state_dir, vm['name'], list(argv),
                                capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, (vm['name'], argv, proc.stderr)
    return proc


def nfs_url(server_ip, path):
    return 'nfs://%s%s' % (server_ip, path)


def installed(vm, package):
    proc = run_in(vm, 'dpkg-query', '-W', '-f=${Status}', package,
                  check=False)
    return proc.stdout == 'install ok installed'


def persistent_volumes(report):
    return {pv['name']: pv for pv in
            report['kubernetes']['persistent_volumes']}


def core():
    return claims.core_api(status()['kubernetes']['kubeconfig'])


def assert_pvs_serve(report):
    server, = vms(report, 'storage')
    pvs = persistent_volumes(report)
    assert sorted(pvs) == ['nfs-pv1', 'nfs-pv2', 'nfs-pv3']
    for pv in pvs.values():
        assert pv['server'] == server['ip']
        assert pv['path'] in EXPORTS
        assert pv['phase'] in ('Available', 'Released'), pv
    return server


def test_instantiate_registers_pvs_on_a_serving_nfs_server(storage_lab):
    report = status()
    server = assert_pvs_serve(report)
    for pv in persistent_volumes(report).values():
        assert pv['phase'] == 'Available' and pv['claim'] is None
    # Each PV carries its instance, read through the real client.
    listed = core().list_persistent_volume(
        label_selector=pv_manifests.INSTANCE_LABEL)
    assert len(listed.items) == 3
    # The volume: ext4 mounted nosuid,nodev at /volume, by UUID in fstab
    # with nofail.
    mounts = run_in(server, 'findmnt', '-n', '-o', 'SOURCE,FSTYPE,OPTIONS',
                    '/volume').stdout.split()
    assert mounts[1] == 'ext4'
    assert {'nosuid', 'nodev'} <= set(mounts[2].split(',')), mounts
    fstab = run_in(server, 'cat', '/etc/fstab').stdout
    assert ' /volume ext4 defaults,nofail,nosuid,nodev 0 2' in fstab
    assert 'UUID=' in fstab
    # Every export squashes root; the directories the script made belong
    # to the user root becomes.
    exports = [line for line in run_in(server, 'cat', '/etc/exports')
               .stdout.splitlines() if line.startswith('/volume/')]
    assert len(exports) == 3
    assert all(line.endswith(',root_squash)') for line in exports), exports
    owners = run_in(server, 'stat', '-c', '%u:%g', *EXPORTS).stdout.split()
    assert owners == ['65534:65534'] * 3
    assert installed(server, 'nfs-kernel-server')
    # Every master and worker got the NFS client; the server is the
    # only one with the NFS server.
    for vm in vms(report, 'master') + vms(report, 'worker'):
        assert installed(vm, 'nfs-common'), vm['name']
        assert not installed(vm, 'nfs-kernel-server'), vm['name']


def test_a_file_written_from_one_worker_is_read_from_another(storage_lab):
    report = status()
    server = assert_pvs_serve(report)
    first, second = vms(report, 'worker')[:2]
    run_in(first, 'sh', '-c', 'printf %s "$0" > /tmp/marker', MARKER)
    run_in(first, 'nfs-cp', '/tmp/marker',
           nfs_url(server['ip'], EXPORTS[0] + '/marker.txt'))
    read = run_in(second, 'nfs-cat',
                  nfs_url(server['ip'], EXPORTS[0] + '/marker.txt'))
    assert read.stdout == MARKER
    # And it is on the volume itself, written by root squashed to nobody.
    assert run_in(server, 'cat', EXPORTS[0] + '/marker.txt').stdout == MARKER
    assert run_in(server, 'stat', '-c', '%u', EXPORTS[0] + '/marker.txt'
                  ).stdout.strip() == '65534'


def test_storage_heal_refused_while_a_claim_is_bound(storage_lab):
    report = status()
    server, = vms(report, 'storage')
    api = core()
    claims.create_claim(api, 'data', volume_name='nfs-pv1')
    claims.create_pod_using(api, 'web', 'data')
    claims.wait_claim_phase(api, 'data', 'Bound')
    with pytest.raises(exceptions.MgmtDriverError) as err:
        lcm_heal.heal(SETTINGS, server['vnfc_id'], keep_volumes=True)
    text = str(err.value)
    assert ('PersistentVolume nfs-pv1 (Bound, claim default/data, mounted '
            'by pod(s) default/web)') in text
    # Refused before anything changed: same server, PVs still there.
    after = status()
    assert vms(after, 'storage')[0]['server_id'] == server['server_id']
    assert persistent_volumes(after)['nfs-pv1']['claim'] == 'default/data'
    api.delete_namespaced_pod('web', 'default')
    api.delete_namespaced_persistent_volume_claim('data', 'default')


def test_storage_heal_keeping_the_volume_keeps_the_files(storage_lab):
    before = status()
    old, = vms(before, 'storage')
    lcm_heal.heal(SETTINGS, old['vnfc_id'], keep_volumes=True)
    report = status()
    server = assert_pvs_serve(report)
    assert server['server_id'] != old['server_id']
    for pv in persistent_volumes(report).values():
        assert pv['phase'] == 'Available'
    # The kept ext4 was mounted, not formatted: the file is still there,
    # served by the new server.
    assert run_in(server, 'cat', EXPORTS[0] + '/marker.txt').stdout == MARKER
    worker = vms(report, 'worker')[0]
    assert run_in(worker, 'nfs-cat', nfs_url(
        server['ip'], EXPORTS[0] + '/marker.txt')).stdout == MARKER


def test_storage_heal_that_would_empty_the_volume_is_refused(storage_lab):
    """Without --keep-volumes Tacker's default heal recreates the volume:
    the driver refuses before anything changes, naming both ways on."""
    before = status()
    old, = vms(before, 'storage')
    refused = k8s_mgmt('heal', '--vnfc', old['vnfc_id'], check=False)
    assert refused.returncode != 0
    text = ' '.join((refused.stdout + refused.stderr).split())
    assert 'Heal refused, nothing was changed' in text
    assert '"tacker_extension_heal_include_block_storage": false' in text
    assert '"storage_volume_recreate": true' in text
    assert 'nfs-pv1' in text
    after = status()
    assert vms(after, 'storage')[0]['server_id'] == old['server_id']
    assert persistent_volumes(after) == persistent_volumes(before)
    assert run_in(old, 'cat', EXPORTS[0] + '/marker.txt').stdout == MARKER


def test_storage_heal_with_a_new_volume_formats_it(storage_lab):
    old, = vms(status(), 'storage')
    lcm_heal.heal(SETTINGS, old['vnfc_id'], recreate_volumes=True)
    report = status()
    server = assert_pvs_serve(report)
    assert server['server_id'] != old['server_id']
    # A new, empty volume: formatted, exported again, the old file gone.
    listing = run_in(server, 'ls', '-A', EXPORTS[0]).stdout.split()
    assert listing == []
    worker = vms(report, 'worker')[0]
    run_in(worker, 'nfs-ls', nfs_url(server['ip'], EXPORTS[1]))


def test_scale_out_gives_the_new_worker_the_nfs_client(storage_lab):
    before = {v['name'] for v in vms(status(), 'worker')}
    lcm_scale.scale(SETTINGS, 'SCALE_OUT')
    report = status()
    new = [v for v in vms(report, 'worker') if v['name'] not in before]
    assert len(new) == 1
    assert installed(new[0], 'nfs-common')
    server, = vms(report, 'storage')
    run_in(new[0], 'nfs-ls', nfs_url(server['ip'], EXPORTS[0]))


def test_whole_vnf_heal_sets_up_storage_on_the_new_vms(storage_lab):
    before = {v['server_id'] for v in status()['vms']}
    with pytest.raises(exceptions.MgmtDriverError) as err:
        lcm_heal.heal(SETTINGS)
    assert 'a whole-VNF heal deletes the stack' in str(err.value)
    assert {v['server_id'] for v in status()['vms']} == before
    lcm_heal.heal(SETTINGS, recreate_volumes=True)
    report = status()
    assert not before & {v['server_id'] for v in report['vms']}
    server = assert_pvs_serve(report)
    for pv in persistent_volumes(report).values():
        assert pv['phase'] == 'Available'
    for vm in vms(report, 'master') + vms(report, 'worker'):
        assert installed(vm, 'nfs-common'), vm['name']
        run_in(vm, 'nfs-ls', nfs_url(server['ip'], EXPORTS[2]))
