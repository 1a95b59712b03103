"""private_registry_installation_param: the registry VNF's request, in
the shape of Tacker's private-registry sample with ours beside it, each
bad value refused in one line naming the field, before any VM."""

import os

import pytest

from k8s_mgmt import exceptions
from k8s_mgmt import params
from k8s_mgmt import shipped
from k8s_mgmt.secrets import Secret

import params_helpers as h

ROOT = 'private_registry_installation_param'
PRIVATE_KEY = ('-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA'
               'KeyBody\n-----END OPENSSH PRIVATE KEY-----\n')


def sample():
    return shipped.sample_request('registry')


def with_root(value):
    body = sample()
    body['additionalParams'][ROOT] = value
    return body


def changed(key, value):
    body = sample()
    root = body['additionalParams'][ROOT]
    if value is None:
        root.pop(key)
    else:
        root[key] = value
    return body


def test_the_sample_is_accepted_with_its_defaults(built_package):
    found = params.load_request(sample(), package_dir=built_package)
    registry = found.registry
    assert found.is_registry and found.flavour == 'registry'
    assert (registry.ssh_cp_name, registry.listen_cp_name,
            registry.port_no) == ('registry_CP', 'registry_CP', 5000)
    assert registry.ssh_password.reveal() == 'ubuntu'
    assert registry.volume.mount_to == '/srv/registry'
    assert registry.tls.self_signed
    assert registry.tls.host_names == ('registry.k8s-mgmt.example',)
    # The SSH credentials of the VM, as the engine asks for a role's.
    group = found.group('registry')
    assert (group.username, group.nic_cp_name) == ('ubuntu', 'registry_CP')


def test_tackers_own_sample_body_is_accepted_with_a_warning():
    # Tacker's sample driver: its root and names, the port a string, and
    # image_path (a registry container image) that this driver ignores.
    body = with_root({
        'ssh_cp_name': 'registry_CP', 'ssh_username': 'ubuntu',
        'ssh_password': 'ubuntu', 'port_no': '5000',
        'image_path': 'Files/images/registry.tar',
        'proxy': {'http_proxy': 'http://proxy.example:3128',
                  'no_proxy': '10.0.0.0/8'},
        'cinder_volume_setup_params': [
            {'volume_resource_id': 'registry_volume'}]})
    found = params.load_request(body)
    assert found.registry.proxy.http_proxy.reveal() == (
        'http://proxy.example:3128')
    assert found.registry.volume.mount_to == '/srv/registry'
    assert found.registry.tls.host_names == ()
    assert [path for path, _ in found.warnings] == [ROOT + '.image_path']


def test_camel_case_and_a_private_key_are_taken():
    body = with_root({
        'sshCpName': 'registry_CP', 'sshUsername': 'ubuntu',
        'sshPrivateKey': PRIVATE_KEY, 'portNo': 5443,
        'cinderVolumeSetupParams': [{'volumeResourceId': 'registry_volume',
                                     'mountTo': '/data/registry'}]})
    registry = params.load_request(body).registry
    assert isinstance(registry.ssh_private_key, Secret)
    assert (registry.port_no, registry.volume.mount_to) == (
        5443, '/data/registry')


def test_the_operators_certificate(package_copy):
    built_package = package_copy
    os.makedirs(os.path.join(built_package, 'Files', 'registry'))
    for name in ('tls.crt', 'ca.crt'):
        with open(os.path.join(built_package, 'Files', 'registry', name),
                  'w') as handle:
            handle.write('x')
    body = changed('tls', {'certificate_path': 'Files/registry/tls.crt',
                           'ca_certificate_path': 'Files/registry/ca.crt',
                           'private_key': PRIVATE_KEY})
    tls = params.load_request(body, package_dir=built_package).registry.tls
    assert not tls.self_signed
    assert isinstance(tls.private_key, Secret)
    # The files must be in the package.
    body = changed('tls', {'certificate_path': 'Files/registry/none.crt',
                           'ca_certificate_path': 'Files/registry/ca.crt',
                           'private_key': PRIVATE_KEY})
    [(path, message)] = h.problems_of(params.load_request, body,
                                      package_dir=built_package)
    assert path == ROOT + '.tls.certificate_path'
    assert 'no such file in the VNF package' in message


@pytest.mark.parametrize('key, value, where, words', [
    ('port_no', '80', 'port_no', 'expected a port from 1024 to 65535'),
    ('port_no', 70000, 'port_no', 'expected a port from 1024 to 65535'),
    ('port_no', 'port1', 'port_no', 'expected a port from 1024 to 65535'),
    ('port_no', True, 'port_no', 'expected a port from 1024 to 65535'),
    ('ssh_cp_name', None, 'ssh_cp_name', 'required'),
    ('ssh_username', None, 'ssh_username', 'required'),
    ('ssh_password', None, 'ssh_password',
     'required (or ssh_private_key instead)'),
    ('cinder_volume_setup_params', None, 'cinder_volume_setup_params',
     'required: the registry keeps its images'),
    ('cinder_volume_setup_params', [
        {'volume_resource_id': 'a'}, {'volume_resource_id': 'b'}],
     'cinder_volume_setup_params', 'exactly one volume'),
    ('cinder_volume_setup_params', [], 'cinder_volume_setup_params',
     'exactly one volume'),
    ('cinder_volume_setup_params', [{'mount_to': '/srv/r'}],
     'cinder_volume_setup_params[0].volume_resource_id', 'required'),
    ('cinder_volume_setup_params', [
        {'volume_resource_id': 'registry_volume', 'mount_to': '/etc'}],
     'cinder_volume_setup_params[0].mount_to', ''),
    ('tls', {'host_names': ['a.example'], 'certificate_path': 'x'}, 'tls',
     'not both'),
    ('tls', {'certificate_path': 'Files/x.crt'}, 'tls',
     'go together (missing: ca_certificate_path, private_key)'),
    ('tls', {'host_names': ['bad name']}, 'tls.host_names[0]',
     'not a host name'),
    ('tls', {'host_names': ['10.0.0.9']}, 'tls.host_names[0]',
     'an address, not a host name'),
    ('tls', {'host_names': 'a.example'}, 'tls.host_names',
     'expected a list of host names'),
    ('tls', {'host_names': ['h%d.example' % i for i in range(17)]},
     'tls.host_names', 'at most 16 host names'),
    ('proxy', {'http_proxy': 'http://user1:password1@host1:port1'},
     'proxy.http_proxy', 'proxy URL port is not a number'),
])
def test_a_bad_value_is_one_problem_naming_the_field(key, value, where,
                                                     words):
    problems = h.problems_of(params.load_request, changed(key, value))
    assert len(problems) == 1, problems
    [(path, message)] = problems
    assert path == ROOT + '.' + where
    assert words in message
    assert 'password1' not in message


def test_both_roots_are_refused():
    body = sample()
    body['additionalParams'][h.ROOT] = {'script_path': 'x'}
    [(path, message)] = h.problems_of(params.load_request, body)
    assert path == ROOT and 'not both' in message


def test_the_flavour_and_the_root_must_agree():
    body = sample()
    body['flavourId'] = 'complex'
    [(path, message)] = h.problems_of(params.load_request, body)
    assert path == ROOT
    assert message.startswith('flavour complex builds a Kubernetes cluster')
    cluster = shipped.sample_request('simple')
    cluster['flavourId'] = 'registry'
    [(path, message)] = h.problems_of(params.load_request, cluster)
    assert path == ROOT and 'flavour registry builds a registry VM' in (
        message)


def test_the_registry_does_not_scale():
    additional = sample()['additionalParams']
    [(path, message)] = h.problems_of(params.load_cluster_params,
                                      additional, operation='scale',
                                      flavour='registry')
    assert path == ROOT and 'does not scale' in message


def test_a_cp_not_in_the_flavours_heat_template(built_package):
    body = changed('ssh_cp_name', 'registry_CP_typo')
    [(path, message)] = h.problems_of(params.load_request, body,
                                      package_dir=built_package)
    assert path == ROOT + '.ssh_cp_name'
    assert 'is not a resource of BaseHOT/registry' in message
    body = changed('cinder_volume_setup_params', [
        {'volume_resource_id': 'registry_CP'}])
    [(path, message)] = h.problems_of(params.load_request, body,
                                      package_dir=built_package)
    assert path.endswith('[0].volume_resource_id')
    assert 'not OS::Cinder::Volume' in message


def test_a_heal_may_change_credentials_and_proxy_only():
    stored = params.load_request(sample())
    merged = params.merge_overrides(stored, {ROOT: {
        'ssh_password': 'rotated', 'proxy': {
            'https_proxy': 'http://proxy.example:3128'}}}, 'heal')
    assert merged.registry.ssh_password.reveal() == 'rotated'
    assert merged.registry.proxy.https_proxy.reveal() == (
        'http://proxy.example:3128')
    assert merged.registry.tls == stored.registry.tls
    with pytest.raises(exceptions.ValidationError) as caught:
        params.merge_overrides(stored, {ROOT: {'port_no': 6000}}, 'heal')
    assert caught.value.problems == [
        (ROOT + '.port_no', 'cannot be changed after instantiate')]
    # The stored form (secrets kept as Secrets) is valid again as it is.
    again = params.merge_overrides(stored, {}, 'terminate')
    assert again.registry == stored.registry
