"""cni: a pinned preset (calico, flannel) or the operator's manifest, and
Multus beside it; refused before any VM when a value is wrong, and
handed to the install script's init as pinned URLs and checksums."""

import pytest

from k8s_mgmt import cni_presets
from k8s_mgmt import params
from k8s_mgmt import shipped
from k8s_mgmt.engine import scripts
from k8s_mgmt.engine import uploads

import params_helpers as h

KEY = h.ROOT + '|cni'
PATH = h.ROOT + '.cni'
MIRROR = 'https://mirror.example:8443/github-raw/'


def with_cni(value, flavour='complex'):
    return h.changed(h.sample(flavour), 'additionalParams|' + KEY, value)


def _node(role):
    return type('Node', (), {'name': role + '-1', 'role': role,
                             'nic_ip': '10.0.0.21'})()


def _options(cluster, role='master'):
    """{option: [values]} of the install script's prepare call."""
    ends = scripts.Endpoints('10.0.0.100:16443', '10.0.0.100', 16443)
    argv = list(scripts.prepare_call(_node(role), cluster, ends).argv)
    found = {}
    for index, word in enumerate(argv):
        if word in ('-c', '-d', '-N', '-y', '-Y', '-T'):
            found.setdefault(word, []).append(argv[index + 1])
    return found


def test_a_preset_is_its_pinned_url_and_checksum_with_multus():
    cluster = params.load_request(with_cni({'preset': 'calico',
                                            'multus': True}))
    calico, multus = cni_presets.PRESETS['calico'], cni_presets.MULTUS
    assert _options(cluster) == {
        '-c': ['https://raw.githubusercontent.com/projectcalico/calico/'
               'v3.31.7/manifests/calico.yaml'], '-d': [calico.sha256],
        '-y': [multus.url()], '-Y': [multus.sha256], '-T': ['v4.3.0']}
    # Kept with the instance's parameters in a form validated again.
    again = params.load_cluster_params({h.ROOT: cluster.to_dict()})
    assert again.cni == cluster.cni


def test_flannel_gets_the_pod_network_edit_and_a_mirror_serves_all():
    cluster = params.load_request(with_cni({
        'preset': 'flannel', 'multus': True,
        'mirror': MIRROR.rstrip('/')}))
    found = _options(cluster)
    assert found['-c'] == [MIRROR + 'flannel-io/flannel/v0.28.9/'
                           'Documentation/kube-flannel.yml']
    assert found['-N'] == ['flannel-network']
    assert found['-y'][0].startswith(MIRROR + 'k8snetworkplumbingwg/')


def test_the_operators_manifest_by_url_or_from_the_package(package_copy):
    sha = 'ab' * 32
    by_url = params.load_request(with_cni({
        'manifest': 'https://files.example/cni/v1.yaml', 'sha256': sha}))
    assert _options(by_url) == {'-c': ['https://files.example/cni/v1.yaml'],
                                '-d': [sha]}
    # Each form is kept with the instance's parameters as it was given.
    again = params.load_cluster_params({h.ROOT: by_url.to_dict()})
    assert again.cni == by_url.cni
    package = h.package_with_file(package_copy, 'Files/kubernetes/cni.yaml',
                                  'kind: List\n')
    from_package = params.load_request(
        with_cni({'manifest': 'Files/kubernetes/cni.yaml'}),
        package_dir=package)
    assert _options(from_package)['-c'] == ['.k8s-mgmt/cni-manifest.yaml']
    again = params.load_cluster_params({h.ROOT: from_package.to_dict()})
    assert again.cni == from_package.cni
    assert uploads.CNI_MANIFEST in uploads.names_for(_node('master'),
                                                     from_package)
    assert uploads.CNI_MANIFEST not in uploads.names_for(_node('worker'),
                                                         from_package)
    manifest = uploads.ScriptSet(package, from_package).get(
        uploads.CNI_MANIFEST)
    assert manifest.from_package and manifest.data == b'kind: List\n'


def test_without_cni_the_conductors_manifest_applies_as_before():
    cluster = params.load_request(h.sample('complex'))
    assert cluster.cni is None
    assert '-N' not in _options(cluster) and '-y' not in _options(cluster)


@pytest.mark.parametrize('value, where, words', [
    ({'preset': 'cilium'}, '.preset', 'ships no manifest, only a Helm'),
    ({'preset': 'weave'}, '.preset', 'the presets are calico, flannel'),
    ({'preset': 'none'}, '.preset', 'cni_manifest = none'),
    ({'preset': 'calico', 'manifest': 'https://x.example/c.yaml'}, '',
     'give preset (calico, flannel) or manifest, one of them'),
    ({'multus': True}, '', 'one of them'),
    ({'manifest': 'https://x.example/c.yaml'}, '.sha256',
     'required with a manifest URL'),
    ({'preset': 'calico', 'sha256': 'ab' * 32}, '.sha256',
     'only for a manifest URL'),
    ({'manifest': 'https://x.example/c.yaml', 'sha256': 'AB' * 32},
     '.sha256', 'not a SHA-256'),
    ({'manifest': 'https://x.example/c.yaml $(id)', 'sha256': 'ab' * 32},
     '.manifest', 'no whitespace'),
    ({'manifest': '/etc/cni.yaml'}, '.manifest', 'absolute'),
    ({'manifest': 'ftp://x.example/c.yaml'}, '.manifest',
     'only http:// and https:// URLs'),
    ({'manifest': 'https://x.example/c.yaml', 'sha256': 'ab' * 32,
      'mirror': MIRROR}, '.mirror', 'neither is asked for'),
    ({'preset': 'calico', 'mirror': 'mirror.example/raw'}, '.mirror',
     'must start with http'),
    ({'preset': 'calico', 'multus': 'yes'}, '.multus',
     'expected true or false'),
    ('calico', '', 'expected an object'),
])
def test_a_bad_value_is_one_problem_naming_its_field(value, where, words):
    found = h.lines(with_cni(value))
    assert len(found) == 1, found
    assert found[0].startswith(PATH + where + ': ') and words in found[0], \
        found


@pytest.mark.parametrize('preset, pod_cidr, words', [
    ('flannel', '10.244.0.0/24', 'too small for the flannel preset'),
    ('calico', '10.244.0.0/25', 'give /24 or larger'),
])
def test_the_pod_network_must_suit_the_preset(preset, pod_cidr, words):
    body = with_cni({'preset': preset})
    body = h.changed(body, 'additionalParams|' + h.ROOT +
                     '|master_node|pod_cidr', pod_cidr)
    found = h.lines(body)
    assert found == [h.ROOT + '.master_node.pod_cidr: ' + found[0].split(
        ': ', 1)[1]] and words in found[0], found


def test_a_missing_package_manifest_and_an_old_script_are_refused(
        package_copy):
    missing = h.lines(with_cni({'manifest': 'Files/none.yaml'}),
                      package_dir=package_copy)
    assert len(missing) == 1 and missing[0].startswith(
        PATH + '.manifest: no such file in the VNF package'), missing
    old = h.package_with_file(package_copy, 'Files/kubernetes/cni.yaml',
                              'kind: List\n', without_feature='cni-edits')
    found = h.lines(with_cni({'preset': 'calico'}), package_dir=old)
    assert len(found) == 1 and '"cni-edits"' in found[0], found


def test_the_kubespray_mode_warns_it_ignores_cni():
    found = params.load_request(with_cni({'preset': 'flannel'},
                                         flavour='kubespray'))
    assert 'kube_network_plugin' in dict(found.warnings)[PATH]


def test_the_install_scripts_default_cni_is_the_calico_preset():
    """Without -c the script applies Calico, checked against the same pin
    as the preset."""
    text = shipped.script(shipped.INSTALL_SCRIPT).read_text()
    calico = cni_presets.PRESETS['calico']
    assert 'readonly DEFAULT_CNI_URL=%s\n' % calico.url() in text
    assert 'readonly DEFAULT_CNI_SHA256=%s\n' % calico.sha256 in text
