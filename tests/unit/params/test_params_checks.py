"""Each validation rule, good and bad, with the path and message it gives."""

import logging
import os

import pytest

from k8s_mgmt import params

import params_helpers as h
from params_helpers import DELETE, with_change

M = 'k8s_cluster_installation_param.master_node'
W = 'k8s_cluster_installation_param.worker_node'
S = 'k8s_cluster_installation_param.storage_server'


def load(additional, **kwargs):
    kwargs.setdefault('flavour', 'simple')
    return params.load_cluster_params(additional, **kwargs)


def only_problem(additional, **kwargs):
    problems = h.problems_of(load, additional, **kwargs)
    assert len(problems) == 1, problems
    return problems[0]


def test_base_params_are_valid_and_typed():
    result = load(h.base_params())
    assert isinstance(result.master_node, params.MasterNodeParams)
    assert result.kubernetes_version == '1.35'   # CONF default
    assert result.effective_service_cidr == '10.199.187.0/24'
    assert result.warnings == () and result.unknown_keys == ()


@pytest.mark.parametrize('path, value, where, message', [
    ('master_node.pod_cidr', '300.1.0.0/16', M + '.pod_cidr',
     "not a CIDR: '300.1.0.0/16'"),
    ('master_node.pod_cidr', '10.0.0.1', M + '.pod_cidr',
     "not a CIDR (no /PREFIX): '10.0.0.1'"),
    ('master_node.cluster_cidr', 17, M + '.cluster_cidr',
     'expected a CIDR string, got a number'),
    ('master_node', ['a'], M, 'expected an object, got a list'),
    ('master_node.username', '', M + '.username', 'empty'),
    ('master_node.username', '   ', M + '.username', 'empty'),
    ('worker_node.username', 'ubu ntu', W + '.username', 'cannot be a login'),
    ('worker_node.username', 'a;rm -rf /', W + '.username', 'cannot be a lo'),
    ('worker_node.username', '-oProxyCommand=x', W + '.username', 'cannot'),
    ('worker_node.username', '$(id)', W + '.username', 'cannot be a login'),
    ('worker_node.password', 1234, W + '.password',
     'expected the password as a string, got a number'),
    ('worker_node.password', '', W + '.password', 'empty password'),
    ('worker_node.ssh_cp_name', 'a b', W + '.ssh_cp_name', 'no whitespace'),
    ('worker_node.nic_cp_name', 'x\ny', W + '.nic_cp_name', 'control char'),
    ('script_path', '/etc/passwd', 'k8s_cluster_installation_param.'
     'script_path', 'absolute'),
    ('script_path', '../../etc/passwd', 'k8s_cluster_installation_param.'
     'script_path', "escapes the VNF package: '../../etc/passwd'"),
    ('script_path', 'Scripts/../../x.sh', 'k8s_cluster_installation_param.'
     'script_path', 'escapes the VNF package'),
    ('script_path', '', 'k8s_cluster_installation_param.script_path',
     'empty'),
    ('kubernetes_version', 'latest', 'k8s_cluster_installation_param.'
     'kubernetes_version', 'not a Kubernetes version'),
    ('kubernetes_version', '2.0', 'k8s_cluster_installation_param.'
     'kubernetes_version', 'not a Kubernetes version'),
    ('kubernetes_version', 1.35, 'k8s_cluster_installation_param.'
     'kubernetes_version', 'expected a version string, got a number'),
    ('vim_name', 'my vim', 'k8s_cluster_installation_param.vim_name',
     'cannot be a VIM name'),
    ('vim_name', '../vim', 'k8s_cluster_installation_param.vim_name',
     'cannot be a VIM name'),
    ('proxy.http_proxy', 'ftp://proxy:3128',
     'k8s_cluster_installation_param.proxy.http_proxy',
     'must start with http:// or https://'),
    ('proxy.https_proxy', 'http://', 'k8s_cluster_installation_param.proxy.'
     'https_proxy', 'no host'),
    ('proxy.no_proxy', 'a b,c', 'k8s_cluster_installation_param.proxy.'
     'no_proxy', 'not a host, domain'),
    ('proxy.http_proxy', 'http://p:3128/\ntoken=abcdef.0123456789abcdef',
     'k8s_cluster_installation_param.proxy.http_proxy',
     'the proxy URL holds a control character (not shown)'),
    ('proxy.http_proxy', 'http://u:p w@p:3128', 'k8s_cluster_installation_'
     'param.proxy.http_proxy', 'holds whitespace'),
    ('proxy.https_proxy', 'http://p:3128/"x', 'k8s_cluster_installation_'
     'param.proxy.https_proxy', 'a quote'),
    ('proxy.https_proxy', 'http://p\\q:3128', 'k8s_cluster_installation_'
     'param.proxy.https_proxy', 'a backslash'),
    ('proxy', 'http://p:3128', 'k8s_cluster_installation_param.proxy',
     'expected an object, got a string'),
])
def test_bad_value(path, value, where, message):
    got_path, got_message = only_problem(with_change(h.ROOT + '.' + path,
                                                     value))
    assert got_path == where
    assert message in got_message


@pytest.mark.parametrize('path, value, field, expected', [
    ('kubernetes_version', '1.35.2', 'kubernetes_version', '1.35.2'),
    ('kubernetes_version', 'v1.34', 'kubernetes_version', '1.34'),
    ('script_path', './Scripts/install_k8s_cluster.sh', 'script_path',
     'Scripts/install_k8s_cluster.sh'),
    ('vim_name', 'k8s-vim.lab_1', 'vim_name', 'k8s-vim.lab_1'),
])
def test_good_value_is_normalised(path, value, field, expected):
    result = load(with_change(h.ROOT + '.' + path, value))
    assert getattr(result, field) == expected
    assert result.warnings == ()


def test_host_bits_are_cleared_with_a_warning():
    result = load(with_change(h.ROOT + '.master_node.pod_cidr',
                              '192.168.3.0/16'))
    assert result.master_node.pod_cidr == '192.168.0.0/16'
    assert result.warnings == ((M + '.pod_cidr', "host bits set in "
                                "'192.168.3.0/16'; using the network "
                                "192.168.0.0/16"),)


def test_every_problem_is_reported_at_once():
    additional = h.base_params()
    root = additional[h.ROOT]
    root['master_node']['pod_cidr'] = '300.1.0.0/16'
    root['master_node']['username'] = ''
    root['worker_node']['ssh_cp_name'] = 7
    root['script_path'] = '../../etc/passwd'
    root['kubernetes_version'] = 'soon'
    del root['worker_node']['nic_cp_name']
    problems = h.problems_of(load, additional)
    assert sorted(h.paths(problems)) == sorted([
        M + '.pod_cidr', M + '.username', W + '.ssh_cp_name',
        W + '.nic_cp_name', h.ROOT + '.script_path',
        h.ROOT + '.kubernetes_version'])


@pytest.mark.parametrize('cidrs, where, other', [
    (('10.96.0.0/16', '10.96.128.0/24', None), M + '.pod_cidr',
     'cluster_cidr 10.96.128.0/24'),
    (('10.254.0.0/16', '10.199.187.0/24', '10.254.0.0/24'), M + '.pod_cidr',
     'k8s_node_cidr 10.254.0.0/24'),
    (('192.168.0.0/16', '10.0.0.0/8', '10.254.0.0/24'), M + '.cluster_cidr',
     'k8s_node_cidr'),
    # Not given: the default pod network 192.168.0.0/16 collides.
    ((None, '10.199.187.0/24', '192.168.10.0/24'),
     h.ROOT + '.proxy.k8s_node_cidr', 'pod_cidr 192.168.0.0/16 (the default'),
])
def test_overlapping_networks(cidrs, where, other):
    additional = h.base_params()
    master = additional[h.ROOT]['master_node']
    for key, value in zip(('pod_cidr', 'cluster_cidr'), cidrs[:2]):
        if value is None:
            del master[key]
        else:
            master[key] = value
    additional[h.ROOT]['proxy'] = (
        {'k8s_node_cidr': cidrs[2]} if cidrs[2] else {})
    path, message = only_problem(additional)
    assert path == where
    assert other in message


@pytest.mark.parametrize('operation, flavour, remove, missing', [
    ('instantiate', 'simple', 'master_node', M),
    ('instantiate', 'simple', 'script_path', h.ROOT + '.script_path'),
    ('heal', 'simple', 'worker_node.ssh_cp_name', W + '.ssh_cp_name'),
    ('instantiate', 'simple', 'master_node.cluster_cp_name',
     M + '.cluster_cp_name'),
    ('instantiate', 'complex', 'master_node.aspect_id', M + '.aspect_id'),
    ('scale', 'simple', 'worker_node.aspect_id', W + '.aspect_id'),
    ('instantiate', 'simple', 'worker_node.password', W + '.password'),
])
def test_required_per_operation_and_flavour(operation, flavour, remove,
                                            missing):
    additional = with_change(h.ROOT + '.' + remove, DELETE)
    # The UserData makes aspect_id required; its two keys go together.
    additional.pop('lcm-operation-user-data')
    additional.pop('lcm-operation-user-data-class')
    path, message = only_problem(additional, operation=operation,
                                 flavour=flavour)
    assert path == missing
    assert message.startswith('required')


def test_aspect_id_optional_for_simple_without_user_data():
    additional = with_change(h.ROOT + '.master_node.aspect_id', DELETE)
    additional.pop('lcm-operation-user-data')
    additional.pop('lcm-operation-user-data-class')
    assert load(additional).master_node.aspect_id is None
    additional['lcm-operation-user-data'] = './UserData/x.py'
    additional['lcm-operation-user-data-class'] = 'X'
    assert h.paths(h.problems_of(load, additional)) == [M + '.aspect_id']


def test_terminate_needs_no_cluster_parameters():
    result = load({}, operation='terminate')
    assert result.master_node is None
    assert h.ROOT in dict(result.warnings)
    assert load({h.ROOT: {}}, operation='terminate').worker_node is None


def test_unknown_operation_is_a_problem():
    assert h.paths(h.problems_of(load, h.base_params(),
                                 operation='rollout')) == ['operation']


def test_password_and_private_key():
    pytest.importorskip('cryptography')
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519
    pem = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption()).decode()
    with_key = with_change(h.ROOT + '.worker_node.password', DELETE)
    with_key[h.ROOT]['worker_node']['ssh_private_key'] = pem
    result = load(with_key)
    assert result.worker_node.ssh_private_key.reveal() == pem
    assert result.worker_node.password is None
    both = with_change(h.ROOT + '.worker_node.ssh_private_key', pem)
    assert only_problem(both) == (W + '.password', 'give password or '
                                  'ssh_private_key, not both')
    not_pem = with_change(h.ROOT + '.worker_node.ssh_private_key',
                          'ssh-ed25519 AAAA-public-key', with_key)
    path, message = only_problem(not_pem)
    assert path == W + '.ssh_private_key' and 'not a PEM' in message
    assert 'AAAA' not in message


def test_package_dir_checks_files(package_copy, tmp_path):
    outside = tmp_path / 'outside.sh'
    outside.write_text('')
    os.symlink(str(outside), os.path.join(package_copy, 'Scripts', 'link.sh'))
    assert load(h.base_params(), package_dir=package_copy).script_path
    missing = with_change(h.ROOT + '.script_path', 'Scripts/nope.sh')
    path, message = only_problem(missing, package_dir=package_copy)
    assert 'no such file' in message and "'Scripts/nope.sh'" in message
    link = with_change(h.ROOT + '.script_path', 'Scripts/link.sh')
    assert 'outside the VNF package' in only_problem(
        link, package_dir=package_copy)[1]
    directory = with_change(h.ROOT + '.script_path', 'Scripts')
    assert 'no such file' in only_problem(
        directory, package_dir=package_copy)[1]


def _with_storage(**changes):
    additional = h.base_params()
    storage = h.storage_section()
    storage.update(changes)
    additional[h.ROOT]['storage_server'] = storage
    return additional


@pytest.mark.parametrize('changes, where, message', [
    ({'cinder_volume_setup_params': [
        {'volume_resource_id': 'v1', 'mount_to': '/volume'},
        {'volume_resource_id': 'v2', 'mount_to': '/volume'}]},
     S + '.cinder_volume_setup_params[1].mount_to', 'duplicate mount_to'),
    ({'cinder_volume_setup_params': [
        {'volume_resource_id': 'v1', 'mount_to': 'volume'}]},
     S + '.cinder_volume_setup_params[0].mount_to', 'not an absolute path'),
    ({'nfs_server_setup_params': [
        {'export_dir': '/volume/../etc', 'export_to': '10.0.0.0/24'}]},
     S + '.nfs_server_setup_params[0].export_dir', 'contains ".."'),
    ({'nfs_server_setup_params': [
        {'export_dir': '/volume/nfs', 'export_to': 'everyone'}]},
     S + '.nfs_server_setup_params[0].export_to',
     "not an IP address or network: 'everyone'"),
    ({'nfs_server_setup_params': [{'export_dir': '/volume/nfs'}]},
     S + '.nfs_server_setup_params[0].export_to', 'required'),
    ({'nfs_server_setup_params': []}, S + '.nfs_server_setup_params',
     'at least 1'),
    ({'cinder_volume_setup_params': {'mount_to': '/v'}},
     S + '.cinder_volume_setup_params', 'expected a list, got an object'),
    ({'username': None}, S + '.username', 'required'),
])
def test_storage_server_checks(changes, where, message):
    path, got = only_problem(_with_storage(**changes))
    assert path == where
    assert message in got


def test_storage_server_good():
    result = load(_with_storage(nfs_server_setup_params=[
        {'export_dir': '/volume/nfs/pv1', 'export_to': '10.254.0.7'},
        {'export_dir': '/volume/nfs', 'export_to': '10.254.0.0/24'}]))
    exports = result.storage_server.nfs_server_setup_params
    assert [e.export_to for e in exports] == ['10.254.0.7', '10.254.0.0/24']
    assert not result.warnings


@pytest.mark.parametrize('export, where, message', [
    # Data outside the volume would die with the VM.
    ({'export_dir': '/srv/nfs', 'export_to': '10.254.0.0/24'},
     '.export_dir', 'on no Cinder volume mount (/volume)'),
    ({'export_dir': '/volume/nfs', 'export_to': '0.0.0.0/0'},
     '.export_to', 'includes unspecified addresses (0.0.0.0/8)'),
])
def test_storage_export_rules(export, where, message):
    path, got = only_problem(_with_storage(nfs_server_setup_params=[
        {'export_dir': '/volume/nfs/pv1', 'export_to': '10.254.0.7'},
        export]))
    assert path == S + '.nfs_server_setup_params[1]' + where
    assert message in got


def test_pv_registration_paths():
    additional = _with_storage()
    additional[h.ROOT]['pv_registration_params'] = [
        {'pv_manifest_file_path': 'Files/pv1.yaml', 'nfs_server_cp': 'cp'},
        {'pv_manifest_file_path': '/abs.yaml', 'nfs_server_cp': 'cp'}]
    path, message = only_problem(additional)
    assert path == (h.ROOT + '.pv_registration_params[1].'
                    'pv_manifest_file_path')
    assert 'absolute' in message


@pytest.mark.parametrize('storage, cps, message', [
    (False, ('cp', 'cp'), 'needs storage_server'),
    (True, ('cp', 'other_cp'), 'nfs_server_cp differs between entries '
                               '(cp, other_cp)'),
])
def test_pv_registration_needs_one_storage_server(storage, cps, message):
    additional = _with_storage() if storage else h.base_params()
    additional[h.ROOT]['pv_registration_params'] = [
        {'pv_manifest_file_path': 'Files/pv%d.yaml' % i, 'nfs_server_cp': cp}
        for i, cp in enumerate(cps)]
    path, got = only_problem(additional)
    assert path == h.ROOT + '.pv_registration_params'
    assert message in got


def _kubespray(lb=True):
    """Parameters of the kubespray mode: no script_path, an Ansible
    server and (``lb``) the external load balancer."""
    additional = with_change(h.ROOT + '.script_path', DELETE)
    additional[h.ROOT]['ansible'] = {
        'ip_address': '10.254.0.9', 'username': 'ansible', 'password': 'x1y2',
        'kubespray_root_path': '/opt/kubespray',
        'transferring_inventory_path': '/opt/kubespray/inventory/k8s'}
    if lb:
        additional[h.ROOT]['external_lb_param'] = {
            'ssh_cp_name': 'externalLB_CP1', 'ssh_username': 'ubuntu',
            'ssh_password': 'pw-123', 'script_path': 'Scripts/lb.sh'}
    return additional


def test_ansible_mode_needs_its_fields_not_script_path():
    additional = _kubespray()
    result = load(additional)
    assert result.uses_ansible and result.ansible.placeholders == ()
    del additional[h.ROOT]['ansible']['kubespray_root_path']
    additional[h.ROOT]['ansible']['ip_address'] = '10.254.0.300'
    assert sorted(h.paths(h.problems_of(load, additional))) == [
        h.ROOT + '.ansible.ip_address',
        h.ROOT + '.ansible.kubespray_root_path']


def test_kubespray_mode_needs_an_external_lb_and_no_storage_server():
    additional = _kubespray(lb=False)
    path, message = only_problem(additional)
    assert path == h.ROOT + '.external_lb_param'
    assert 'load balancer' in message


def test_kubespray_mode_warns_that_proxies_are_not_passed_on():
    additional = _kubespray()
    additional[h.ROOT]['proxy'] = {'http_proxy': 'http://u:p@proxy:3128'}
    result = load(additional)
    [(path, message)] = [w for w in result.warnings
                         if w[0] == h.ROOT + '.proxy']
    assert 'not passed to kubespray' in message
    assert 'u:p' not in message


def test_kubespray_flavour_needs_ansible():
    path, message = only_problem(h.base_params(), flavour='kubespray')
    assert path == h.ROOT + '.ansible'
    assert 'kubespray flavour' in message


def test_external_lb_param():
    additional = h.base_params()
    additional[h.ROOT]['external_lb_param'] = {
        'ssh_cp_name': 'externalLB_CP1', 'ssh_username': 'ubuntu',
        'ssh_password': 'pw-123', 'script_path': '../lb.sh'}
    path, message = only_problem(additional)
    assert path == h.ROOT + '.external_lb_param.script_path'
    assert 'escapes' in message


def test_unknown_keys_warn_and_are_returned(caplog):
    additional = h.base_params()
    additional['lcm-kubernetes-def-files'] = ['Files/x.yaml']   # Tacker's
    additional['input_params'] = ''
    additional[h.ROOT]['master_node']['podCIDR'] = '10.0.0.0/8'
    additional[h.ROOT]['worker_node']['flavor'] = 'm1.small'
    with caplog.at_level(logging.WARNING, logger='k8s_mgmt.params'):
        result = load(additional)
    assert result.unknown_keys == ('input_params', M + '.podCIDR',
                                   W + '.flavor')
    logged = caplog.text
    for unknown in result.unknown_keys:
        assert unknown in logged
    assert 'lcm-kubernetes-def-files' not in logged


def test_both_casings_with_different_values_is_a_problem():
    additional = h.base_params()
    additional[h.ROOT]['masterNode'] = dict(
        additional[h.ROOT]['master_node'], username='other')
    path, message = only_problem(additional)
    assert path == M and 'given twice' in message
    additional[h.ROOT]['masterNode']['username'] = 'ubuntu'
    assert load(additional).master_node.username == 'ubuntu'


def test_unknown_flavour_warns():
    result = load(h.base_params(), flavour='tiny')
    assert 'unknown flavour' in dict(result.warnings)['flavourId']
