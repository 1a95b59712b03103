"""drain_and_delete against the lab's API server stand-in, run in-process.

Real parts: a real etcd (Debian etcd-server) on loopback holding the objects,
the stand-in's HTTPS server with its own CA and a bearer token, its Eviction
API checking PodDisruptionBudgets, and the official ``kubernetes`` client
under :class:`k8s_mgmt.kube.ClusterAPI`. Nothing is mocked. For the
deadline tests a TCP relay (:class:`SlowRelay`) sits between them: it
passes the TLS bytes on late, or stops passing them on at all.
"""

import socket
import threading
import time

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import kube
from k8s_mgmt.kube import drain
from k8s_mgmt_lab import kube as standins
from tests.helpers import standin_api

TOKEN = 'drain-test-admin-token-0123456789abcdef'
ETCD = standin_api.ETCD

pytestmark = pytest.mark.skipif(ETCD is None, reason='needs etcd-server')


class SlowRelay(object):
    """127.0.0.1 relay to ``port`` that delays each chunk the client sends
    by ``delay`` seconds and, once ``hold`` is set, sends nothing more (a
    wedged API server or load balancer). Each request is one chunk or a
    few, so every API call costs at least ``delay``."""

    def __init__(self, port, delay=0.0):
        self.port, self.delay = port, delay
        self.hold = threading.Event()
        self._stop = threading.Event()
        self._listener = socket.create_server(('127.0.0.1', 0))
        self.url = 'https://127.0.0.1:%d' % self._listener.getsockname()[1]
        self._socks = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(('127.0.0.1', self.port))
            self._socks += [client, upstream]
            for src, dst, slow in ((client, upstream, True),
                                   (upstream, client, False)):
                threading.Thread(target=self._pump, args=(src, dst, slow),
                                 daemon=True).start()

    def _pump(self, src, dst, slow):
        try:
            for chunk in iter(lambda: src.recv(65536), b''):
                if slow and (self._stop.wait(self.delay) or
                             self.hold.is_set()):
                    self._stop.wait()
                    return
                dst.sendall(chunk)
        except OSError:
            return

    def close(self):
        self._stop.set()
        self._listener.close()
        for sock in self._socks:
            sock.close()


@pytest.fixture(scope='module')
def etcd(tmp_path_factory):
    with standin_api.running_etcd(tmp_path_factory.mktemp('etcd') / 'data',
                                  'drain-test') as address:
        yield address


@pytest.fixture(scope='module')
def server(etcd, tmp_path_factory):
    srv = standin_api.serve(etcd, tmp_path_factory.mktemp('pki'))
    srv.api.store.add_token(TOKEN, 'admin', ['system:masters'])
    srv.api.resources.create('', 'v1', 'namespaces', None,
                             {'metadata': {'name': 'default'}})
    yield srv
    srv.shutdown()
    srv.server_close()


class Cluster(object):
    """Objects written straight into the stand-in's store (the test's
    kubectl), read back through it."""

    def __init__(self, srv, tag):
        self.res = srv.api.resources
        self.tag = tag

    def node(self, name, ready=True):
        name = '%s-%s' % (self.tag, name)
        beat = standins.rfc3339()
        self.res.create('', 'v1', 'nodes', None, {
            'metadata': {'name': name},
            'status': {'conditions': [{
                'type': 'Ready', 'status': 'True' if ready else 'False',
                'lastHeartbeatTime': beat}]}})
        return name

    def pod(self, node, name, labels=None, owner=None, mirror=False):
        meta = {'name': '%s-%s' % (self.tag, name),
                'labels': labels or {}}
        if owner:
            meta['ownerReferences'] = [{'apiVersion': 'apps/v1',
                                        'kind': owner, 'name': 'o',
                                        'uid': 'u', 'controller': True}]
        if mirror:
            meta['annotations'] = {drain.MIRROR_ANNOTATION: 'x'}
        self.res.create('', 'v1', 'pods', 'default',
                        {'metadata': meta, 'spec': {'nodeName': node}})
        return 'default/' + meta['name']

    def pdb(self, name, labels, min_available):
        self.res.create('policy', 'v1', 'poddisruptionbudgets', 'default', {
            'metadata': {'name': '%s-%s' % (self.tag, name)},
            'spec': {'minAvailable': min_available,
                     'selector': {'matchLabels': labels}}})
        return '%s-%s' % (self.tag, name)

    def delete_pdb(self, name):
        self.res.delete('policy', 'v1', 'poddisruptionbudgets', 'default',
                        name)

    def pods_on(self, node):
        listing = self.res.list('', 'v1', 'pods', None,
                                {'fieldSelector': 'spec.nodeName=' + node})
        return sorted('default/' + p['metadata']['name']
                      for p in listing['items'])

    def node_obj(self, node):
        try:
            return self.res.get('', 'v1', 'nodes', None, node)
        except Exception:
            return None


@pytest.fixture
def cluster(server, request):
    return Cluster(server, request.node.name.replace('_', '-')[5:40].lower())


@pytest.fixture
def api(server):
    with kube.ClusterAPI(server.url, TOKEN, server.ca_pem) as client:
        yield client


def test_evicts_workload_pods_leaves_daemonset_and_mirror_deletes_node(
        cluster, api):
    node = cluster.node('w1')
    web = cluster.pod(node, 'web', owner='ReplicaSet')
    bare = cluster.pod(node, 'bare')
    ds = cluster.pod(node, 'ds', owner='DaemonSet')
    mirror = cluster.pod(node, 'static', mirror=True)
    report = drain.drain_and_delete(api, node, timeout=20)
    assert sorted(report.evicted) == sorted([web, bare])
    assert report.skipped == sorted([ds, mirror])
    assert report.deleted == []
    assert report.node_deleted and not report.unreachable
    assert cluster.node_obj(node) is None
    assert cluster.pods_on(node) == sorted([ds, mirror])


def test_node_without_pods_is_still_deleted(cluster, api):
    node = cluster.node('empty')
    report = drain.drain_and_delete(api, node, timeout=5)
    assert report.found and report.node_deleted
    assert report.evicted == [] and report.skipped == []
    assert cluster.node_obj(node) is None


def test_before_delete_runs_after_the_drain_and_before_the_delete(
        cluster, api):
    node = cluster.node('hook')
    web = cluster.pod(node, 'web', owner='ReplicaSet')
    seen = []

    def before_delete(report):
        # Drained already; the Node still there.
        seen.append((list(report.evicted), cluster.pods_on(node),
                     cluster.node_obj(node) is not None))
    report = drain.drain_and_delete(api, node, timeout=20,
                                    before_delete=before_delete)
    assert seen == [([web], [], True)]
    assert report.node_deleted and cluster.node_obj(node) is None
    # Not run when there is no Node, nor when the Node is to stay.
    drain.drain_and_delete(api, node, timeout=5, before_delete=seen.append)
    kept = cluster.node('kept')
    drain.drain_and_delete(api, kept, timeout=5, delete=False,
                           before_delete=seen.append)
    assert len(seen) == 1


def test_second_call_on_a_removed_node_is_a_no_op(cluster, api):
    node = cluster.node('twice')
    assert drain.drain_and_delete(api, node, timeout=5).node_deleted
    again = drain.drain_and_delete(api, node, timeout=5)
    assert not again.found and not again.node_deleted


def test_budget_blocked_drain_fails_naming_pods_and_keeps_node_cordoned(
        cluster, api):
    node = cluster.node('blocked')
    db = cluster.pod(node, 'db', labels={'app': 'db-' + cluster.tag})
    free = cluster.pod(node, 'free')
    pdb = cluster.pdb('db', {'app': 'db-' + cluster.tag}, 1)
    started = time.monotonic()
    with pytest.raises(drain.DrainError) as caught:
        drain.drain_and_delete(api, node, timeout=2)
    took = time.monotonic() - started
    assert 1.9 <= took < 2.5
    assert caught.value.pods == [db]
    text = str(caught.value)
    assert db in text and node in text and pdb in text
    assert 'force_drain' in text
    assert isinstance(caught.value, exceptions.KubernetesAPIError)
    # The unprotected pod was evicted; the node stays, cordoned.
    assert cluster.pods_on(node) == [db]
    assert free not in cluster.pods_on(node)
    assert cluster.node_obj(node)['spec']['unschedulable'] is True


@pytest.fixture
def relay(server):
    relays = []

    def make(delay=0.0):
        relays.append(SlowRelay(server.server_address[1], delay))
        return relays[-1]

    yield make
    for item in relays:
        item.close()


def _blocked_node(cluster, pods):
    node = cluster.node('slow')
    label = {'app': 's-' + cluster.tag}
    refs = [cluster.pod(node, 'db%d' % i, labels=label) for i in range(pods)]
    cluster.pdb('db', label, pods)
    return node, refs


def test_slow_api_drain_ends_at_its_deadline_not_after_the_round(
        cluster, server, relay):
    # Twenty refused evictions at >= 0.15 s each make one round of 3 s: the
    # deadline must be checked between evictions, not only between rounds.
    node, refs = _blocked_node(cluster, 20)
    slow = relay(delay=0.15)
    with kube.ClusterAPI(slow.url, TOKEN, server.ca_pem) as api:
        started = time.monotonic()
        with pytest.raises(drain.DrainError) as caught:
            drain.drain_and_delete(api, node, timeout=2)
        took = time.monotonic() - started
    assert 1.9 <= took < 2.5, 'took %.2f s' % took
    assert caught.value.pods == sorted(refs)
    text = str(caught.value)
    assert 'eviction refused (HTTP 429)' in text and node in text
    assert cluster.node_obj(node)['spec']['unschedulable'] is True


def test_api_wedged_mid_drain_ends_at_the_deadline(cluster, server, relay):
    # kube_api_timeout is 30 s: a request in flight at the deadline must be
    # cut to it, and the error must still name the pods.
    from oslo_config import fixture as cfg_fixture
    from k8s_mgmt import conf
    fix = cfg_fixture.Config(conf.CONF)
    fix.setUp()
    node, refs = _blocked_node(cluster, 3)
    wedge = relay()
    stuck = threading.Timer(1.0, wedge.hold.set)
    try:
        fix.config(kube_api_timeout=30.0, group='k8s_mgmt')
        with kube.ClusterAPI(wedge.url, TOKEN, server.ca_pem) as api:
            stuck.start()
            started = time.monotonic()
            with pytest.raises(drain.DrainError) as caught:
                drain.drain_and_delete(api, node, timeout=2)
            took = time.monotonic() - started
    finally:
        stuck.cancel()
        fix.cleanUp()
    assert wedge.hold.is_set()
    assert 1.9 <= took < 2.5, 'took %.2f s' % took
    assert caught.value.pods == sorted(refs)


def test_force_deletes_the_pods_a_budget_protects(cluster, api):
    node = cluster.node('forced')
    db = cluster.pod(node, 'db', labels={'app': 'f-' + cluster.tag})
    cluster.pdb('db', {'app': 'f-' + cluster.tag}, 1)
    report = drain.drain_and_delete(api, node, timeout=30, force=True)
    assert report.deleted == [db] and report.evicted == []
    assert report.node_deleted
    assert cluster.pods_on(node) == []


def test_drain_waits_until_the_budget_allows_the_eviction(cluster, api):
    node = cluster.node('waits')
    db = cluster.pod(node, 'db', labels={'app': 'r-' + cluster.tag})
    pdb = cluster.pdb('db', {'app': 'r-' + cluster.tag}, 1)
    lifted = threading.Timer(1.5, cluster.delete_pdb, (pdb,))
    lifted.start()
    try:
        started = time.monotonic()
        report = drain.drain_and_delete(api, node, timeout=30)
        took = time.monotonic() - started
    finally:
        lifted.cancel()
    assert report.evicted == [db] and report.node_deleted
    # Evicted only once the budget was lifted, and at the latest one
    # backoff step (the drain's longest pause) after it; the slack is for a
    # loaded machine, not for the drain.
    assert 1.5 <= took < 1.5 + drain._MAX_DELAY + 3.0, 'took %.2f s' % took


def test_not_ready_node_is_deleted_without_waiting_on_its_pods(
        cluster, api):
    node = cluster.node('dead', ready=False)
    db = cluster.pod(node, 'db', labels={'app': 'd-' + cluster.tag})
    cluster.pdb('db', {'app': 'd-' + cluster.tag}, 1)
    report = drain.drain_and_delete(api, node, timeout=30)
    assert report.unreachable and report.node_deleted
    assert report.evicted == [] and report.deleted == []
    assert cluster.node_obj(node) is None
    assert cluster.pods_on(node) == [db]  # the controllers' business now


def test_caller_can_declare_a_ready_node_unreachable(cluster, api):
    node = cluster.node('gone')
    cluster.pod(node, 'web')
    report = drain.drain_and_delete(api, node, timeout=30,
                                    node_unreachable=True)
    assert report.unreachable and report.node_deleted and not report.evicted


def test_wrong_token_is_an_api_error_not_a_missing_node(cluster, server):
    node = cluster.node('authz')
    with kube.ClusterAPI(server.url, 'not-a-token', server.ca_pem) as bad:
        with pytest.raises(exceptions.KubernetesAPIError) as caught:
            drain.drain_and_delete(bad, node, timeout=5)
    assert '401' in str(caught.value)
    assert cluster.node_obj(node) is not None


def test_timeout_defaults_to_the_config_option(cluster, api):
    from oslo_config import fixture as cfg_fixture
    from k8s_mgmt import conf
    fix = cfg_fixture.Config(conf.CONF)
    fix.setUp()
    try:
        fix.config(drain_timeout=1.0, group='k8s_mgmt')
        node = cluster.node('conf')
        cluster.pod(node, 'db', labels={'app': 'c-' + cluster.tag})
        cluster.pdb('db', {'app': 'c-' + cluster.tag}, 1)
        started = time.monotonic()
        with pytest.raises(drain.DrainError):
            drain.drain_and_delete(api, node)
        assert 0.9 <= time.monotonic() - started < 1.5
    finally:
        fix.cleanUp()


def test_pod_classification_from_json():
    pod = drain.pod_of({'metadata': {
        'name': 'p', 'namespace': 'kube-system',
        'ownerReferences': [{'kind': 'DaemonSet', 'controller': True}],
        'deletionTimestamp': '2026-01-01T00:00:00Z'}})
    assert pod.ref == 'kube-system/p' and pod.daemonset and pod.stays
    assert pod.terminating and not pod.mirror
    plain = drain.pod_of({'metadata': {'name': 'q'}})
    assert plain.ref == 'default/q' and not plain.stays


def test_an_upgrade_drain_marks_the_node_and_only_it_is_uncordoned(
        cluster, api):
    node = cluster.node('up')
    pod = cluster.pod(node, 'web', owner='ReplicaSet')
    report = drain.drain_and_delete(api, node, timeout=10, delete=False,
                                    mark='1.36.1')
    assert report.evicted == [pod] and not report.node_deleted
    state = api.nodes()[node]
    assert state.unschedulable and state.upgrade_mark == '1.36.1'
    assert drain.uncordon(api, node)
    state = api.nodes()[node]
    assert not state.unschedulable and state.upgrade_mark is None
    # A second uncordon finds no mark: nothing to do.
    assert not drain.uncordon(api, node)
    # A Node the operator cordoned (no mark) stays cordoned.
    other = cluster.node('mine')
    api.call('cordon', api.core.patch_node, other,
             {'spec': {'unschedulable': True}},
             _content_type='application/merge-patch+json')
    assert not drain.uncordon(api, other)
    assert api.nodes()[other].unschedulable
    assert not drain.uncordon(api, cluster.tag + '-none')


def test_the_cluster_version_is_kubeadm_configs(server, api):
    assert api.cluster_version() is None
    server.api.resources.create('', 'v1', 'namespaces', None,
                                {'metadata': {'name': 'kube-system'}})
    server.api.resources.create('', 'v1', 'configmaps', 'kube-system', {
        'metadata': {'name': 'kubeadm-config'},
        'data': {'ClusterConfiguration': 'apiVersion: kubeadm.k8s.io/v1beta4'
                 '\nkind: ClusterConfiguration\nkubernetesVersion: '
                 'v1.35.2\n'}})
    assert api.cluster_version() == 'v1.35.2'
