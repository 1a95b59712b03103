"""The seeds' request bodies, the lab samples and Tacker's stored form."""

import glob
import os

import pytest

from k8s_mgmt import params
from k8s_mgmt.params import casing
from k8s_mgmt.secrets import Secret

import params_helpers as h
import params_seed_bodies

SEED_FIXTURES = sorted(glob.glob(os.path.join(h.FIXTURES, 'seed_*.json')))
LEGACY_FIXTURES = sorted(glob.glob(os.path.join(h.FIXTURES,
                                                'legacy_seed_*.json')))
SAMPLE_FILES = sorted(glob.glob(os.path.join(h.SAMPLES, '*.json')))


def test_fixtures_exist():
    # Five bodies carry cluster parameters (seeds 001, 002 x3, 003).
    assert len(SEED_FIXTURES) == 5
    assert len(LEGACY_FIXTURES) == 1
    assert {os.path.basename(p) for p in SAMPLE_FILES} == {
        'simple.json', 'complex.json', 'podaffinity.json', 'storage.json',
        'kubespray.json', 'registry.json'}


@pytest.mark.skipif(not os.path.isdir(h.SEEDS), reason='seeds not present')
def test_fixtures_match_the_seed_documents():
    extracted = params_seed_bodies.extract(h.SEEDS)
    committed = {os.path.basename(p): h.load_json(p)
                 for p in SEED_FIXTURES + LEGACY_FIXTURES}
    assert extracted == committed


@pytest.mark.parametrize('path', SEED_FIXTURES, ids=os.path.basename)
def test_seed_placeholder_ports_are_errors_naming_the_field(path):
    # "http://user1:password1@host1:port1" would fail on every VM (the
    # install script refuses it); the message names the rule, and neither
    # the URL nor its password.
    problems = h.problems_of(params.load_request, h.load_json(path))
    proxy = 'k8s_cluster_installation_param.proxy.'
    assert h.paths(problems) == [proxy + 'http_proxy', proxy + 'https_proxy']
    for _, message in problems:
        assert message.startswith('proxy URL port is not a number from 1 '
                                  'to 65535')
        assert 'password' not in message and 'host1' not in message


@pytest.mark.parametrize('path', SEED_FIXTURES, ids=os.path.basename)
def test_seed_request_with_real_ports_is_accepted(path):
    body = h.load_seed(path)
    result = params.load_request(body)
    assert result.flavour == body['flavourId']
    assert result.master_node.username == 'ubuntu'
    assert isinstance(result.master_node.password, Secret)
    assert result.master_node.password.reveal() == 'ubuntu'
    assert result.worker_node.aspect_id == 'worker_instance'
    # The seeds' "192.168.3.0/16" has host bits set; it becomes the network.
    assert result.master_node.pod_cidr == '192.168.0.0/16'
    assert isinstance(result.proxy.http_proxy, Secret)


def test_seed_002_host_bits_are_warned_not_fatal():
    result = params.load_request(h.load_seed(
        os.path.join(h.FIXTURES, 'seed_002_0_simple.json')))
    warned = dict(result.warnings)
    assert 'host bits set' in warned[
        'k8s_cluster_installation_param.master_node.pod_cidr']
    assert list(warned) == [
        'k8s_cluster_installation_param.master_node.pod_cidr']
    assert result.script_path == 'Scripts/install_k8s_cluster.sh'
    assert result.unknown_keys == ()


def test_seed_001_ansible_placeholders_are_recorded():
    result = params.load_request(h.load_seed(
        os.path.join(h.FIXTURES, 'seed_001_0_simple.json')))
    assert result.uses_ansible
    assert result.script_path is None
    assert result.ansible.placeholders == (
        'k8s_cluster_installation_param.ansible.ip_address',
        'k8s_cluster_installation_param.ansible.kubespray_root_path',
        'k8s_cluster_installation_param.ansible.transferring_inventory_path')
    assert result.external_lb_param.script_path == (
        'Scripts/ExternalLB_installation.sh')
    assert 'k8s_cluster_installation_param.script_path' in dict(
        result.warnings)


def test_seed_003_storage_server():
    result = params.load_request(h.load_seed(
        os.path.join(h.FIXTURES, 'seed_003_0_simple.json')))
    storage = result.storage_server
    assert storage.cinder_volume_setup_params == (
        params.CinderVolumeSetup('storage_server_volume', '/volume'),)
    assert [e.export_dir for e in storage.nfs_server_setup_params] == [
        '/volume/nfs/pv1', '/volume/nfs/pv2', '/volume/nfs/pv3']
    assert [p.pv_manifest_file_path for p in result.pv_registration_params] \
        == ['Files/kubernetes/nfs-pv%d.yaml' % i for i in (1, 2, 3)]


def test_legacy_seed_000_is_rejected_saying_what_is_missing():
    body = h.load_json(LEGACY_FIXTURES[0])
    problems = h.problems_of(params.load_request, body)
    assert h.paths(problems) == ['k8s_cluster_installation_param']
    assert 'no Kubernetes cluster parameters' in problems[0][1]
    assert 'input_params' in problems[0][1]


@pytest.mark.parametrize('path', SAMPLE_FILES, ids=os.path.basename)
def test_lab_sample_is_accepted_without_warnings(path, built_package):
    result = params.load_request(h.load_json(path), package_dir=built_package)
    assert result.warnings == ()
    if result.is_registry:
        assert result.registry.volume.volume_resource_id == 'registry_volume'
        assert result.master_node is None and result.script_path is None
        return
    assert result.proxy.k8s_node_cidr == '10.254.0.0/24'
    # HA: the masters' VIP; kubespray: the external LB's address.
    expected = ('vip_CP' if result.is_ha else 'externalLB_CP1'
                if result.uses_ansible else 'masterNode_CP1')
    assert result.master_node.cluster_cp_name == expected


def _camel_stored_simple():
    """additionalParams as seed 002's `openstack vnflcm show` prints it
    (placeholder ports filled)."""
    return h.without_placeholders({
        'lcm-operation-user-data': './UserData/k8s_cluster_user_data.py',
        'lcm-operation-user-data-class': 'KubernetesClusterUserData',
        'k8sClusterInstallationParam': {
            'vimName': 'kubernetes_vim',
            'proxy': {'noProxy': '192.168.246.0/24,10.0.0.1',
                      'httpProxy': 'http://user1:password1@host1:port1',
                      'httpsProxy': 'https://user2:password2@host2:port2',
                      'k8sNodeCidr': '10.10.0.0/24'},
            'masterNode': {'password': 'ubuntu', 'podCidr': '192.168.3.0/16',
                           'username': 'ubuntu', 'aspectId': 'master_instance',
                           'nicCpName': 'masterNode_CP1',
                           'sshCpName': 'masterNode_CP1',
                           'clusterCidr': '10.199.187.0/24',
                           'clusterCpName': 'masterNode_CP1'},
            'scriptPath': 'Scripts/install_k8s_cluster.sh',
            'workerNode': {'password': 'ubuntu', 'username': 'ubuntu',
                           'aspectId': 'worker_instance',
                           'nicCpName': 'workerNode_CP2',
                           'sshCpName': 'workerNode_CP2'},
        },
    })


@pytest.mark.parametrize('operation', params.OPERATIONS)
def test_stored_camel_case_reads_like_the_snake_case_request(operation):
    snake = h.load_seed(os.path.join(h.FIXTURES, 'seed_002_0_simple.json'))
    from_request = params.load_cluster_params(
        snake['additionalParams'], operation=operation, flavour='simple')
    from_stored = params.load_cluster_params(
        _camel_stored_simple(), operation=operation, flavour='simple')
    assert from_stored == from_request
    assert from_stored.proxy.k8s_node_cidr == '10.10.0.0/24'


def test_camel_case_problem_paths_are_snake_case():
    stored = _camel_stored_simple()
    stored['k8sClusterInstallationParam']['masterNode']['podCidr'] = \
        '300.1.0.0/16'
    problems = h.problems_of(params.load_cluster_params, stored,
                             flavour='simple')
    assert problems == [('k8s_cluster_installation_param.master_node.pod_cidr',
                         "not a CIDR: '300.1.0.0/16'")]


def _camel_keys(value):
    if isinstance(value, dict):
        return {casing.snake_to_camel(k): _camel_keys(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_camel_keys(v) for v in value]
    return value


@pytest.mark.parametrize('path', SEED_FIXTURES, ids=os.path.basename)
def test_every_seed_reads_the_same_camel_cased(path):
    body = h.load_seed(path)
    snake = params.load_request(body)
    camel_body = dict(body, additionalParams=_camel_keys(
        body['additionalParams']))
    assert 'k8sClusterInstallationParam' in camel_body['additionalParams']
    assert params.load_request(camel_body) == snake
