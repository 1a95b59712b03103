"""The add-on variants of the sample requests (``k8s-mgmt package request
FLAVOUR --addons``): the base sample with a small overlay of additions,
valid for the driver as printed and with the files they name in the
package."""

import json
import os
import subprocess
import sys

import pytest

from k8s_mgmt import params
from k8s_mgmt import shipped
from k8s_mgmt.cli import package as package_cli
from k8s_mgmt.exceptions import ValidationError
from tests.helpers.package_fixtures import built_package  # noqa: F401
from tests.helpers.package_fixtures import package_copy  # noqa: F401

ROOT = 'k8s_cluster_installation_param'
HELM_ARCHIVE = 'Files/helm/helm-v3.16.2-linux-amd64.tar.gz'
REGISTRY_CA = 'Files/registry/ca.crt'


def cli(*args, cwd):
    return subprocess.run([sys.executable, '-m', 'k8s_mgmt', 'package',
                           'request'] + list(args), capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def package_files_named(body):
    """The VNF package files the add-ons of ``body`` name (the Helm
    archive, registry CAs, a CNI manifest of the package), sorted."""
    root = body['additionalParams'][ROOT]
    found = {root.get('helm', {}).get('archive_path'),
             root.get('helm_installation_script_path'),
             root.get('cni', {}).get('manifest')}
    found.update(entry.get('certificate_path') for entry in
                 root.get('private_registry_connection_info', ()))
    return sorted(name for name in found if name and '://' not in name)


def leaves(value, path=()):
    """{path: value} of every value of ``value`` that is no object."""
    if not isinstance(value, dict):
        return {path: value}
    found = {}
    for key, item in value.items():
        found.update(leaves(item, path + (key,)))
    return found


def test_complex_and_podaffinity_have_a_variant():
    assert shipped.addon_flavours() == ['complex', 'podaffinity']
    # The overlays are no flavours of their own.
    assert 'addons' not in shipped.sample_flavours()
    with pytest.raises(KeyError, match=r'\(there are: complex, podaffinity\)'):
        shipped.sample_request('simple', addons=True)


@pytest.mark.parametrize('flavour', shipped.addon_flavours())
def test_a_variant_is_its_base_sample_plus_additions_only(flavour):
    base = leaves(shipped.sample_request(flavour))
    variant = leaves(shipped.sample_request(flavour, addons=True))
    overlay = leaves(shipped.sample_overlay(flavour))
    assert overlay and not set(overlay) & set(base)
    assert variant == {**base, **overlay}
    # Additions to the cluster parameters only, nothing else of the body.
    assert {path[:2] for path in overlay} == {('additionalParams', ROOT)}


def test_an_overlay_that_would_replace_a_value_is_refused():
    base = shipped.sample_request('complex')
    with pytest.raises(ValueError, match=r'additionalParams\.' + ROOT +
                       r'\.kubernetes_version'):
        shipped.overlaid(base, {'additionalParams': {ROOT: {
            'kubernetes_version': '1.34'}}})
    with pytest.raises(ValueError, match='vimConnectionInfo'):
        shipped.overlaid(base, {'vimConnectionInfo': []})
    assert shipped.overlaid({'a': {'b': 1}}, {'a': {'c': [2]}}) == {
        'a': {'b': 1, 'c': [2]}}


def test_the_variants_add_what_the_issue_asks_for():
    complex_ = shipped.sample_request('complex', addons=True)[
        'additionalParams'][ROOT]
    assert complex_['helm'] == {'version': '3.16.2',
                                'archive_path': HELM_ARCHIVE}
    [registry] = complex_['private_registry_connection_info']
    # The registry flavour's sample: its first host name, its port.
    tls_name = shipped.sample_request('registry')['additionalParams'][
        'private_registry_installation_param']['tls']['host_names'][0]
    assert registry['server'] == tls_name + ':5000'
    assert registry['hosts_string'].split()[1:] == [tls_name]
    assert registry['certificate_path'] == REGISTRY_CA
    podaffinity = shipped.sample_request('podaffinity', addons=True)[
        'additionalParams'][ROOT]
    assert podaffinity['cni'] == {'preset': 'calico', 'multus': True}
    assert package_files_named(
        shipped.sample_request('complex', addons=True)) == [
            HELM_ARCHIVE, REGISTRY_CA]
    assert package_files_named(
        shipped.sample_request('podaffinity', addons=True)) == []


@pytest.mark.parametrize('api', package_cli.APIS)
def test_the_variants_are_valid_without_a_package(api):
    complex_ = params.load_request(package_cli.filled_request(
        'complex', 'my-vim', 'my-net', api=api, addons=True), api=api)
    assert complex_.helm == params.model.HelmInstall(
        version='3.16.2', archive_path=HELM_ARCHIVE)
    [registry] = complex_.private_registry_connection_info
    assert registry.url == 'https://registry.k8s-mgmt.example:5000'
    assert registry.certificate_path == REGISTRY_CA
    assert not complex_.warnings
    podaffinity = params.load_request(package_cli.filled_request(
        'podaffinity', 'my-vim', 'my-net', api=api, addons=True), api=api)
    assert podaffinity.cni == params.model.CniChoice(preset='calico',
                                                     multus=True)
    assert not podaffinity.warnings


def test_the_variants_are_valid_with_the_files_in_the_package(
        package_copy):  # noqa: F811
    body = shipped.sample_request('complex', addons=True)
    with pytest.raises(ValidationError) as caught:
        params.load_request(body, package_dir=package_copy)
    missing = sorted(where for where, _ in caught.value.problems)
    expected = ['%s.helm.archive_path' % ROOT,
                '%s.private_registry_connection_info[0].certificate_path'
                % ROOT]
    assert missing == expected, caught.value.problems
    for name in package_files_named(body):
        path = os.path.join(package_copy, *name.split('/'))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as handle:
            handle.write(b'stand-in for ' + name.encode())
    for flavour in shipped.addon_flavours():
        found = params.load_request(
            shipped.sample_request(flavour, addons=True),
            package_dir=package_copy)
        assert not found.warnings, (flavour, found.warnings)


def test_the_cli_prints_a_variant_with_the_operators_vim_and_network(
        tmp_path):
    proc = cli('podaffinity', '--addons', '--vim-id', 'my-vim', '--network',
               'my-net', cwd=str(tmp_path))
    assert proc.returncode == 0 and proc.stderr == '', proc.stderr
    assert json.loads(proc.stdout) == package_cli.filled_request(
        'podaffinity', 'my-vim', 'my-net', addons=True)
    out = tmp_path / 'complex.json'
    proc = cli('complex', '--addons', '--api', 'v2', '--output', str(out),
               cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text()) == package_cli.filled_request(
        'complex', api='v2', addons=True)
    # Without --addons: the base sample, as before.
    plain = cli('complex', cwd=str(tmp_path))
    assert json.loads(plain.stdout) == shipped.sample_request('complex')


def test_the_cli_refuses_a_flavour_without_a_variant_in_one_line(tmp_path):
    proc = cli('simple', '--addons', cwd=str(tmp_path))
    assert proc.returncode == 1 and proc.stdout == ''
    assert proc.stderr == ('k8s-mgmt: error: --addons: flavour simple has '
                           'no add-on variant; these have one: complex, '
                           'podaffinity\n')
