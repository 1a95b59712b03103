"""Who uses a PersistentVolume, and the refusal that names them all.

The API calls themselves run against the lab's API server in
tests/lab/test_storage.py; here the decisions on the objects the API
returns."""

import pytest

from k8s_mgmt.kube import volumes


def pod(name, claims, phase='Running'):
    return {'metadata': {'name': name},
            'spec': {'volumes': [{'name': 'v%d' % i,
                                  'persistentVolumeClaim': {'claimName': c}}
                                 for i, c in enumerate(claims)] +
                     [{'name': 'tmp', 'emptyDir': {}}]},
            'status': {'phase': phase}}


def test_pods_that_ended_hold_no_claim():
    found = volumes._claims_in_pods([
        pod('web-1', ['data']), pod('web-2', ['data', 'logs']),
        pod('batch', ['data'], phase='Succeeded'),
        pod('crashed', ['logs'], phase='Failed'),
        {'metadata': {'name': 'bare'}}])
    assert found == {'data': ['web-1', 'web-2'], 'logs': ['web-2']}


@pytest.mark.parametrize('use, busy, text', [
    (volumes.PvUse('pv1', 'Available'), False,
     'PersistentVolume pv1 (Available)'),
    (volumes.PvUse('pv1', 'Released', 'apps/data'), False,
     'PersistentVolume pv1 (Released, claim apps/data, no pod mounts it)'),
    (volumes.PvUse('pv1', 'Bound', 'apps/data'), True,
     'PersistentVolume pv1 (Bound, claim apps/data, no pod mounts it)'),
    (volumes.PvUse('pv1', 'Bound', 'apps/data', ('apps/web-1', 'apps/web-2')),
     True, 'PersistentVolume pv1 (Bound, claim apps/data, mounted by pod(s) '
           'apps/web-1, apps/web-2)'),
])
def test_in_use_and_its_description(use, busy, text):
    assert use.in_use is busy
    assert use.describe() == text


def test_the_refusal_names_every_pv_in_use_and_only_those():
    uses = [volumes.PvUse('pv1', 'Available'),
            volumes.PvUse('pv2', 'Bound', 'apps/data', ('apps/web-1',)),
            volumes.PvUse('pv3', 'Bound', 'db/pg')]
    with pytest.raises(volumes.VolumesInUse) as err:
        volumes.refuse_if_used(uses, 'healing the storage server storage-1')
    text = str(err.value)
    assert text.startswith('healing the storage server storage-1 refused: 2 '
                           'PersistentVolume(s) of this instance are in use')
    assert ('PersistentVolume pv2 (Bound, claim apps/data, mounted by pod(s) '
            'apps/web-1); PersistentVolume pv3 (Bound, claim db/pg, no pod '
            'mounts it)') in text
    assert 'pv1' not in text
    volumes.refuse_if_used(uses[:1], 'anything')
