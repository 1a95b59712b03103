"""PersistentVolumes, claims and pods on the API server stand-in of a lab
master, through the official ``kubernetes`` client, and as ``lab status
--json`` reports them.

Real parts: a namespace VM with OpenSSH, the REAL install script's ``init``
over the driver's SSH layer, a REAL etcd holding the objects, the
``k8s-mgmt lab status`` command, the official client. Stand-ins: kubeadm,
kubelet, containerd, systemctl and the kube-apiserver (which binds claims
as the PersistentVolume controller does).
"""

import json
import os
import pathlib
import tempfile

import pytest
from kubernetes.client.exceptions import ApiException

import claims
from k8s_mgmt import ssh
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import status as lab_status
from lab_cli import LabCLI

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / 'k8s_mgmt' / 'scripts'
CNI = '/etc/k8s-mgmt-lab/cni.yaml'
STATE_DIR = '/var/lib/k8s-mgmt-lab-test-pv'
SETTINGS = manager.LabSettings(state_dir=STATE_DIR, subnet='10.254.238.0/24',
                               bridge='k8slabpv', tag='lpv')
INSTANCE_LABEL = 'k8s-mgmt.openstack.org/vnf-instance'


@pytest.fixture
def lab(make_lab):
    return make_lab(SETTINGS)


def _init_master(record):
    """The install script's init on the lab's one master (no workers are
    needed: pods here are never run, only looked at)."""
    [master] = lab_status.read_topology(record).masters
    store = ssh.HostKeyStore(os.path.join(tempfile.mkdtemp(), 'pins.json'))
    target = ssh.SSHTarget(name=master.name, host=master.ssh_ip,
                           username='ubuntu', password='ubuntu',
                           server_id=master.server_id)
    with ssh.SSHSession(target, store=store, connect_deadline=10) as session:
        for name in ('k8s_mgmt_lib.sh', 'install_k8s_cluster.sh'):
            session.put(str(SCRIPTS / name), '/tmp/' + name, mode=0o755)
        session.run(ssh.Command(
            'bash', '/tmp/install_k8s_cluster.sh', 'init', '-H', master.name,
            '-w', '60', '-a', master.ssh_ip, '-c', CNI,
            '-r', manager.repository_url(SETTINGS.subnet)),
            step='init', timeout=180)
    return master


def _pv(name, server, size, instance='inst-pv'):
    return {'apiVersion': 'v1', 'kind': 'PersistentVolume',
            'metadata': {'name': name, 'labels': {INSTANCE_LABEL: instance}},
            'spec': {'capacity': {'storage': size},
                     'accessModes': ['ReadWriteMany'],
                     'persistentVolumeReclaimPolicy': 'Retain',
                     'nfs': {'server': server, 'path': '/export/' + name}}}


def _status_volumes():
    cli = LabCLI(SETTINGS.state_dir, SETTINGS.bridge, SETTINGS.tag)
    report = json.loads(cli('status', '--json').stdout)
    return report['kubernetes']['persistent_volumes']


def test_claims_bind_release_and_protect_volumes_on_the_lab_api(lab):
    record = lab.up('simple', workers=1)
    master = _init_master(record)
    report = lab_status.lab_status(SETTINGS, check_ssh=False)
    assert report['kubernetes']['persistent_volumes'] == []
    core = claims.core_api(report['kubernetes']['kubeconfig'])
    server = master.ssh_ip
    # Names and sizes such that neither the first nor the last candidate
    # by name is the smallest, and volumeName is not the smallest either.
    for name, size in (('pv-big', '8Gi'), ('pv-data', '1Gi'),
                       ('pv-named', '4Gi')):
        made = core.create_persistent_volume(_pv(name, server, size))
        assert made.status.phase == 'Available'
    core.create_persistent_volume(_pv('pv-other', server, '3Gi', 'inst-x'))
    mine = core.list_persistent_volume(
        label_selector='%s in (inst-pv)' % INSTANCE_LABEL).items
    assert sorted(v.metadata.name for v in mine) == [
        'pv-big', 'pv-data', 'pv-named']

    # The smallest fitting volume; the one volumeName names; none at all.
    claims.claim_and_pod(core, 'data', 'app', storage='1Gi')
    claim = claims.wait_claim_phase(core, 'data', 'Bound')
    assert claim.spec.volume_name == 'pv-data'
    data_volume = 'pv-data'
    claims.create_claim(core, 'named', storage='1Gi', volume_name='pv-named')
    assert claims.wait_claim_phase(core, 'named', 'Bound').spec.volume_name \
        == 'pv-named'
    named = core.read_persistent_volume('pv-named')
    assert (named.status.phase, named.spec.claim_ref.name) == \
        ('Bound', 'named')
    claims.create_claim(core, 'gold', storage='1Gi', storage_class='gold')
    claims.create_claim(core, 'huge', storage='100Gi')
    for name in ('gold', 'huge'):
        pending = core.read_namespaced_persistent_volume_claim(
            name, 'default')
        assert pending.status.phase == 'Pending', name
    assert core.read_persistent_volume('pv-big').status.phase == 'Available'

    assert {v['name']: (v['phase'], v['claim']) for v in _status_volumes()
            } == {'pv-big': ('Available', None),
                  'pv-named': ('Bound', 'default/named'),
                  'pv-data': ('Bound', 'default/data'),
                  'pv-other': ('Available', None)}

    # A Bound volume being deleted stays (Terminating) while its claim
    # lives, and the claim while a pod mounts it.
    core.delete_persistent_volume(data_volume)
    volume = core.read_persistent_volume(data_volume)
    assert volume.metadata.deletion_timestamp is not None
    assert volume.status.phase == 'Bound'
    core.delete_namespaced_persistent_volume_claim('data', 'default')
    held = core.read_namespaced_persistent_volume_claim('data', 'default')
    assert held.metadata.deletion_timestamp and held.status.phase == 'Bound'
    core.delete_namespaced_pod('app', 'default')
    for read in (lambda: core.read_namespaced_persistent_volume_claim(
            'data', 'default'), lambda: core.read_persistent_volume(
            data_volume)):
        with pytest.raises(ApiException) as err:
            read()
        assert err.value.status == 404

    # A deleted claim leaves its Retain volume Released, claim kept.
    core.delete_namespaced_persistent_volume_claim('named', 'default')
    volumes = {v['name']: v for v in _status_volumes()}
    assert volumes['pv-named'] == {
        'name': 'pv-named', 'phase': 'Released', 'server': server,
        'path': '/export/pv-named', 'claim': 'default/named'}
    assert data_volume not in volumes
    assert list(volumes) == sorted(volumes)
