"""A VNF package that names a Kubernetes version
(``package build --kubernetes-version``): the file, its digest, and what
an instantiate without its own version then installs."""

import json

import pytest

from k8s_mgmt import package
from k8s_mgmt import params as params_mod
from k8s_mgmt import shipped


def test_the_package_names_its_version_in_a_listed_file():
    files = package.assemble(kubernetes_version='1.36', api='v2')
    assert files['Files/k8s-mgmt/kubernetes_version'] == b'1.36\n'
    listed = package.parse_tosca_meta(files[package.TOSCA_META])
    assert listed['Files/k8s-mgmt/kubernetes_version'] == (
        'SHA-256', package.sha256_hex(b'1.36\n'))
    assert 'Files/k8s-mgmt/kubernetes_version' not in package.assemble()
    # What the driver reads.
    from k8s_mgmt.params import package_version
    assert package.VERSION_FILE == package_version.FILE


@pytest.mark.parametrize('version, words', [
    ('latest', 'must be a version such as 1.36'),
    ('1.36.x', 'must be a version such as 1.36'),
    ('1.%d' % (shipped.SUPPORTED_MINORS[-1] + 1), 'the install script '
     'supports'),
])
def test_a_version_the_package_cannot_install_is_refused(version, words):
    with pytest.raises(package.PackageError) as err:
        package.assemble(kubernetes_version=version)
    assert words in str(err.value)


def test_the_packages_version_is_an_instantiates_default(tmp_path):
    from tests.unit.operations import op_helpers
    body = op_helpers.sample_body('simple')
    install = body['additionalParams']['k8s_cluster_installation_param']
    install.pop('kubernetes_version', None)
    package.build(output_dir=str(tmp_path), kubernetes_version='1.34.2')
    found = params_mod.load_cluster_params(
        json.loads(json.dumps(body['additionalParams'])),
        flavour='simple', package_dir=str(tmp_path))
    assert found.kubernetes_version == '1.34.2'
    # The request's own wins.
    install['kubernetes_version'] = '1.35'
    found = params_mod.load_cluster_params(
        body['additionalParams'], flavour='simple',
        package_dir=str(tmp_path))
    assert found.kubernetes_version == '1.35'
