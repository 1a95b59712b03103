"""A storage server heal that keeps the volume frees it for Heat's new
server: the phases it plans, and the NFS stop and unmount it runs."""

import dataclasses

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import ssh
from k8s_mgmt.shared_phases import storage_release
from k8s_mgmt.topology import model

import op_helpers
import test_storage_plan as storage_plan

RELEASE = 'Stop the NFS server and unmount the volume on storage-1'
DETACH = 'Detach the volume from storage-1 and wait until it is available'
STOP = storage_release.STOP_NFS.display()
FIND = storage_release.mounted_command('/volume').display()
UMOUNT = storage_release.unmount_command('/volume').display()
OTHER = storage_release.mounted_command('/other').display()
KEEP = storage_plan.KEEP


@pytest.fixture
def package(tmp_path):
    return storage_plan.write_package(tmp_path)


def _start(package, topo, additional=KEEP, params=None, unreachable=()):
    names = {n.name for n in topo.all_nodes()}
    return storage_plan.plan(
        package, topo, params=params, operation='heal_vnfc',
        hook='heal_start', ready=names, unreachable=unreachable, request={
            'vnfc_instance_id': [topo.storage[0].vnfc_id],
            'additional_params': additional})


def test_the_kept_volume_is_unmounted_then_detached_through_nova(package):
    topo = storage_plan.storage_topology()
    start = _start(package, topo)
    titles = op_helpers.titles(start)
    # After the PVs are gone, before the old VM's pin is forgotten.
    assert titles.index('Delete the PersistentVolumes') < titles.index(
        'Probe the storage server to heal') < titles.index(RELEASE) < \
        titles.index(DETACH) < titles.index(
            'Forget the healed VMs\' host keys')
    release = op_helpers.phase(start, RELEASE)
    assert release.nodes == ('storage-1',)
    assert [w.text for w in release.work] == [
        STOP, '%s  (when %s)' % (UMOUNT, FIND)]
    detach = op_helpers.phase(start, DETACH)
    assert [(w.node, w.kind, w.text) for w in detach.work] == [
        (None, 'nova', 'DELETE /servers/srv-storage-1/os-volume_'
                       'attachments/%s (when it is in-use there)'
                       % storage_plan.VOLUME_ID),
        (None, 'cinder', 'GET /volumes/%s until available'
                         % storage_plan.VOLUME_ID)]


def test_a_dead_old_server_is_not_unmounted_but_its_volume_detached(
        package):
    topo = storage_plan.storage_topology()
    start = _start(package, topo, unreachable={'storage-1'})
    release = op_helpers.phase(start, RELEASE)
    assert release.skip == 'storage-1 does not answer SSH'
    assert op_helpers.phase(start, DETACH).skip is None


def test_a_re_run_after_the_detach_plans_the_same_phases(package):
    """Heat shows the volume attached to nothing: still the kept volume."""
    topo = storage_plan.storage_topology(attached=False)
    start = _start(package, topo)
    assert op_helpers.phase(start, DETACH).skip is None


def test_a_recreated_volume_is_neither_unmounted_nor_detached(package):
    topo = storage_plan.storage_topology()
    params = dataclasses.replace(storage_plan.storage_params(),
                                 storage_volume_recreate=True)
    start = _start(package, topo, params=params,
                   additional={'tacker_extension_heal_include_block_'
                               'storage': True})
    assert op_helpers.phase(start, RELEASE).skip == storage_release.RECREATED
    assert op_helpers.phase(start, DETACH).skip == storage_release.RECREATED
    assert 'Probe the storage server to heal' not in op_helpers.titles(start)


def test_a_volume_another_server_holds_stops_before_anything_changes(
        package):
    topo = storage_plan.storage_topology()
    volume = dataclasses.replace(topo.volumes[0], server_id='srv-other')
    topo = dataclasses.replace(topo, volumes=(volume,))
    with pytest.raises(exceptions.TopologyError) as err:
        _start(package, topo)
    assert ('volume storage_server_volume (%s) is attached to server '
            'srv-other, not to the storage server storage-1 (srv-storage-1)'
            % storage_plan.VOLUME_ID) in str(err.value)


# -- what the release phase runs on the old server ----------------------


class FakeSession(object):
    """Answers the release's commands from a table: display -> status."""

    def __init__(self, answers):
        self.answers = answers
        self.ran = []

    def run(self, cmd, step='run', timeout=None, check=True, stdin=None):
        text = cmd.display()
        self.ran.append(text)
        status, stdout = self.answers.get(text, (0, ''))
        if check and status:
            raise exceptions.RemoteCommandError(node='storage-1', step=step,
                                                status=status, stderr='no')
        return ssh.Result(status=status, stdout=stdout,
                          stderr='Failed: boom\n' if status else '',
                          seconds=0.1)


class FakeOp(object):
    def __init__(self, session):
        self._session = session

    def session(self, name):
        assert name == 'storage-1'
        return self._session


NODE = op_helpers.node('storage', 1)


def test_release_stops_nfs_then_unmounts_what_is_mounted():
    session = FakeSession({FIND: (0, '/volume\n'), OTHER: (1, '')})
    said = storage_release.release(FakeOp(session), NODE,
                                   ('/volume', '/other'))
    assert session.ran == [STOP, FIND, UMOUNT, OTHER]
    assert said == 'NFS server stopped; unmounted: /volume'


def test_release_on_a_server_without_nfs_and_mounts_changes_nothing():
    session = FakeSession({STOP: (5, ''), FIND: (1, '')})
    said = storage_release.release(FakeOp(session), NODE, ('/volume',))
    assert session.ran == [STOP, FIND]
    assert said == ('NFS server not installed; unmounted: nothing (none was '
                    'mounted)')


def test_a_failed_nfs_stop_names_the_node_and_the_step():
    session = FakeSession({STOP: (1, '')})
    with pytest.raises(exceptions.RemoteCommandError) as err:
        storage_release.release(FakeOp(session), NODE, ('/volume',))
    assert str(err.value).startswith('storage-1: stop the NFS server: exit '
                                     'status 1')
    assert session.ran == [STOP]


def test_the_volume_id_comes_from_heat_by_the_requests_resource_name():
    params = storage_plan.storage_params()
    topo = storage_plan.storage_topology()
    other = model.Volume('unrelated', 'vol-x', '/dev/vdc', 'srv-else')
    topo = dataclasses.replace(topo, volumes=topo.volumes + (other,))
    kept = storage_release.kept_volumes(params, topo, topo.storage[0])
    assert [(m, v.volume_id) for m, v in kept] == [
        ('/volume', storage_plan.VOLUME_ID)]


# -- the detach phase's action: the VIM's session, then volume_detach -----


class CtxOp(object):
    def __init__(self, vim_info):
        self.ctx = type('Ctx', (), {'vim_info': vim_info,
                                    'tacker_context': None,
                                    'vnf_instance': {'id': 'inst-1'}})()


def test_the_detach_uses_the_vims_session_and_region(monkeypatch):
    from k8s_mgmt import volume_detach
    from k8s_mgmt.topology import heat
    seen = []
    monkeypatch.setattr(heat, 'session_for_vim',
                        lambda info: ('session-of-%s' % info['name'],
                                      'RegionTwo'))
    monkeypatch.setattr(volume_detach, 'detach_and_wait',
                        lambda *args: seen.append(args) or 'done')
    volume = model.Volume('storage_server_volume', 'vol-1', '/dev/vdb',
                          NODE.server_id)
    said = storage_release.detach(CtxOp({'name': 'vim'}), NODE, (volume,))
    assert said == ['done']
    assert seen == [('session-of-vim', 'RegionTwo', 'storage-1',
                     'srv-storage-1', 'vol-1')]


def test_no_vim_to_reach_names_node_step_and_volume(monkeypatch):
    from k8s_mgmt.topology import heat

    def no_tacker(context, instance):
        raise ImportError('No module named tacker')
    monkeypatch.setattr(heat, 'vim_info_for_instance', no_tacker)
    volume = model.Volume('storage_server_volume', 'vol-1', '/dev/vdb',
                          NODE.server_id)
    with pytest.raises(exceptions.MgmtDriverError) as err:
        storage_release.detach(CtxOp(None), NODE, (volume,))
    assert str(err.value) == ('storage-1: reach the VIM: volume vol-1: '
                              'ImportError: No module named tacker')
