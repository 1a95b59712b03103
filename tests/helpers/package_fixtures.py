"""The sample VNF package as ``k8s-mgmt package build`` unpacks it, for
the parameter tests of both lanes (their conftests import the fixtures)."""

import shutil

import pytest


@pytest.fixture(scope='session')
def built_package(tmp_path_factory):
    """The sample VNF package as ``k8s-mgmt package build`` unpacks it.

    Shared by every test: do not change it (use ``package_copy``).
    """
    from k8s_mgmt import package
    path = str(tmp_path_factory.mktemp('built') / 'vnf_package')
    package.build(output_dir=path)
    return path


@pytest.fixture
def package_copy(built_package, tmp_path):
    """A copy of the built sample package this test may change."""
    path = str(tmp_path / 'vnf_package')
    shutil.copytree(built_package, path, symlinks=True)
    return path
