"""The install scripts and the validator agree on every value of a table.

For each value the validator gives its verdict on a whole request with the
value in its field. A value it accepts is turned into the call the driver
would make (``scripts.init_call`` from the validated parameters, so the
normalised value) and the script must pass its argument and secrets checks.
A value it refuses is given raw to the script, where the driver would put
it, and the script must refuse it too (exit 2). The scripts run for real in
render mode (``-o``), which stops after writing files and needs no root.
Control characters are left out: the stdin writer refuses them
(``ScriptCall.stdin``) before any script could see them.
"""

import copy
import pathlib
import tempfile
import types

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt.engine import scripts
from k8s_mgmt import shipped
from k8s_mgmt.params import fields
from tests.functional.scripts.script_helpers import (
    CONFIGURE_LB, INSTALL, run_script)

NODE = types.SimpleNamespace(name='master-1', nic_ip='10.254.0.11')
ENDS = scripts.Endpoints('10.254.0.11:6443', '10.254.0.11', 6443)
ROOT = 'k8s_cluster_installation_param'
# A UTF-8 locale: where a bracket range could match a non-ASCII digit.
UTF8 = {'LC_ALL': 'C.UTF-8'}

BASE = {ROOT: {
    'script_path': 'Scripts/install_k8s_cluster.sh',
    'master_node': {
        'ssh_cp_name': 'masterNode_CP1', 'nic_cp_name': 'masterNode_CP1',
        'username': 'ubuntu', 'password': 'pw', 'cluster_cp_name': 'vip_CP',
        'pod_cidr': '192.168.0.0/16', 'cluster_cidr': '172.31.0.0/16'},
    'worker_node': {
        'ssh_cp_name': 'workerNode_CP2', 'nic_cp_name': 'workerNode_CP2',
        'username': 'ubuntu', 'password': 'pw'},
    'proxy': {},
    'kubernetes_apt_repository': {'url': 'https://pkgs.k8s.io/core:/stable:/'},
    'private_registry_connection_info': [
        {'connection_type': 1, 'server': 'reg.example:5000',
         'hosts_string': '10.0.0.8 reg.example'}],
}}

# Where a value goes in the request, and where the driver puts it for the
# install script: an option, or a KEY=VALUE line on stdin.
FIELDS = {
    'kubernetes_version': (('kubernetes_version',), '-k'),
    'pod_cidr': (('master_node', 'pod_cidr'), '-P'),
    'no_proxy': (('proxy', 'no_proxy'), '-x'),
    'http_proxy': (('proxy', 'http_proxy'), 'http_proxy'),
    'repository_url': (('kubernetes_apt_repository', 'url'), '-r'),
    'registry_server': (('private_registry_connection_info', 0, 'server'),
                        '-g'),
    'hosts_string': (('private_registry_connection_info', 0,
                      'hosts_string'), '-G'),
}
# What the driver puts before a value in its option.
SLOT_PREFIX = {'registry_server': 'https://'}

VERSIONS = [
    '1.35', '1.30', '1.37', 'v1.35', '1.35.2', '1.35.0', ' 1.36 ',
    '1.29', '1.38', '1.0', '1.999', '1.035', '1.3', '2.35', '1.35.',
    '1.35.02', '1.35.1000', '1.3٥', '1.٣٥', '١.٣٥', '1.３５', '1.35.٢', 'latest',
    '1.35-rc.1', 'v 1.35', 'V1.35',
] + ['1.%d' % minor for minor in range(25, 42)]

CIDRS = [
    '10.0.0.0/8', '10.0.0.0/24', '10.1.0.0/16', '192.168.3.0/16',
    '10.0.0.0/255.0.0.0', '10.0.0.0/08', '10.0.0.0/32', ' 10.2.0.0/16',
    'fd00::/64', '::/0', '10.0.0.0', '10.0.0.0/33', '300.0.0.0/8',
    '010.0.0.0/8', '١٠.0.0.0/8', '10.0.0.0/٨', '10.0.0/8', '10.0.0.0/-1',
    '10.0.0.0/+8', 'xx.xx.xx.xx/24', '10.0.0.0/24,10.1.0.0/24',
]

NO_PROXY = [
    '10.0.0.1,.example.com', 'localhost, 10.0.0.0/8', '*', 'fd00::1',
    'host_1.example:8080', '[::1]', 'a b', 'a;b', "a'b", 'é.example',
    '$(id)', 'a|b',
]

PROXIES = [
    'http://proxy.example:3128', 'https://proxy.example:3129',
    'http://10.0.0.1:3128', 'http://proxy.example', 'http://h:3128/',
    'http://user:pa%40ss@proxy.example:3128',
    "http://u:p!$&()*+,;=~@h:1", 'http://h:65535', 'http://h:03128',
    'http://user1:password1@host1:port1', 'http://h:port1', 'http://h:0',
    'http://h:65536', 'http://h:99999', 'http://h:٣١٢٨', 'http://h:',
    'http://h:+80', 'http://h:3128%0a', 'http://[::1]:3128',
    'http://[fd00::1]', 'HTTP://h:3128', 'ftp://h:21', 'http://', 'http:/h',
    'http://h:3128/path', 'http://h:3128?x', 'http://h:3128#f',
    'http://u:p@ss@h:3128', 'http://u:p%zz@h:3128', 'http://u:p/x@h:3128',
    'http://h_1:3128', 'http://-h:3128', 'http://h..x:3128',
    'http://999.1.1.1:3128', 'http://10.0.0:3128', 'http://010.0.0.1:1',
    'http://héllo:3128', 'http://ｈ:3128', 'http://u:p w@h',
    "http://h'x:3128", 'http://p\\q:3128', 'http://h:\t3128', 'http://h:1:2',
    'http://' + 'a' * 64 + '.example:3128',
]

REPOSITORY_URLS = [
    'https://pkgs.k8s.io/core:/stable:/',
    'http://10.254.3.1:8088/core:/stable:', 'http://mirror.example/k8s/',
    'http://mirror.example', 'https://m:443/a/b/',
    'http://m/a%20b/', 'http://m/~user/k8s/', 'http://m:65535/', 'http://m:0/',
    'http://m:65536/', 'http://m:/', 'ftp://m/k8s/', 'mirror/k8s/', 'http://',
    'http:///k8s/', 'http://m/k8s dir/', 'http://m/$(id)/', "http://m/k'8s/",
    'http://m/k8s"/', 'http://m/a;b/', 'http://m/a|b/', 'http://m/a`b`/',
    'http://m/a?x=1', 'http://m/a#f', 'http://[::1]/', 'http://mirrör/',
    'http://m/ä/', 'http://m/\\x/', 'HTTP://m/', 'http://m/a\tb/',
    'http://user@m/', 'http://m/a]b/',
]

REGISTRY_SERVERS = [
    'reg.example:5000', 'reg.example', '10.0.0.9:5000', 'r:65535', 'r:1',
    'r:0', 'r:65536', 'r:port1', 'r:', 'https://r:5000', 'r:5000/v2',
    '[::1]:5000', 'r;id', 'r$(id)', 'r 5000', 'rég:5000', '-r:5000',
    'r_1:5000', 'r..x', '999.1.1.1:5000', "r'x",
    # (Not 'r:5000,ca.crt': the comma is the driver's own separator of
    # -g, which the validator keeps out of a server.)
]

HOSTS_STRINGS = [
    '10.0.0.8 reg.example', '10.0.0.8 reg.example reg', '10.0.0.8   reg',
    '10.0.0.8', 'reg.example', '10.0.0.256 reg', '10.0.0.8 reg$(id)',
    '10.0.0.8 reg;id', '10.0.0.8 reg # c', '::1 reg', '10.0.0.8 rég',
    '10.0.0.8 -reg', '010.0.0.8 reg',
]

ADDRESSES = [
    '10.0.0.11', '0.0.0.0', '255.255.255.255', '10.0.0.11 ',
    '10.0.0.256', '010.0.0.1', '10.0.0', '1.2.3.4.5', '::1', 'fd00::1',
    '١٠.0.0.1', '10.0.0.１', 'xx.xx.xx.xx', '10.0.0.1/24', '+1.2.3.4',
]


def validated(field, value):
    """The validator's ClusterParams, or None when it refuses."""
    request = copy.deepcopy(BASE)
    keys, _ = FIELDS[field]
    target = request[ROOT]
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    try:
        return params.load_cluster_params(request, flavour='simple')
    except exceptions.ValidationError as error:
        assert error.problems and all(
            path.startswith(ROOT + '.') for path, _ in error.problems)
        return None


def run_install(argv, stdin, tmp_path):
    out = pathlib.Path(tempfile.mkdtemp(dir=tmp_path)) / 'out'
    result = run_script(INSTALL, argv[:1] + ['-o', str(out)] + argv[1:],
                        stdin=stdin, env=UTF8)
    if result.returncode == 0:
        return True
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not out.exists()
    return False


def script_accepts_driver_call(cluster, tmp_path):
    call = scripts.init_call(NODE, cluster, ENDS, apt_repo=True)
    stdin = call.stdin()
    argv = list(call.argv) + (['-s', '-'] if stdin is not None else [])
    return run_install(argv, stdin.reveal() if stdin else '', tmp_path)


def script_accepts_raw(field, value, tmp_path):
    argv = ['init', '-a', NODE.nic_ip, '-H', NODE.name]
    _, slot = FIELDS[field]
    if slot.startswith('-'):
        value = SLOT_PREFIX.get(field, '') + value
        return run_install(argv + [slot, value], '', tmp_path)
    return run_install(argv + ['-s', '-'], '%s=%s\n' % (slot, value),
                       tmp_path)


def check_agreement(field, value, tmp_path):
    cluster = validated(field, value)
    if cluster is not None:
        assert script_accepts_driver_call(cluster, tmp_path), (
            'validator accepts %r, the script refuses it' % value)
    else:
        assert not script_accepts_raw(field, value, tmp_path), (
            'validator refuses %r, the script accepts it' % value)
    return cluster is not None


@pytest.mark.parametrize('value', VERSIONS)
def test_kubernetes_version(value, tmp_path):
    check_agreement('kubernetes_version', value, tmp_path)


def test_supported_minors_are_the_scripts_list(tmp_path):
    accepted_minors = [minor for minor in range(20, 50) if check_agreement(
        'kubernetes_version', '1.%d' % minor, tmp_path)]
    assert tuple(accepted_minors) == shipped.SUPPORTED_MINORS
    assert 35 in accepted_minors      # the default


@pytest.mark.parametrize('value', CIDRS)
def test_cidr(value, tmp_path):
    check_agreement('pod_cidr', value, tmp_path)


@pytest.mark.parametrize('value', NO_PROXY)
def test_no_proxy(value, tmp_path):
    check_agreement('no_proxy', value, tmp_path)


@pytest.mark.parametrize('value', PROXIES)
def test_proxy_url(value, tmp_path):
    check_agreement('http_proxy', value, tmp_path)


@pytest.mark.parametrize('value', REPOSITORY_URLS)
def test_repository_url(value, tmp_path):
    check_agreement('repository_url', value, tmp_path)


@pytest.mark.parametrize('value', REGISTRY_SERVERS)
def test_registry_server(value, tmp_path):
    check_agreement('registry_server', value, tmp_path)


@pytest.mark.parametrize('value', HOSTS_STRINGS)
def test_hosts_string(value, tmp_path):
    check_agreement('hosts_string', value, tmp_path)


def test_tables_hold_both_verdicts(tmp_path):
    # A table whose values all pass (or all fail) could not show a
    # disagreement in one direction.
    for field, table in (('kubernetes_version', VERSIONS),
                         ('pod_cidr', CIDRS), ('no_proxy', NO_PROXY),
                         ('http_proxy', PROXIES),
                         ('repository_url', REPOSITORY_URLS),
                         ('registry_server', REGISTRY_SERVERS),
                         ('hosts_string', HOSTS_STRINGS)):
        verdicts = {validated(field, value) is not None for value in table}
        assert verdicts == {True, False}, field


def _address_ok(value):
    report = fields.Report()
    return fields.ip_address(report, 'address', value)


def _lb_accepts_local_ip(address, tmp_path):
    result = run_script(CONFIGURE_LB, [
        '-v', '10.0.0.100/24', '-b', 'm1=10.0.0.11,m2=10.0.0.12',
        '-i', 'eth0', '-l', address, '-s', '-',
        '-o', tempfile.mkdtemp(dir=tmp_path)],
        stdin='auth_pass=Vr7p_x\n', env=UTF8)
    assert result.returncode in (0, 2), result.stderr
    return result.returncode == 0


@pytest.mark.parametrize('value', ADDRESSES)
def test_address_rule_is_both_scripts_rule(value, tmp_path):
    # Node addresses come from Heat, not from the request; the validator's
    # address rule (ansible.ip_address, export_to) is still the scripts'.
    address = _address_ok(value)
    given = address if address is not None else value
    install = run_install(['init', '-a', given, '-H', NODE.name], '',
                          tmp_path)
    assert install == (address is not None), value
    assert _lb_accepts_local_ip(given, tmp_path) == (address is not None)


@pytest.mark.parametrize('cni', [
    {'preset': 'calico'},
    {'preset': 'flannel', 'multus': True,
     'mirror': 'http://10.254.0.1:8088/github-raw'},
    {'manifest': 'https://files.example/cni/v1.yaml', 'sha256': 'ab' * 32,
     'multus': True},
    {'manifest': 'Files/kubernetes/cni.yaml'},
])
def test_every_cni_choice_is_an_init_the_script_takes(cni, tmp_path):
    """The driver's -c/-d/-N/-y/-Y/-T for each form of ``cni`` (a package
    file as the driver uploads it, relative to where the script runs)."""
    request = copy.deepcopy(BASE)
    request[ROOT]['cni'] = cni
    cluster = params.load_cluster_params(request, flavour='simple')
    assert script_accepts_driver_call(cluster, tmp_path), cni
