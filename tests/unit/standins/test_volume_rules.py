"""The PersistentVolume controller's rules as the API server stand-in runs
them (``k8s_mgmt_lab.kube.volumes``), on plain objects: the real code
and the real label-selector matcher, nothing replaced."""

import decimal

import pytest

from k8s_mgmt_lab.kube import objects
from k8s_mgmt_lab.kube import volumes


def pv(name, size='1Gi', modes=('ReadWriteMany',), cls=None, labels=None,
       ref=None, phase='Available', policy=None, source='nfs'):
    spec = {'capacity': {'storage': size}, 'accessModes': list(modes)}
    spec[source] = {'server': '10.0.0.9', 'path': '/srv/' + name}
    if cls is not None:
        spec['storageClassName'] = cls
    if ref:
        spec['claimRef'] = dict(ref)
    if policy:
        spec['persistentVolumeReclaimPolicy'] = policy
    return {'metadata': {'name': name, 'uid': 'uid-' + name,
                         'labels': labels or {},
                         'finalizers': [volumes.PV_PROTECTION]},
            'spec': spec, 'status': {'phase': phase}}


def pvc(name, size='1Gi', modes=('ReadWriteMany',), cls=None, volume=None,
        selector=None, namespace='default'):
    spec = {'accessModes': list(modes),
            'resources': {'requests': {'storage': size}}}
    if cls is not None:
        spec['storageClassName'] = cls
    if volume:
        spec['volumeName'] = volume
    if selector:
        spec['selector'] = selector
    return {'metadata': {'name': name, 'namespace': namespace,
                         'uid': 'uid-%s-%s' % (namespace, name),
                         'finalizers': [volumes.PVC_PROTECTION]},
            'spec': spec, 'status': {'phase': 'Pending'}}


def pod(name, claim, namespace='default', phase='Running'):
    return {'metadata': {'name': name, 'namespace': namespace},
            'spec': {'volumes': [{'name': 'd', 'persistentVolumeClaim': {
                'claimName': claim}}]},
            'status': {'phase': phase}}


class World(object):
    """Volumes, claims and pods, and one controller sync over them."""

    def __init__(self, pvs=(), claims=(), pods=()):
        self.pvs = {('pv', v['metadata']['name']): v for v in pvs}
        self.claims = {('pvc', c['metadata']['namespace'],
                        c['metadata']['name']): c for c in claims}
        self.pods = list(pods)

    def sync(self):
        return volumes.sync(self.pvs, self.claims, self.pods,
                            objects.match_label_selector)

    def pv(self, name):
        return self.pvs.get(('pv', name))

    def claim(self, name, namespace='default'):
        return self.claims.get(('pvc', namespace, name))

    def bound(self, claim_name):
        claim = self.claim(claim_name)
        if claim['status']['phase'] != 'Bound':
            return None
        volume = self.pv(claim['spec']['volumeName'])
        assert volume['status']['phase'] == 'Bound'
        assert volume['spec']['claimRef']['uid'] == claim['metadata']['uid']
        return volume['metadata']['name']

    def delete_claim(self, name, namespace='default'):
        self.claim(name, namespace)['metadata']['deletionTimestamp'] = 'now'
        return self.sync()


@pytest.mark.parametrize('text,value', [
    ('1Gi', 2 ** 30), ('500Mi', 500 * 2 ** 20), ('2G', 2 * 10 ** 9),
    ('1e3', 1000), (1024, 1024), ('1.5Gi', 3 * 2 ** 29), ('100m', '0.1')])
def test_quantities(text, value):
    assert volumes.quantity(text) == decimal.Decimal(value)


def test_claim_binds_the_smallest_volume_that_fits():
    world = World([pv('big', '10Gi'), pv('small', '1Gi'), pv('mid', '2Gi')],
                  [pvc('data', '1500Mi')])
    written, deleted = world.sync()
    assert world.bound('data') == 'mid'
    claim, volume = world.claim('data'), world.pv('mid')
    assert volume['spec']['claimRef'] == {
        'kind': 'PersistentVolumeClaim', 'apiVersion': 'v1',
        'namespace': 'default', 'name': 'data', 'uid': 'uid-default-data'}
    assert claim['status'] == {'phase': 'Bound',
                               'accessModes': ['ReadWriteMany'],
                               'capacity': {'storage': '2Gi'}}
    assert written == {('pv', 'mid'), ('pvc', 'default', 'data')}
    assert not deleted
    assert world.sync() == (set(), set())  # a second sync changes nothing


@pytest.mark.parametrize('volume,claim', [
    (pv('v', cls='fast'), pvc('c')),           # class '' matches only ''
    (pv('v'), pvc('c', cls='fast')),
    (pv('v', modes=['ReadWriteOnce']), pvc('c')),
    (pv('v', '1Gi'), pvc('c', '2Gi')),
    (pv('v', labels={'tier': 'b'}),
     pvc('c', selector={'matchLabels': {'tier': 'a'}})),
    (pv('v', labels={'tier': 'b'}), pvc('c', selector={'matchExpressions': [
        {'key': 'tier', 'operator': 'In', 'values': ['a', 'c']}]})),
    (pv('v', ref={'namespace': 'other', 'name': 'mine'}), pvc('c')),
])
def test_a_claim_that_matches_nothing_stays_pending(volume, claim):
    world = World([volume], [claim])
    assert world.sync() == (set(), set())
    assert world.claim('c')['status']['phase'] == 'Pending'
    assert world.pv('v')['status']['phase'] == 'Available'


def test_matching_class_modes_and_selector_bind():
    world = World([pv('v', cls='fast', labels={'tier': 'a'},
                      modes=['ReadWriteOnce', 'ReadWriteMany'])],
                  [pvc('c', cls='fast', modes=['ReadWriteOnce'],
                       selector={'matchExpressions': [
                           {'key': 'tier', 'operator': 'In',
                            'values': ['a']}]})])
    world.sync()
    assert world.bound('c') == 'v'


def test_volume_name_binds_that_volume_even_when_a_smaller_fits():
    world = World([pv('small'), pv('chosen', '5Gi')],
                  [pvc('c', volume='chosen')])
    world.sync()
    assert world.bound('c') == 'chosen'
    assert world.pv('small')['status']['phase'] == 'Available'
    annotations = world.claim('c')['metadata']['annotations']
    assert volumes.BOUND_BY_CONTROLLER not in annotations


def test_volume_name_of_a_missing_or_unfit_or_taken_volume_stays_pending():
    taken = pv('taken', ref={'namespace': 'default', 'name': 'other',
                             'uid': 'uid-default-other'}, phase='Bound')
    world = World([pv('unfit', '1Gi'), taken, pv('free')],
                  [pvc('c1', '2Gi', volume='unfit'),
                   pvc('c2', volume='taken'), pvc('c3', volume='absent')])
    world.sync()
    for name in ('c1', 'c2', 'c3'):
        assert world.claim(name)['status']['phase'] == 'Pending', name
    assert world.pv('free')['status']['phase'] == 'Available'


def test_a_claim_ref_reserves_a_volume_for_its_claim():
    reserved = pv('reserved', '5Gi',
                  ref={'namespace': 'default', 'name': 'owner'})
    world = World([reserved, pv('other', '1Gi')], [pvc('stranger')])
    world.sync()
    assert world.bound('stranger') == 'other'
    world.claims[('pvc', 'default', 'owner')] = pvc('owner')
    world.sync()
    assert world.bound('owner') == 'reserved'


def test_a_pending_claim_binds_when_a_matching_volume_appears():
    world = World([], [pvc('c', '3Gi')])
    world.sync()
    assert world.claim('c')['status']['phase'] == 'Pending'
    world.pvs[('pv', 'late')] = pv('late', '3Gi')
    world.sync()
    assert world.bound('c') == 'late'


def test_deleted_claim_releases_a_retained_volume_and_keeps_its_ref():
    world = World([pv('v')], [pvc('c')])
    world.sync()
    written, deleted = world.delete_claim('c')
    assert deleted == {('pvc', 'default', 'c')}
    volume = world.pv('v')
    assert volume['status']['phase'] == 'Released'
    assert volume['spec']['claimRef']['name'] == 'c'
    # A new claim does not get a Released volume.
    world.claims[('pvc', 'default', 'again')] = pvc('again')
    world.sync()
    assert world.claim('again')['status']['phase'] == 'Pending'
    # Removing the claimRef (what an operator does) frees it again.
    del volume['spec']['claimRef']
    world.sync()
    assert world.bound('again') == 'v'


def test_delete_policy_deletes_the_volume_but_nfs_cannot_be_deleted():
    world = World([pv('disk', policy='Delete', source='hostPath'),
                   pv('share', policy='Delete')],
                  [pvc('a', volume='disk'), pvc('b', volume='share')])
    world.sync()
    world.delete_claim('a')
    assert world.pv('disk') is None
    world.delete_claim('b')
    share = world.pv('share')
    assert share['status']['phase'] == 'Failed'
    assert 'no deletable volume plugin' in share['status']['message']


def test_a_claim_a_pod_uses_is_kept_until_the_pod_is_gone():
    world = World([pv('v')], [pvc('c')], [pod('app', 'c')])
    world.sync()
    assert world.delete_claim('c') == (set(), set())
    assert world.bound('c') == 'v'
    world.pods = [pod('app', 'c', phase='Succeeded'),
                  pod('elsewhere', 'c', namespace='other')]
    world.sync()
    assert world.claim('c') is None
    assert world.pv('v')['status']['phase'] == 'Released'


def test_a_bound_volume_being_deleted_waits_for_its_claim():
    world = World([pv('v')], [pvc('c')])
    world.sync()
    world.pv('v')['metadata']['deletionTimestamp'] = 'now'
    assert world.sync() == (set(), set())
    assert world.pv('v')['status']['phase'] == 'Bound'
    world.delete_claim('c')
    assert world.pv('v') is None
    # An unbound volume being deleted goes at once.
    world.pvs[('pv', 'free')] = pv('free')
    world.pv('free')['metadata']['deletionTimestamp'] = 'now'
    assert world.sync() == (set(), {('pv', 'free')})


def test_a_volume_being_deleted_is_not_bound_to_a_new_claim():
    world = World([pv('v')], [])
    world.pv('v')['metadata']['deletionTimestamp'] = 'now'
    world.pv('v')['metadata']['finalizers'] = ['someone-else']
    world.claims[('pvc', 'default', 'c')] = pvc('c')
    world.sync()
    assert world.claim('c')['status']['phase'] == 'Pending'


def test_a_bound_claim_whose_volume_is_gone_is_lost():
    world = World([pv('v')], [pvc('c')])
    world.sync()
    del world.pvs[('pv', 'v')]
    world.sync()
    assert world.claim('c')['status']['phase'] == 'Lost'


def test_a_volume_whose_claim_went_to_another_volume_is_freed():
    world = World([pv('first'), pv('second', '2Gi')], [pvc('c')])
    world.sync()
    assert world.bound('c') == 'first'
    # The claim now names another volume (bound elsewhere): the controller
    # drops the claimRef it wrote; one an operator wrote loses its uid.
    world.claim('c')['spec']['volumeName'] = 'second'
    world.pv('second')['spec']['claimRef'] = {
        'namespace': 'default', 'name': 'c', 'uid': 'uid-default-c'}
    world.pv('second')['status'] = {'phase': 'Bound'}
    world.sync()
    first = world.pv('first')
    assert 'claimRef' not in first['spec']
    assert first['status']['phase'] == 'Available'
    assert world.bound('c') == 'second'
    world.claim('c')['spec']['volumeName'] = 'first'
    world.sync()
    second = world.pv('second')
    assert second['spec']['claimRef'] == {'namespace': 'default',
                                          'name': 'c'}
    assert second['status']['phase'] == 'Available'
