"""PersistentVolumes, claims and pods through the official ``kubernetes``
client against two API server stand-ins on one REAL etcd (two masters):
binding, protection finalizers, the status subresource and selectors.

Each test uses its own storage class, so volumes and claims of other tests
(the servers are shared by the module) never match its claims.
"""

import pytest
from kubernetes.client.exceptions import ApiException

from k8s_mgmt_lab.kube import volumes


def _pv(name, cls, size='1Gi', labels=None, claim_ref=None, policy=None):
    spec = {'capacity': {'storage': size}, 'accessModes': ['ReadWriteMany'],
            'storageClassName': cls,
            'nfs': {'server': '192.0.2.10', 'path': '/export/' + name}}
    if claim_ref:
        spec['claimRef'] = claim_ref
    if policy:
        spec['persistentVolumeReclaimPolicy'] = policy
    return {'apiVersion': 'v1', 'kind': 'PersistentVolume',
            'metadata': {'name': name, 'labels': labels or {}},
            'spec': spec}


def _claim(name, cls, size='1Gi', volume=None):
    spec = {'accessModes': ['ReadWriteMany'], 'storageClassName': cls,
            'resources': {'requests': {'storage': size}}}
    if volume:
        spec['volumeName'] = volume
    return {'apiVersion': 'v1', 'kind': 'PersistentVolumeClaim',
            'metadata': {'name': name}, 'spec': spec}


def _pod(name, claim):
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name},
            'spec': {'containers': [{'name': 'c', 'image': 'pause'}],
                     'volumes': [{'name': 'd', 'persistentVolumeClaim': {
                         'claimName': claim}}]}}


def _gone(read):
    with pytest.raises(ApiException) as err:
        read()
    return err.value.status == 404


def test_a_claim_binds_and_both_masters_see_it(core, other_core):
    made = core.create_persistent_volume(_pv('bind-a', 'bind', '2Gi'))
    assert made.status.phase == 'Available'
    assert made.metadata.finalizers == [volumes.PV_PROTECTION]
    core.create_persistent_volume(_pv('bind-b', 'bind', '5Gi'))
    claim = core.create_namespaced_persistent_volume_claim(
        'default', _claim('bind-c', 'bind', '1500Mi'))
    assert claim.metadata.finalizers == [volumes.PVC_PROTECTION]
    claim = other_core.read_namespaced_persistent_volume_claim(
        'bind-c', 'default')
    assert (claim.status.phase, claim.spec.volume_name) == \
        ('Bound', 'bind-a')
    assert claim.status.capacity == {'storage': '2Gi'}
    pv = other_core.read_persistent_volume('bind-a')
    assert pv.status.phase == 'Bound'
    assert (pv.spec.claim_ref.namespace, pv.spec.claim_ref.name,
            pv.spec.claim_ref.uid) == ('default', 'bind-c',
                                       claim.metadata.uid)
    assert other_core.read_persistent_volume('bind-b').status.phase == \
        'Available'


def test_volume_name_pending_and_late_binding(core, other_core):
    core.create_persistent_volume(_pv('named-small', 'named'))
    core.create_persistent_volume(_pv('named-big', 'named', '9Gi'))
    core.create_namespaced_persistent_volume_claim(
        'apps', _claim('named-c', 'named', volume='named-big'))
    core.create_namespaced_persistent_volume_claim(
        'apps', _claim('named-toobig', 'named', '20Gi'))
    claim = other_core.read_namespaced_persistent_volume_claim(
        'named-c', 'apps')
    assert (claim.status.phase, claim.spec.volume_name) == \
        ('Bound', 'named-big')
    pending = other_core.read_namespaced_persistent_volume_claim(
        'named-toobig', 'apps')
    assert pending.status.phase == 'Pending'
    # A volume that fits, made later (on the other master), binds it.
    other_core.create_persistent_volume(_pv('named-huge', 'named', '20Gi'))
    claim = core.read_namespaced_persistent_volume_claim(
        'named-toobig', 'apps')
    assert (claim.status.phase, claim.spec.volume_name) == \
        ('Bound', 'named-huge')


def test_a_volume_made_with_a_claim_ref_binds_that_claim(core):
    core.create_namespaced_persistent_volume_claim(
        'default', _claim('ref-c', 'ref'))
    core.create_persistent_volume(_pv('ref-v', 'ref', claim_ref={
        'namespace': 'default', 'name': 'ref-c'}))
    assert core.read_persistent_volume('ref-v').status.phase == 'Bound'
    assert core.read_namespaced_persistent_volume_claim(
        'ref-c', 'default').spec.volume_name == 'ref-v'


def test_deleted_claim_releases_and_bound_volume_deletion_waits(core):
    core.create_persistent_volume(_pv('rel-v', 'rel'))
    core.create_namespaced_persistent_volume_claim(
        'default', _claim('rel-c', 'rel'))
    deleting = core.delete_persistent_volume('rel-v')
    assert deleting.metadata.deletion_timestamp is not None
    pv = core.read_persistent_volume('rel-v')  # Terminating, still Bound
    assert pv.metadata.deletion_timestamp and pv.status.phase == 'Bound'
    core.create_namespaced_pod('default', _pod('rel-pod', 'rel-c'))
    core.delete_namespaced_persistent_volume_claim('rel-c', 'default')
    claim = core.read_namespaced_persistent_volume_claim('rel-c', 'default')
    assert claim.metadata.deletion_timestamp and \
        claim.status.phase == 'Bound'
    assert core.read_persistent_volume('rel-v').status.phase == 'Bound'
    core.delete_namespaced_pod('rel-pod', 'default')
    assert _gone(lambda: core.read_namespaced_persistent_volume_claim(
        'rel-c', 'default'))
    assert _gone(lambda: core.read_persistent_volume('rel-v'))


def test_retained_volume_is_released_with_its_claim_ref(core):
    core.create_persistent_volume(_pv('ret-v', 'ret'))
    core.create_persistent_volume(_pv('del-v', 'ret', '7Gi',
                                      policy='Delete'))
    core.create_namespaced_persistent_volume_claim(
        'default', _claim('ret-c', 'ret'))
    core.create_namespaced_persistent_volume_claim(
        'default', _claim('del-c', 'ret', volume='del-v'))
    core.delete_namespaced_persistent_volume_claim('ret-c', 'default')
    core.delete_namespaced_persistent_volume_claim('del-c', 'default')
    pv = core.read_persistent_volume('ret-v')
    assert pv.status.phase == 'Released'
    assert pv.spec.claim_ref.name == 'ret-c'
    assert core.read_persistent_volume('del-v').status.phase == 'Failed'
    core.delete_persistent_volume('ret-v')  # not Bound: goes at once
    assert _gone(lambda: core.read_persistent_volume('ret-v'))


def test_object_writes_keep_status_and_the_status_write_only_status(core):
    core.create_persistent_volume(_pv('put-v', 'put'))
    core.create_namespaced_persistent_volume_claim(
        'default', _claim('put-c', 'put'))
    pv = core.read_persistent_volume('put-v').to_dict()
    pv['spec']['nfs']['server'] = '192.0.2.99'
    pv['status'] = {'phase': 'Available'}
    replaced = core.replace_persistent_volume('put-v', pv)
    assert replaced.spec.nfs.server == '192.0.2.99'
    assert replaced.status.phase == 'Bound'
    core.patch_persistent_volume_status('put-v', {
        'status': {'phase': 'Bound', 'message': 'checked'},
        'spec': {'nfs': {'server': '192.0.2.1', 'path': '/x'}}})
    pv = core.read_persistent_volume('put-v')
    assert pv.status.message == 'checked'
    assert pv.spec.nfs.server == '192.0.2.99'
    # The controller owns the phase: a status write cannot unbind.
    core.patch_persistent_volume_status('put-v', {
        'status': {'phase': 'Available'}})
    assert core.read_persistent_volume('put-v').status.phase == 'Bound'


def test_selectors_and_pods_across_namespaces(core):
    for name, role in (('sel-a', 'data'), ('sel-b', 'logs'),
                       ('sel-c', 'tmp')):
        core.create_persistent_volume(_pv(name, 'sel', labels={
            'k8s-mgmt.openstack.org/vnf-instance': 'inst-1', 'role': role}))
    names = (lambda **kw: sorted(
        v.metadata.name for v in core.list_persistent_volume(**kw).items))
    instance = 'k8s-mgmt.openstack.org/vnf-instance=inst-1'
    assert names(label_selector=instance) == ['sel-a', 'sel-b', 'sel-c']
    assert names(label_selector=instance + ',role in (data,logs)') == \
        ['sel-a', 'sel-b']
    assert names(label_selector='role notin (data,logs),' + instance) == \
        ['sel-c']
    assert names(label_selector='role!=tmp,' + instance) == \
        ['sel-a', 'sel-b']
    assert names(field_selector='metadata.name=sel-b') == ['sel-b']
    core.create_namespaced_persistent_volume_claim(
        'apps', _claim('sel-claim', 'sel'))
    core.create_namespaced_pod('apps', _pod('sel-pod', 'sel-claim'))
    users = [(p.metadata.namespace, p.metadata.name)
             for p in core.list_pod_for_all_namespaces().items
             for v in p.spec.volumes or ()
             if v.persistent_volume_claim and
             v.persistent_volume_claim.claim_name == 'sel-claim']
    assert users == [('apps', 'sel-pod')]
    claims = core.list_persistent_volume_claim_for_all_namespaces(
        field_selector='metadata.name=sel-claim').items
    assert [(c.metadata.namespace, c.status.phase) for c in claims] == \
        [('apps', 'Bound')]
