"""Scale out/in, rollback and terminate end to end on the lab.

Real parts: namespace VMs with OpenSSH, the driver's Heat reader and the
lab's Heat API (scaling-policy signals, stack delete), the install script, a
real etcd under the API server stand-in (which checks evictions against
PodDisruptionBudgets), the official kubernetes client. Stand-ins: the
OpenStack APIs, kubeadm, kubelet, containerd, the API server.

The driver is called the way Tacker's conductor calls it, through
:mod:`k8s_mgmt_lab.conductor.lcm_scale` (one driver instance, keyword
arguments, Tacker-shaped dicts). Pods are placed on nodes through the API
(bound with ``spec.nodeName``, as the scheduler would bind them).
"""

import os

import pytest
import yaml
from kubernetes import client as k8s_client

from k8s_mgmt import conf
from k8s_mgmt import exceptions
from k8s_mgmt import kube
from k8s_mgmt import shipped
from k8s_mgmt import ssh
from k8s_mgmt.driver import KubernetesMgmtDriver
from k8s_mgmt_lab import manager
from k8s_mgmt_lab.conductor import lcm
from k8s_mgmt_lab.conductor import lcm_scale
from k8s_mgmt_lab.conductor import status as lab_status
from k8s_mgmt_lab.errors import LabError
from k8s_mgmt_lab.kube import layer

STATE_DIR = '/var/lib/k8s-mgmt-lab-test-scale'
SETTINGS = manager.LabSettings(state_dir=STATE_DIR, subnet='10.254.221.0/24',
                               bridge='k8slabsc', tag='k8z', compute_hosts=4)


@pytest.fixture
def lab(assert_lab_clean):
    the_lab = manager.Lab(SETTINGS)
    the_lab.down()
    # The lab VMs cannot reach the Internet: the image's CNI manifest.
    conf.CONF.set_override('cni_manifest', layer.CNI_MANIFEST,
                           group='k8s_mgmt')
    try:
        yield the_lab
    finally:
        conf.CONF.clear_override('drain_timeout', group='k8s_mgmt')
        conf.CONF.clear_override('cni_manifest', group='k8s_mgmt')
        the_lab.down()
        assert_lab_clean(STATE_DIR, SETTINGS.tag, SETTINGS.bridge)


def _api(result):
    with open(os.path.join(result.driver_state, 'vim_config.yaml')) as src:
        vim = yaml.safe_load(src)
    return kube.ClusterAPI(vim['auth_url'], vim['bearer_token'],
                           vim['ssl_ca_cert'])


def _workers(record):
    return lab_status.read_topology(record).workers


def _place_pod(api, node, name, labels=None):
    """A pod bound to ``node`` (what the scheduler would do)."""
    k8s_client.CoreV1Api(api._api).create_namespaced_pod('default', {
        'apiVersion': 'v1', 'kind': 'Pod',
        'metadata': {'name': name, 'labels': labels or {}},
        'spec': {'nodeName': node, 'containers': [
            {'name': 'c', 'image': 'registry.k8s.io/pause:3.10'}]}})
    return 'default/' + name


def _protect(api, name, labels):
    k8s_client.PolicyV1Api(api._api).create_namespaced_pod_disruption_budget(
        'default', {'apiVersion': 'policy/v1', 'kind': 'PodDisruptionBudget',
                    'metadata': {'name': name},
                    'spec': {'minAvailable': 1,
                             'selector': {'matchLabels': labels}}})


def _pods_on(api, node):
    items = k8s_client.CoreV1Api(api._api).list_pod_for_all_namespaces(
        field_selector='spec.nodeName=' + node).items
    return sorted('%s/%s' % (p.metadata.namespace, p.metadata.name)
                  for p in items if p.spec.node_name == node)


def _master_logins(lab):
    """SSH connections the master's sshd accepted so far."""
    topology = lab_status.read_topology(lcm.read_lab(SETTINGS))
    proc = lab.vms.exec(topology.masters[0].server_id,
                        ['cat', '/run/sshd.log'], check=False)
    return sum(1 for line in proc.stdout.splitlines()
               if line.startswith('Accepted '))


def test_scale_out_in_blocked_forced_then_terminate(lab):
    record = lab.up('simple', workers=1)
    result = lcm.instantiate(SETTINGS)
    driver = KubernetesMgmtDriver()

    out = lcm_scale.scale(SETTINGS, 'SCALE_OUT', driver=driver)
    assert len(out.member_names) == 1
    out2 = lcm_scale.scale(SETTINGS, 'SCALE_OUT', steps=2, driver=driver)
    assert len(out2.member_names) == 2
    workers = _workers(record)
    assert len(workers) == 4
    with _api(result) as api:
        nodes = api.nodes()
        assert {w.name for w in workers} <= set(nodes)
        assert all(nodes[w.name].ready for w in workers)
        assert len(nodes) == 5

        # Scale in: the oldest member goes (as Heat chooses); its pods are
        # evicted first.
        added = out.member_names + out2.member_names
        [oldest] = [w for w in workers if w.parent_resource not in added]
        web = _place_pod(api, oldest.name, 'web-1')
        before = _master_logins(lab)
        gone = lcm_scale.scale(SETTINGS, 'SCALE_IN', driver=driver)
        # Drain and delete through the registered VIM: no SSH to a master
        # (counted by the master's own sshd).
        assert _master_logins(lab) == before
        assert gone.member_names == [oldest.parent_resource]
        assert oldest.name not in api.nodes()
        assert web not in _pods_on(api, oldest.name)
        assert oldest.name not in {w.name for w in _workers(record)}

        # A PodDisruptionBudget blocks the next drain: the scale-in fails
        # naming the pod, Heat keeps the VM, the node stays cordoned.
        conf.CONF.set_override('drain_timeout', 3, group='k8s_mgmt')
        victim = [w for w in _workers(record) if w.parent_resource ==
                  out.member_names[0]][0]
        db = _place_pod(api, victim.name, 'db-1', {'app': 'db'})
        _protect(api, 'db', {'app': 'db'})
        with pytest.raises(exceptions.NodesFailed) as caught:
            lcm_scale.scale(SETTINGS, 'SCALE_IN', driver=driver)
        text = str(caught.value)
        assert db in text and victim.name in text and 'db' in text
        assert victim.name in {w.name for w in _workers(record)}
        assert victim.name in api.nodes()

        # force_drain: the protected pod is deleted, the node removed.
        lcm_scale.scale(SETTINGS, 'SCALE_IN', driver=driver,
                        additional_params={'force_drain': True})
        assert victim.name not in api.nodes()
        assert _pods_on(api, victim.name) == []
        assert len(_workers(record)) == 2

    lcm_scale.terminate(SETTINGS, driver=driver)
    assert not os.path.exists(result.driver_state)
    with pytest.raises(LabError):
        lcm_scale.terminate(SETTINGS, driver=driver)
    # The driver's own terminate_end again: a no-op success.
    inst = {'id': result.vnf_instance_id, 'vim_connection_info': [],
            'instantiated_vnf_info': {
                'flavour_id': 'simple', 'additional_params': lcm.stored_params(
                    shipped.sample_request('simple')['additionalParams'])}}
    driver.terminate_end(context=None, vnf_instance=inst,
                         terminate_vnf_request={}, grant=None,
                         grant_request=None)


class FailingAfterJoin(KubernetesMgmtDriver):
    """scale_end that fails after the real one joined the nodes."""

    def scale_end(self, *args, **kwargs):
        super().scale_end(*args, **kwargs)
        raise exceptions.MgmtDriverError(error_message='injected failure')


def _cluster_workers(api, record):
    masters = {m.name for m in lab_status.read_topology(record).masters}
    return set(api.nodes()) - masters


def test_failed_scale_out_is_rolled_back_and_joined_nodes_removed(lab):
    record = lab.up('simple', workers=1)
    result = lcm.instantiate(SETTINGS)
    before = {w.name for w in _workers(record)}

    # Tacker failing after scale_end returned: its rollback calls
    # scale_start, which removes the nodes that joined.
    with pytest.raises(LabError) as caught:
        lcm_scale.scale(SETTINGS, 'SCALE_OUT', fail_after_scale_end=True)
    assert 'injected' in str(caught.value)
    assert {w.name for w in _workers(record)} == before
    with _api(result) as api:
        assert _cluster_workers(api, record) == before

    # scale_end itself failing: Tacker rolls back through Heat alone, so
    # the joined nodes outlive their VMs...
    with pytest.raises(exceptions.MgmtDriverError) as caught:
        lcm_scale.scale(SETTINGS, 'SCALE_OUT', steps=2,
                        driver=FailingAfterJoin())
    assert 'injected failure' in str(caught.value)
    assert {w.name for w in _workers(record)} == before
    with _api(result) as api:
        ghosts = _cluster_workers(api, record) - before
        assert len(ghosts) == 2
    pins = ssh.HostKeyStore(
        os.path.join(result.driver_state, 'host_keys.json')).all()
    assert ghosts <= {e['node'] for e in pins.values()}

    # ... until the next scale-out deletes them and forgets their pins.
    out = lcm_scale.scale(SETTINGS, 'SCALE_OUT')
    assert len(out.member_names) == 1
    with _api(result) as api:
        assert _cluster_workers(api, record) == {
            w.name for w in _workers(record)}
    pins = ssh.HostKeyStore(
        os.path.join(result.driver_state, 'host_keys.json')).all()
    assert not ghosts & {e['node'] for e in pins.values()}
