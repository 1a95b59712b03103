"""The rules of k8s_mgmt/accepted.py as the validator applies them: each good
value passes, each bad class is one problem naming the field and the rule
(and, for proxy URLs, never the URL)."""

from oslo_config import cfg
import pytest

from k8s_mgmt import conf
from k8s_mgmt import driver
from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt import shipped

import params_helpers as h

R = h.ROOT
M = R + '.master_node'
P = R + '.proxy'
S = R + '.storage_server'
A = R + '.ansible'


def load(additional):
    return params.load_cluster_params(additional, flavour='simple')


def only_problem(additional):
    problems = h.problems_of(load, additional)
    assert len(problems) == 1, problems
    return problems[0]


# -- Kubernetes versions ---------------------------------------------------

@pytest.mark.parametrize('value, normalised', [
    ('1.35', '1.35'), ('v1.35', '1.35'), ('1.35.2', '1.35.2'),
    ('1.30.0', '1.30.0'), (' 1.37 ', '1.37'),
])
def test_supported_versions_pass(value, normalised):
    result = load(h.with_change(R + '.kubernetes_version', value))
    assert result.kubernetes_version == normalised


@pytest.mark.parametrize('value, message', [
    ('1.0', 'Kubernetes 1.0 is not supported by the install script '
            '(supported: 1.30 to 1.37)'),
    ('1.999', 'Kubernetes 1.999 is not supported'),
    ('1.29', 'Kubernetes 1.29 is not supported'),
    ('1.38', 'Kubernetes 1.38 is not supported'),
    ('1.035', 'not a Kubernetes version'),
    ('1.35.02', 'not a Kubernetes version'),
    ('1.٣٥', 'in ASCII digits'),               # Arabic-Indic digits
    ('١.٣٥', 'in ASCII digits'),
    ('1.３５', 'in ASCII digits'),              # fullwidth digits
    ('1.35.٢', 'in ASCII digits'),
    ('1.3٥', 'in ASCII digits'),
    ('1.35.', 'not a Kubernetes version'),
    ('V1.35', 'not a Kubernetes version'),
])
def test_unsupported_versions_are_one_problem(value, message):
    where, text = only_problem(h.with_change(R + '.kubernetes_version',
                                             value))
    assert where == R + '.kubernetes_version'
    assert message in text and repr(value) in text


def test_supported_minors_come_from_the_install_script():
    assert shipped.SUPPORTED_MINORS == tuple(range(30, 38))
    assert shipped.minors_of_script(
        'x\nreadonly SUPPORTED_MINORS="34 33"\n') == (33, 34)
    assert shipped.supported_range() == '1.30 to 1.37'
    assert shipped.supported_range((30, 32)) == '1.30, 1.32'
    for text in ('SUPPORTED_MINORS="33"', 'readonly SUPPORTED_MINORS=""'):
        with pytest.raises(RuntimeError, match='SUPPORTED_MINORS'):
            shipped.minors_of_script(text)


@pytest.mark.parametrize('value, good', [
    ('1.35', True), ('1.30.4', True), ('1.37', True), ('1.29', False),
    ('1.999', False), ('1.٣٥', False), ('v1.35', False), ('1.35\n', False),
    ('1.035', False),
])
def test_the_kubernetes_version_option_uses_the_same_rule(value, good):
    local = cfg.ConfigOpts()
    conf.register_opts(local)
    if good:
        local.set_override('kubernetes_version', value, group='k8s_mgmt')
        assert local.k8s_mgmt.kubernetes_version == value
    else:
        with pytest.raises(ValueError):
            local.set_override('kubernetes_version', value,
                               group='k8s_mgmt')


# -- addresses: IPv4 only ---------------------------------------------------

@pytest.mark.parametrize('path, value, message', [
    (M + '.pod_cidr', 'fd00::/64', 'IPv6 is not supported by the install '
                                   'scripts'),
    (M + '.cluster_cidr', '::/0', 'IPv6 is not supported'),
    (P + '.k8s_node_cidr', 'fd00:1::/64', 'IPv6 is not supported'),
    (M + '.pod_cidr', '١٠.0.0.0/8', 'not a CIDR (ASCII digits only)'),
    (M + '.pod_cidr', '10.0.0.0/٨', 'not a CIDR (ASCII digits only)'),
    (M + '.pod_cidr', '010.0.0.0/8', 'not a CIDR'),
    (M + '.pod_cidr', 'xx.xx.xx.xx/16', 'not a CIDR'),
])
def test_networks_are_ipv4_in_ascii(path, value, message):
    where, text = only_problem(h.with_change(path, value))
    assert where == path and text.startswith(message)


def test_storage_export_to_is_ipv4():
    additional = h.base_params()
    additional[R]['storage_server'] = h.storage_section()
    exports = additional[R]['storage_server']['nfs_server_setup_params']
    exports[0]['export_to'] = 'fd00::/64'
    where, text = only_problem(additional)
    assert where == S + '.nfs_server_setup_params[0].export_to'
    assert 'IPv6 is not supported' in text
    exports[0]['export_to'] = 'xx.xx.xx.xx'
    assert only_problem(additional)[1] == (
        "not an IP address or network: 'xx.xx.xx.xx'")
    for bad in ('10.254.0.0/33', '١٠.254.0.7'):
        exports[0]['export_to'] = bad
        assert only_problem(additional)[1] == (
            'not an IP address or network: %r' % bad)
    exports[0]['export_to'] = '10.254.0.7'
    assert load(additional).storage_server.nfs_server_setup_params[
        0].export_to == '10.254.0.7'


# -- proxy URLs --------------------------------------------------------------

@pytest.mark.parametrize('value', [
    'http://proxy.example:3128', 'https://10.0.0.1:3129/',
    'http://proxy.example', 'http://us%3Aer:p%40ss@proxy.example:8080',
    "http://u:p!$&()*+,;=~-@h:1", 'http://h:65535',
])
def test_good_proxy_urls_pass(value):
    result = load(h.with_change(P + '.http_proxy', value))
    assert result.proxy.http_proxy.reveal() == value


@pytest.mark.parametrize('value, message', [
    ('http://user1:S3cretPw@host1:port1', 'proxy URL port is not a number '
                                          'from 1 to 65535 (a placeholder'),
    ('http://u:S3cretPw@h:0', 'port is not a number from 1 to 65535'),
    ('http://u:S3cretPw@h:65536', 'port is not a number from 1 to 65535'),
    ('http://u:S3cretPw@h:٣١٢٨', 'port is not a number'),
    ('http://u:S3cretPw@h:', 'port is not a number'),
    ('http://u:S3cretPw@[::1]:3128', 'host is an IPv6 address: IPv6 is not '
                                     'supported by the install scripts'),
    ('HTTP://u:S3cretPw@h:3128', 'must start with http:// or https://'),
    ('socks5://u:S3cretPw@h:1080', 'must start with http:// or https://'),
    ('http://u:S3cretPw@h:3128/path', 'may have no path but "/"'),
    ('http://u:S3cretPw@h:3128?q', 'no query'),
    ('http://u:S3cret@Pw@h:3128', 'must be percent-encoded'),
    ('http://u:S3cretPw%zz@h:3128', 'must be percent-encoded'),
    ('http://u:S3cretPw@', 'has no host'),
    ('http://u:S3cretPw@h_st:3128', 'host is not a host name'),
    ('http://u:S3cretPw@hôst:3128', 'host is not a host name'),
    ('http://u:S3cretPw@300.1.1.1:3128', 'host is no IPv4 address'),
    ('http://u:S3cretPw@h:3128 ', 'holds whitespace'),
])
def test_bad_proxy_urls_name_the_rule_not_the_url(value, message):
    for field in ('http_proxy', 'https_proxy'):
        where, text = only_problem(h.with_change(P + '.' + field, value))
        assert where == P + '.' + field
        assert text.startswith('proxy URL ') and message in text
        assert 'S3cret' not in text and 'Pw' not in text


# -- paths on a VM ------------------------------------------------------

STORAGE_PATHS = ('cinder_volume_setup_params.0.mount_to',
                 'nfs_server_setup_params.0.export_dir')
BAD_PATHS = [
    ('/volume/$(reboot)', 'holds a character outside A-Z a-z 0-9 / . _ - +'),
    ('/volume/`id`', 'holds a character outside'),
    ('/volume;rm -rf /', 'holds a character outside'),
    ('/vol ume', 'holds a character outside'),
    ('/volume/é', 'holds a character outside'),
    ("/volume/'x'", 'holds a character outside'),
    ('volume/nfs', 'not an absolute path'),
    ('./volume', 'not an absolute path'),
    ('/volume/../etc', 'contains ".."'),
    ('/', 'is the root directory'),
    ('/' + 'a' * 4100, 'longer than 4095 characters'),
]


def _storage(field, value):
    additional = h.base_params()
    section = h.storage_section()
    list_name, index, key = field.split('.')
    section[list_name][int(index)][key] = value
    additional[R]['storage_server'] = section
    return additional


@pytest.mark.parametrize('field', STORAGE_PATHS)
@pytest.mark.parametrize('value, message', BAD_PATHS)
def test_bad_storage_paths(field, value, message):
    where, text = only_problem(_storage(field, value))
    list_name, index, key = field.split('.')
    assert where == '%s.%s[%s].%s' % (S, list_name, index, key)
    assert text.startswith(message)


def test_good_storage_paths_are_normalised():
    additional = _storage('cinder_volume_setup_params.0.mount_to',
                          '/srv/k8s-volume_1.d/')
    additional[R]['storage_server']['nfs_server_setup_params'][0][
        'export_dir'] = '/srv/k8s-volume_1.d/./nfs+pv1'
    storage = load(additional).storage_server
    assert storage.cinder_volume_setup_params[0].mount_to == (
        '/srv/k8s-volume_1.d')
    assert storage.nfs_server_setup_params[0].export_dir == (
        '/srv/k8s-volume_1.d/nfs+pv1')


def _kubespray(**changes):
    additional = h.base_params()
    additional[R]['ansible'] = dict({
        'ip_address': '10.254.0.50', 'username': 'ansible',
        'password': h.PASSWORD, 'kubespray_root_path': '/opt/kubespray',
        'transferring_inventory_path': '/opt/kubespray/inventory/k8s'},
        **changes)
    additional[R]['external_lb_param'] = {
        'ssh_cp_name': 'externalLB_CP1', 'ssh_username': 'ubuntu',
        'ssh_password': h.PASSWORD, 'script_path': 'Scripts/lb.sh'}
    return additional


@pytest.mark.parametrize('field', ['kubespray_root_path',
                                   'transferring_inventory_path'])
@pytest.mark.parametrize('value, message', BAD_PATHS)
def test_bad_kubespray_paths(field, value, message):
    where, text = only_problem(_kubespray(**{field: value}))
    assert where == A + '.' + field and text.startswith(message)


def test_kubespray_placeholders_stay_warnings():
    # The kubespray mode is not built: nothing acts on these values, and
    # AnsibleParams.placeholders tells a future operation to refuse.
    result = load(_kubespray(ip_address='0.0.0.0', kubespray_root_path='',
                             transferring_inventory_path=''))
    assert result.ansible.placeholders == (
        A + '.ip_address', A + '.kubespray_root_path',
        A + '.transferring_inventory_path')
    assert load(_kubespray()).ansible.placeholders == ()
    where, text = only_problem(_kubespray(ip_address='fd00::50'))
    assert where == A + '.ip_address' and 'IPv6 is not supported' in text


# -- no_proxy: what the script's -x list takes ------------------------

@pytest.mark.parametrize('value, good', [
    ('10.0.0.1,.example.com, localhost', True), ('*', True),
    ('[::1]', False), ('a;b', False), ('é.example', False), ('$(id)', False),
])
def test_no_proxy_entries(value, good):
    additional = h.with_change(P + '.no_proxy', value)
    if good:
        assert ' ' not in load(additional).proxy.no_proxy
    else:
        where, text = only_problem(additional)
        assert where == P + '.no_proxy' and 'not a host, domain' in text


# -- where the driver runs it -------------------------------------------

@pytest.mark.parametrize('field, value, message', [
    ('proxy|http_proxy', 'http://user1:S3cretPw@host1:port1',
     'proxy URL port is not a number'),
    ('kubernetes_version', '1.999', 'Kubernetes 1.999 is not supported'),
    ('master_node|pod_cidr', 'fd00::/64', 'IPv6 is not supported'),
])
def test_instantiate_start_refuses_before_any_vm(field, value, message,
                                                 built_package):
    # instantiate_start runs before Heat creates a VM; Tacker's request
    # object is a dict here (context.field reads both).
    body = h.sample('simple')
    additional = h.changed(body['additionalParams'], R + '|' + field, value)
    request = {'flavour_id': 'simple', 'additional_params': additional}
    with pytest.raises(exceptions.ValidationError) as info:
        driver.KubernetesMgmtDriver().instantiate_start(
            None, {'id': 'vnf-1'}, request, None, None,
            vnf_package_path=built_package)
    [(where, text)] = info.value.problems
    assert where == R + '.' + field.replace('|', '.')
    assert message in text and 'S3cret' not in str(info.value)
