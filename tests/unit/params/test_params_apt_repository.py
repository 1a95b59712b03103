"""kubernetes_apt_repository: where the nodes install kubeadm, kubelet and
kubectl from (an apt repository laid out as pkgs.k8s.io), refused before
any VM when its URL, key or the package's install script cannot serve."""


import pytest

from k8s_mgmt import params
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import uploads

import params_helpers as h

REPO = h.ROOT + '|kubernetes_apt_repository'
PATH = h.ROOT + '.kubernetes_apt_repository'
MIRROR = 'http://mirror.example:8080/kubernetes/core:/stable:/'


def with_repository(value, flavour='complex'):
    return h.changed(h.sample(flavour), 'additionalParams|' + REPO, value)


def test_a_mirror_with_its_key_url_is_taken_and_normalised():
    body = with_repository({'url': MIRROR.rstrip('/'),
                            'key_url': MIRROR + 'v1.35/deb/Release.key'})
    repository = params.load_request(body).kubernetes_apt_repository
    assert repository.url == MIRROR
    assert repository.key_url == MIRROR + 'v1.35/deb/Release.key'
    assert repository.key_path is None
    # Kept with the instance's parameters, as given.
    assert params.load_request(body).to_dict()[
        'kubernetes_apt_repository']['url'] == MIRROR


@pytest.mark.parametrize('url, reason', [
    ('ftp://mirror/k8s/', 'must start with http:// or https://'),
    ('mirror.example/k8s/', 'must start with http:// or https://'),
    ('http://mirror/k8s dir/', 'no whitespace'),
    ('http://mirror/$(id)/', 'no whitespace, quotes, brackets, $'),
    ("http://mirror/k8s'/", 'no whitespace, quotes'),
    ('http://mirror:99999/k8s/', 'port is not a number from 1 to 65535'),
    ('http://mirrör/k8s/', 'non-ASCII'),
])
def test_a_bad_url_is_refused_naming_the_field(url, reason):
    lines = h.lines(with_repository({'url': url}))
    assert len(lines) == 1
    assert lines[0].startswith(PATH + '.url: ') and reason in lines[0]


def test_url_is_required_and_one_key_at_most(built_package):
    assert h.lines(with_repository({'key_url': MIRROR + 'k'})) == [
        PATH + '.url: required']
    both = with_repository({'url': MIRROR, 'key_url': MIRROR + 'k',
                            'key_path': 'Files/kubernetes/Release.key'})
    assert [line.split(':')[0] for line in h.lines(both)] == [
        PATH + '.key_path']
    lines = h.lines(with_repository({'url': MIRROR, 'key_path':
                                     'Files/none.key'}),
                    package_dir=built_package)
    assert len(lines) == 1 and lines[0].startswith(PATH + '.key_path: no '
                                                   'such file in the VNF')


def _package_with_key(package_copy, features=True):
    return h.package_with_file(
        package_copy, 'Files/kubernetes/Release.key',
        '-----BEGIN PGP PUBLIC KEY BLOCK-----\n',
        without_feature=None if features else 'apt-repo')


def test_a_package_script_older_than_the_option_is_refused(package_copy):
    body = with_repository({'url': MIRROR,
                            'key_path': 'Files/kubernetes/Release.key'})
    package = _package_with_key(package_copy, features=False)
    lines = h.lines(body, package_dir=package)
    assert len(lines) == 1 and lines[0].startswith(PATH + ': the VNF '
                                                   'package\'s install script')
    assert 'build the package again' in lines[0]


def test_the_calls_carry_the_repository_the_version_and_the_key_file(
        package_copy):
    body = with_repository({'url': MIRROR,
                            'key_path': 'Files/kubernetes/Release.key'})
    body['additionalParams'][h.ROOT]['kubernetes_version'] = '1.34.1'
    package = _package_with_key(package_copy)
    cluster = params.load_request(body, package_dir=package)
    node = type('Node', (), {'name': 'worker-1', 'role': 'worker',
                             'nic_ip': '10.0.0.21'})()
    ends = scripts.Endpoints('10.0.0.100:16443', '10.0.0.100', 16443)
    call = scripts.prepare_call(node, cluster, ends, apt_repo=True)
    argv = list(call.argv)
    assert argv[argv.index('-k') + 1] == '1.34'
    assert argv[argv.index('-V') + 1] == '1.34.1'
    assert argv[argv.index('-r') + 1] == MIRROR
    assert argv[argv.index('-K') + 1] == '.k8s-mgmt/' + uploads.REPO_KEY
    # The key file goes to every node next to the script.
    assert uploads.REPO_KEY in uploads.names_for(node, cluster)
    key = uploads.ScriptSet(package, cluster).get(uploads.REPO_KEY)
    assert key.from_package and key.data.startswith(b'-----BEGIN PGP')
    # A copy of the script without the feature gets none of them.
    old = scripts.prepare_call(node, cluster, ends, apt_repo=False)
    assert not {'-V', '-r', '-K'} & set(old.argv)


def test_the_kubespray_mode_warns_it_ignores_the_repository():
    body = with_repository({'url': MIRROR}, flavour='kubespray')
    result = params.load_request(body)
    assert [path for path, _ in result.warnings] == [PATH]
