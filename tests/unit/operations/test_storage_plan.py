"""The storage server's phases, walked without connecting: where each
storage script runs, with which arguments, and what heal and scale do."""

import dataclasses

import pytest
import yaml

from k8s_mgmt import exceptions
from k8s_mgmt import secrets
from k8s_mgmt.shared_phases import heal_plan
from k8s_mgmt.params import pv_manifests
from k8s_mgmt.topology import model

import op_helpers

INIT = 'Initialise the first master (master-1)'
# The joins start on the init's join data line (early_join): what ran
# alongside the init is a background phase of its own.
OTHERS = ('Prepare the other nodes, set up the storage server and the NFS '
          'clients')
VOLUME_ID = '6f1b6c1e-2a7b-4c1d-9a55-0f3e0d1c2b3a'
PROXY = 'http://user:S3cret@proxy.example:3128'


def _manifest(name, path):
    return yaml.safe_dump({
        'apiVersion': 'v1', 'kind': 'PersistentVolume',
        'metadata': {'name': name},
        'spec': {'capacity': {'storage': '1Gi'},
                 'accessModes': ['ReadWriteMany'],
                 'nfs': {'server': '0.0.0.0', 'path': path}}})


@pytest.fixture
def package(tmp_path):
    return write_package(tmp_path)


def write_package(tmp_path):
    """A package directory with the two PV manifests the params name."""
    folder = tmp_path / 'Files' / 'kubernetes'
    folder.mkdir(parents=True)
    for index in (1, 2):
        (folder / ('nfs-pv%d.yaml' % index)).write_text(
            _manifest('nfs-pv%d' % index, '/volume/nfs/pv%d' % index))
    return str(tmp_path)


def storage_params(**extra):
    return op_helpers.sample_params(
        'simple',
        storage_server={
            'ssh_cp_name': 'storage_server_CP', 'username': 'ubuntu',
            'password': 'St0rage-pw',
            'cinder_volume_setup_params': [
                {'volume_resource_id': 'storage_server_volume',
                 'mount_to': '/volume'}],
            'nfs_server_setup_params': [
                {'export_dir': '/volume/nfs/pv%d' % i,
                 'export_to': '10.254.0.0/24'} for i in (1, 2)]},
        pv_registration_params=[
            {'pv_manifest_file_path': 'Files/kubernetes/nfs-pv%d.yaml' % i,
             'nfs_server_cp': 'storage_server_CP'} for i in (1, 2)],
        **extra)


def storage_topology(masters=1, workers=2, attached=True, device='/dev/vdb'):
    topo = op_helpers.topology(masters, workers)
    server = dataclasses.replace(
        op_helpers.node('storage', 1), resource_name='storage_server',
        ssh_ip='10.254.0.40', nic_ip='10.254.0.40')
    volume = model.Volume('storage_server_volume', VOLUME_ID,
                          device if attached else None,
                          server.server_id if attached else None)
    return dataclasses.replace(topo, storage=(server,), volumes=(volume,))


def plan(package, topo=None, params=None, **kwargs):
    topo = topo or storage_topology()
    params = params or storage_params()
    return op_helpers.plan(params, topo, package_dir=package, **kwargs)


def _by_node(phase):
    found = {}
    for call in op_helpers.calls(phase):
        found.setdefault(call.node, []).append(call)
    return found


def test_instantiate_sets_up_storage_and_clients_during_the_init(package):
    walked = plan(package)
    titles = op_helpers.titles(walked)
    assert titles == [
        'Read the topology from Heat', 'Connect to every node',
        'Upload the scripts', INIT, OTHERS,
        'Wait for the join data from master-1',
        'Wait until the other nodes are ready to join',
        'Read the cluster\'s nodes with the registered VIM', 'Join workers',
        'Wait for the end of the init on master-1',
        'Wait until every node is Ready', 'Label workers',
        'Register the PersistentVolumes',
        'Wait until the PersistentVolumes are Available', 'Register the VIM']
    connect = op_helpers.phase(walked, 'Connect to every node')
    assert connect.nodes == ('master-1', 'worker-1', 'worker-2', 'storage-1')
    init = op_helpers.phase(walked, INIT)
    others = op_helpers.phase(walked, OTHERS)
    assert init.background and others.background and others.parallel
    assert init.nodes == ('master-1',)
    assert others.nodes == ('worker-1', 'worker-2', 'storage-1')
    calls = _by_node(init)
    calls.update(_by_node(others))
    # The first master installs its NFS client after its init.
    assert [c.mode for c in calls['master-1']] == ['init', 'storage-client']
    assert '-R' in calls['master-1'][0].argv  # join data and VIM token
    # The other nodes get ready to join first.
    assert [c.mode for c in calls['worker-1']] == ['prepare',
                                                   'storage-client']
    server, = calls['storage-1']
    assert server.script == 'setup_storage.sh'
    assert server.argv == (
        'server', '--volume', '%s,/dev/vdb,/volume' % VOLUME_ID,
        '--export', '/volume/nfs/pv1,10.254.0.0/24,root_squash',
        '--export', '/volume/nfs/pv2,10.254.0.0/24,root_squash')
    # The workers join; their NFS client is already there.
    assert {c.mode for c in op_helpers.calls(
        op_helpers.phase(walked, 'Join workers'))} == {'join-worker'}


def test_the_storage_server_gets_only_its_script(package):
    upload = op_helpers.phase(plan(package), 'Upload the scripts')
    puts = {}
    for work in upload.work:
        if work.kind == 'sftp':
            puts.setdefault(work.node, []).append(work.text.split()[1])
    assert puts['storage-1'] == ['.k8s-mgmt/k8s_mgmt_lib.sh',
                                 '.k8s-mgmt/setup_storage.sh']
    assert puts['worker-1'] == ['.k8s-mgmt/k8s_mgmt_lib.sh',
                                '.k8s-mgmt/install_k8s_cluster.sh',
                                '.k8s-mgmt/k8s_mgmt_upgrade.sh',
                                '.k8s-mgmt/setup_storage.sh']


def test_pvs_point_at_the_nfs_cp_and_carry_the_instance(package):
    register = op_helpers.phase(plan(package),
                                'Register the PersistentVolumes')
    texts = [w.text for w in register.work]
    assert texts == [
        'create PersistentVolume nfs-pv%d (nfs 10.254.0.40:/volume/nfs/pv%d, '
        'label %s=inst-1) unless it exists with that source'
        % (i, i, pv_manifests.INSTANCE_LABEL) for i in (1, 2)]


def test_without_the_by_id_link_the_reported_device_is_the_fallback(
        package):
    walked = plan(package, storage_topology(device=None))
    server, = _by_node(op_helpers.phase(walked, OTHERS))['storage-1']
    assert server.argv[2] == '%s,,/volume' % VOLUME_ID


def test_a_volume_not_on_the_storage_server_stops_before_any_vm(package):
    with pytest.raises(exceptions.TopologyError) as err:
        plan(package, storage_topology(attached=False))
    assert ('volume storage_server_volume (%s) is attached to no server, '
            'not to the storage server storage-1'
            % VOLUME_ID) in str(err.value)


def test_proxy_urls_go_on_stdin_of_every_storage_call(package):
    params = storage_params(proxy={'http_proxy': PROXY,
                                   'https_proxy': PROXY,
                                   'k8s_node_cidr': '10.254.0.0/24'})
    walked = plan(package, params=params)
    init = op_helpers.phase(walked, INIT)
    others = op_helpers.phase(walked, OTHERS)
    storage_calls = [c for c in op_helpers.calls(init) +
                     op_helpers.calls(others)
                     if c.script == 'setup_storage.sh']
    assert len(storage_calls) == 4
    for call in storage_calls:
        assert [k for k, _ in call.stdin_secrets] == ['http_proxy',
                                                      'https_proxy']
        assert PROXY not in ' '.join(call.argv)
        assert call.command().argv[-2:] == ('-s', '-')
    assert PROXY not in ''.join(w.text for w in init.work + others.work)
    assert secrets.Secret(PROXY).reveal() == PROXY


KEEP = {'tacker_extension_heal_include_block_storage': False}


def _heal(package, topo, hook, targets, additional=KEEP, params=None,
          api='v1'):
    names = {n.name for n in topo.all_nodes()}
    ready = names if hook == 'heal_start' else names - {
        t.name for t in targets}
    return plan(package, topo, params=params, operation='heal_vnfc',
                hook=hook, ready=ready, api=api, request={
                    'vnfc_instance_id': [t.vnfc_id for t in targets],
                    'additional_params': additional})


def test_heal_of_the_storage_server(package):
    topo = storage_topology()
    start = _heal(package, topo, 'heal_start', topo.storage)
    assert op_helpers.titles(start) == [
        'Read the topology from Heat',
        'Check that the heal keeps the storage server\'s volume',
        'Probe the other masters',
        'Read the API credentials through master-1',
        'Check that no PersistentVolume is in use',
        'Delete the PersistentVolumes',
        'Probe the storage server to heal',
        'Stop the NFS server and unmount the volume on storage-1',
        'Detach the volume from storage-1 and wait until it is available',
        'Forget the healed VMs\' host keys',
        'Keep the sessions to master-1 for heal_end']
    delete = op_helpers.phase(start, 'Delete the PersistentVolumes')
    assert [w.text.split()[2] for w in delete.work] == ['nfs-pv1', 'nfs-pv2']
    end = _heal(package, topo, 'heal_end', topo.storage)
    assert op_helpers.titles(end) == [
        'Read the topology from Heat', 'Reuse the sessions heal_start kept',
        'Connect to the new storage server',
        'Upload the scripts', 'Set up the storage server (storage-1)',
        'Probe the other masters',
        'Read the API credentials through master-1',
        'Find worker VMs that are no node',
        'Register the PersistentVolumes',
        'Wait until the PersistentVolumes are Available']
    server, = op_helpers.calls(op_helpers.phase(
        end, 'Set up the storage server (storage-1)'))
    assert server.argv[0] == 'server'


@pytest.mark.parametrize('additional', [
    {}, {'tacker_extension_heal_include_block_storage': True}])
def test_a_heal_that_would_empty_the_volume_is_refused(
        package, additional, monkeypatch):
    """Tacker recreates the volume when the key is true or absent (its
    default): refused, naming the server, the PVs and both ways on."""
    from k8s_mgmt import tacker_settings
    # Outside tacker-conductor (a test that imported Tacker's options
    # into this process would otherwise make them count).
    monkeypatch.setattr(tacker_settings, 'heal_block_storage',
                        lambda conf=None: tacker_settings.HealBlockStorage())
    topo = storage_topology()
    with pytest.raises(heal_plan.HealRefused) as err:
        _heal(package, topo, 'heal_start', topo.storage, additional)
    text = str(err.value)
    assert text.startswith('Heal refused, nothing was changed: healing the '
                           'storage server storage-1 (server srv-storage-1)')
    assert '(nfs-pv1, nfs-pv2)' in text
    assert ('additionalParams {"tacker_extension_heal_include_block_'
            'storage": false}') in text
    assert 'additionalParams {"storage_volume_recreate": true}' in text
    assert '\n' not in text
    if not additional:
        assert ("the request does not set tacker_extension_heal_include_"
                "block_storage, and Tacker's default [vnf_lcm] "
                "heal_vnfc_block_storage = true") in text


def test_a_heal_that_empties_the_volume_needs_the_request_to_accept_it(
        package):
    topo = storage_topology()
    params = dataclasses.replace(storage_params(),
                                 storage_volume_recreate=True)
    start = _heal(package, topo, 'heal_start', topo.storage, {},
                  params=params)
    check = op_helpers.phase(
        start, 'Check that the heal keeps the storage server\'s volume')
    assert check.assume == ('recreated empty (storage_volume_recreate: '
                            'true)')
    assert 'Delete the PersistentVolumes' in op_helpers.titles(start)


def test_the_conductors_tacker_settings_decide(package, monkeypatch):
    """Inside tacker-conductor its [vnf_lcm] options count: another key
    name, and heal_vnfc_block_storage = false keeping volumes."""
    from k8s_mgmt import tacker_settings
    topo = storage_topology()
    setting = tacker_settings.HealBlockStorage(
        key='keep_my_disks', default=False, from_tacker=True)
    monkeypatch.setattr(tacker_settings, 'heal_block_storage',
                        lambda conf=None: setting)
    start = _heal(package, topo, 'heal_start', topo.storage, {})
    assert 'Delete the PersistentVolumes' in op_helpers.titles(start)
    with pytest.raises(heal_plan.HealRefused) as err:
        _heal(package, topo, 'heal_start', topo.storage,
              {'keep_my_disks': True})
    assert 'the request sets keep_my_disks: true' in str(err.value)
    # The default key means nothing to this conductor.
    with pytest.raises(heal_plan.HealRefused):
        _heal(package, topo, 'heal_start', topo.storage,
              {'keep_my_disks': 1, **KEEP})


def test_a_whole_vnf_heal_with_storage_is_refused_unless_accepted(package):
    topo = storage_topology()
    with pytest.raises(heal_plan.HealRefused) as err:
        plan(package, topo, operation='heal_vnf', hook='heal_start',
             request={'additional_params': KEEP})
    assert 'a whole-VNF heal deletes the stack' in str(err.value)
    assert '(nfs-pv1, nfs-pv2)' in str(err.value)
    params = dataclasses.replace(storage_params(),
                                 storage_volume_recreate=True)
    start = plan(package, topo, params=params, operation='heal_vnf',
                 hook='heal_start', request={})
    assert op_helpers.titles(start)[:3] == [
        'Read the topology from Heat',
        'Check that the heal keeps the storage server\'s volume',
        'Unregister the VIM']


def test_without_storage_server_its_vnfc_is_not_healed(package):
    topo = storage_topology()
    params = op_helpers.sample_params('simple')
    with pytest.raises(heal_plan.HealRefused) as err:
        op_helpers.plan(params, topo, 'heal_vnfc', 'heal_start',
                        request={'vnfc_instance_id': ['vnfc-storage-1']})
    assert 'only master and worker VNFCs' in str(err.value)


def test_joins_install_the_nfs_client(package):
    topo = storage_topology(workers=2)
    end = _heal(package, topo, 'heal_end', [topo.workers[0]])
    join, = [p for p in end if p.title.startswith('Join')]
    assert [c.mode for c in op_helpers.calls(join)] == [
        'join-worker', 'storage-client']
    scaled = plan(package, topo, operation='scale_out', hook='scale_end',
                  ready={'master-1'}, scale_out_ids=['stack-worker-1',
                                                     'stack-worker-2'],
                  request={'aspect_id': 'worker_instance'})
    join = op_helpers.phase(scaled, 'Join the new workers')
    assert [(c.node, c.mode) for c in op_helpers.calls(join)] == [
        ('worker-1', 'join-worker'), ('worker-1', 'storage-client'),
        ('worker-2', 'join-worker'), ('worker-2', 'storage-client')]


def test_scaling_anything_but_the_workers_is_refused(package):
    with pytest.raises(exceptions.MgmtDriverError) as err:
        plan(package, operation='scale_out', hook='scale_end',
             request={'aspect_id': 'storage_server_instance'})
    assert ('scaling aspect storage_server_instance is not the workers\' '
            'aspect worker_instance; only workers can be scaled. The '
            'storage server cannot be scaled') in str(err.value)


def test_under_v2_a_heal_keeps_the_volume_unless_all_is_true(package):
    """Tacker's v2 API replaces the servers and keeps their volumes, of a
    VNFC heal and of a whole-VNF heal alike, unless the request's
    additionalParams say ``all: true``; v1's key means nothing there."""
    topo = storage_topology()
    start = _heal(package, topo, 'heal_start', topo.storage, {}, api='v2')
    assert 'Detach the volume from storage-1 and wait until it is ' \
        'available' in op_helpers.titles(start)
    with pytest.raises(heal_plan.HealRefused) as err:
        _heal(package, topo, 'heal_start', topo.storage, {'all': True},
              api='v2')
    assert 'with additionalParams {"all": true}' in str(err.value)
    assert 'send the heal without "all"' in str(err.value)
    # The whole VNF: the same stack, the storage server replaced with its
    # volume freed first, the old cluster then forgotten.
    whole = plan(package, topo, operation='heal_vnf', hook='heal_start',
                 request={'additional_params': {}}, api='v2')
    titles = op_helpers.titles(whole)
    assert titles[:2] == [
        'Read the topology from Heat',
        'Check that the heal keeps the storage server\'s volume']
    assert op_helpers.phase(whole, titles[1]).assume.startswith('kept')
    assert titles.index('Detach the volume from storage-1 and wait until '
                        'it is available') < titles.index('Unregister the VIM')
    with pytest.raises(heal_plan.HealRefused):
        plan(package, topo, operation='heal_vnf', hook='heal_start',
             request={'additional_params': {'all': True}}, api='v2')
