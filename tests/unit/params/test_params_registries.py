"""private_registry_connection_info: the private container registries
every node pulls from, in Tacker's sample driver's shape, refused before
any VM when a server, a type, a CA or a hosts line is wrong."""


import pytest

from k8s_mgmt import params
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import uploads

import params_helpers as h

KEY = h.ROOT + '|private_registry_connection_info'
PATH = h.ROOT + '.private_registry_connection_info'


def with_registries(value, flavour='complex'):
    return h.changed(h.sample(flavour), 'additionalParams|' + KEY, value)


def test_tackers_shape_is_taken_and_normalised():
    body = with_registries([
        {'connection_type': '0', 'server': '192.168.2.10:5000'},
        {'connection_type': 1, 'server': 'registry.example:5043',
         'hosts_string': '192.168.2.11   registry.example  reg'},
        {'connection_type': 'https', 'server': 'mirror.example'}])
    found = params.load_request(body).private_registry_connection_info
    assert [(r.url, r.hosts_string) for r in found] == [
        ('http://192.168.2.10:5000', None),
        ('https://registry.example:5043',
         '192.168.2.11 registry.example reg'),
        ('https://mirror.example', None)]
    # Kept with the instance's parameters in a form validated again.
    again = params.load_cluster_params(
        {h.ROOT: params.load_request(body).to_dict()})
    assert again.private_registry_connection_info == found


@pytest.mark.parametrize('entry, where, words', [
    ({'connection_type': 2, 'server': 'r:5000'}, '[0].connection_type',
     'expected 0 (http) or 1 (https)'),
    ({'connection_type': True, 'server': 'r:5000'}, '[0].connection_type',
     'expected 0 (http) or 1 (https)'),
    ({'server': 'r:5000'}, '[0].connection_type', 'required'),
    ({'connection_type': 1}, '[0].server', 'required'),
    ({'connection_type': 1, 'server': 'https://r:5000'}, '[0].server',
     'without a scheme'),
    ({'connection_type': 1, 'server': 'r:port1'}, '[0].server',
     'port is not a number'),
    ({'connection_type': 1, 'server': 'r;reboot'}, '[0].server',
     'host is not a host name'),
    ({'connection_type': 1, 'server': '[::1]:5000'}, '[0].server', 'IPv6'),
    ({'connection_type': 1, 'server': 'r', 'hosts_string': 'r'},
     '[0].hosts_string', 'needs an IPv4 address'),
    ({'connection_type': 1, 'server': 'r',
      'hosts_string': '10.0.0.1 r\n10.0.0.2 evil'},
     '[0].hosts_string', 'control character'),
    ({'connection_type': 1, 'server': 'r',
      'hosts_string': '10.0.0.1 r # mine'}, '[0].hosts_string',
     'must be one line, without a comment'),
    ({'connection_type': 1, 'server': 'r',
      'hosts_string': '10.0.0.1 r$(id)'}, '[0].hosts_string',
     'not a host name'),
    ({'connection_type': 0, 'server': 'r',
      'certificate_path': 'Files/kubernetes/ca.crt'},
     '[0].certificate_path', 'means nothing for an http registry'),
])
def test_a_bad_entry_is_one_problem_naming_its_field(entry, where, words):
    found = h.lines(with_registries([entry]))
    assert len(found) == 1, found
    assert found[0].startswith(PATH + where + ': ') and words in found[0], \
        found


def test_a_server_twice_and_a_missing_ca_are_refused(built_package):
    twice = with_registries([{'connection_type': 1, 'server': 'r:5000'},
                             {'connection_type': 0, 'server': 'r:5000'}])
    assert h.lines(twice) == [PATH + '[1].server: r:5000 is given twice']
    missing = with_registries([{'connection_type': 1, 'server': 'r:5000',
                                'certificate_path': 'Files/no-ca.crt'}])
    found = h.lines(missing, package_dir=built_package)
    assert len(found) == 1 and found[0].startswith(
        PATH + '[0].certificate_path: no such file in the VNF'), found


def test_not_a_list_is_refused():
    assert h.lines(with_registries({'server': 'r'})) == [
        PATH + ': expected a list, got an object']


def _package_with_ca(package_copy, features=True):
    return h.package_with_file(
        package_copy, 'Files/registry/ca.crt',
        '-----BEGIN CERTIFICATE-----\nMIIB\n',
        without_feature=None if features else 'registries')


REGISTRIES = [
    {'connection_type': 1, 'server': 'reg.example:5000',
     'certificate_path': 'Files/registry/ca.crt',
     'hosts_string': '10.0.0.8  reg.example'},
    {'connection_type': '0', 'server': '10.0.0.9:5000'}]


def test_every_node_gets_the_registries_their_ca_and_hosts_lines(
        package_copy):
    package = _package_with_ca(package_copy)
    cluster = params.load_request(with_registries(REGISTRIES),
                                  package_dir=package)
    ends = scripts.Endpoints('10.0.0.100:16443', '10.0.0.100', 16443)
    for role in ('master', 'worker'):
        node = type('Node', (), {'name': role + '-1', 'role': role,
                                 'nic_ip': '10.0.0.21'})()
        argv = list(scripts.prepare_call(node, cluster, ends).argv)
        options = [argv[i + 1] for i, a in enumerate(argv) if a == '-g']
        assert options == [
            'https://reg.example:5000,.k8s-mgmt/registry-ca-reg.example_'
            '5000.crt', 'http://10.0.0.9:5000']
        assert [argv[i + 1] for i, a in enumerate(argv) if a == '-G'] == [
            '10.0.0.8 reg.example']
        assert 'registry-ca-reg.example_5000.crt' in uploads.names_for(
            node, cluster)
    ca = uploads.ScriptSet(package, cluster).get(
        'registry-ca-reg.example_5000.crt')
    assert ca.from_package and ca.data.startswith(b'-----BEGIN CERT')


def test_a_package_script_older_than_the_option_is_refused(package_copy):
    package = _package_with_ca(package_copy, features=False)
    found = h.lines(with_registries(REGISTRIES), package_dir=package)
    assert len(found) == 1 and found[0].startswith(
        PATH + ': the VNF package\'s install script'), found
    assert '"registries"' in found[0]


def test_the_kubespray_mode_warns_it_ignores_registries_and_helm():
    body = with_registries(REGISTRIES[1:], flavour='kubespray')
    body['additionalParams'][h.ROOT]['helm'] = {
        'version': '3.16.2', 'url': 'https://get.helm.sh/h.tgz',
        'sha256': 'ab' * 32}
    found = params.load_request(body)
    warned = dict(found.warnings)
    assert 'ignored in the kubespray mode' in warned[PATH]
    assert 'helm_enabled' in warned[h.ROOT + '.helm']


LOGIN = {'connection_type': 1, 'server': 'reg.example:5000',
         'username': 'robot$lab+ci', 'password': 'S3cret-pw'}


def test_a_login_reaches_every_node_on_stdin_only():
    cluster = params.load_request(with_registries([
        {'connection_type': 0, 'server': '10.0.0.9:5000'}, LOGIN]))
    [_, entry] = cluster.private_registry_connection_info
    assert entry.username == 'robot$lab+ci'
    assert entry.password.reveal() == 'S3cret-pw'
    ends = scripts.Endpoints('10.0.0.100:16443', '10.0.0.100', 16443)
    node = type('Node', (), {'name': 'worker-1', 'role': 'worker',
                             'nic_ip': '10.0.0.21'})()
    join = type('Join', (), {'token': 'abcdef.0123456789abcdef',
                             'ca_cert_hash': 'sha256:' + 'ab' * 32,
                             'certificate_key': None})()
    for call in (scripts.prepare_call(node, cluster, ends),
                 scripts.join_call(node, cluster, ends, join)):
        # The second -g registry's login, as containerd keeps it.
        keys = dict(call.stdin_secrets)
        assert keys['registry_auth_2'].reveal() == (
            'cm9ib3QkbGFiK2NpOlMzY3JldC1wdw==')
        assert 'registry_auth_1' not in keys
        shown = repr(call.argv) + call.command().display()
        assert 'S3cret' not in shown and 'cm9ib3Q' not in shown


@pytest.mark.parametrize('change, where, words', [
    ({'password': None}, 'password', 'required with username'),
    ({'username': None}, 'username', 'required with password'),
    ({'connection_type': 0}, 'username', 'a login goes to an https '
     'registry only'),
    ({'username': 'robot:lab'}, 'username', 'not a registry user name'),
    ({'username': 'robot lab'}, 'username', 'not a registry user name'),
])
def test_a_bad_login_is_one_problem_naming_its_field(change, where, words):
    entry = {k: v for k, v in dict(LOGIN, **change).items()
             if v is not None}
    found = h.lines(with_registries([entry]))
    assert len(found) == 1, found
    assert found[0].startswith(PATH + '[0].' + where + ': '), found
    assert words in found[0] and 'S3cret' not in found[0]


def test_a_package_script_without_logins_is_refused_for_one(package_copy):
    package = h.package_with_file(package_copy, 'Files/x.txt', 'x',
                                  without_feature='registry-auth')
    params.load_request(with_registries(
        [{'connection_type': 1, 'server': 'r:5000'}]), package_dir=package)
    found = h.lines(with_registries([LOGIN]), package_dir=package)
    assert len(found) == 1 and '"registry-auth"' in found[0], found
