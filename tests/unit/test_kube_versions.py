"""Kubernetes versions as the tools print them, and the skew rules."""

import pytest

from k8s_mgmt import kube_versions as versions
from k8s_mgmt.kube_versions import Version


@pytest.mark.parametrize('text, found', [
    ('v1.36.1', Version(36, 1)), ('1.36.1', Version(36, 1)),
    ('1.36', Version(36)), ('1.36.1-1.1', Version(36, 1)),
    (' v1.30.0 ', Version(30, 0)),
])
def test_versions_are_read_as_printed(text, found):
    assert versions.parse(text) == found


@pytest.mark.parametrize('text', ['', '2.1.0', '1.036', 'v1', '1.36.x',
                                  None, 136, 'latest'])
def test_what_is_no_version_is_none(text):
    assert versions.parse(text) is None


def test_a_version_prints_as_written_and_compares_by_key():
    assert str(Version(36, 1)) == '1.36.1' and Version(36, 1).tag == \
        'v1.36.1'
    assert str(Version(36)) == '1.36' and Version(36).minor_text == '1.36'
    assert Version(36).key == Version(36, 0).key < Version(36, 1).key
    assert Version(36).same_release(Version(36, 4))
    assert not Version(36, 1).same_release(Version(36, 4))
    assert versions.newest(['1.35.9', 'v1.36.0', 'junk', '1.36.1-1.1']) \
        == Version(36, 1)
    assert versions.newest([]) is None


@pytest.mark.parametrize('lowest, highest, target, words', [
    ('1.35.2', '1.35.2', '1.36.1', None),
    ('1.35.2', '1.35.2', '1.35.4', None),
    ('1.35.2', '1.36.1', '1.36.1', None),       # half-way: resume
    ('1.34.2', '1.34.2', '1.36.1', 'the cluster runs 1.34.2; 1.36.1 skips '
     '1.35: kubeadm upgrades one minor at a time, so upgrade to 1.35 '
     'first'),
    ('1.33.0', '1.33.0', '1.36.0', 'skips 1.34, 1.35'),
    ('1.36.1', '1.36.1', '1.35.2', 'the cluster runs 1.36.1; 1.35.2 is '
     'older, and kubeadm does not downgrade'),
    ('1.36.2', '1.36.2', '1.36.1', 'does not downgrade'),
])
def test_the_control_plane_moves_one_minor_forward(lowest, highest, target,
                                                   words):
    found = versions.control_plane_problem(
        versions.parse(lowest), versions.parse(highest),
        versions.parse(target))
    if words is None:
        assert found is None
    else:
        assert words in found


@pytest.mark.parametrize('kubelet, target, words', [
    ('1.36.1', '1.36.1', None), ('1.33.0', '1.36.1', None),
    ('1.37.0', '1.36.1', "worker-1's kubelet 1.37.0 is newer than the "
     "target 1.36.1: a kubelet may never be newer than the API server"),
    ('1.32.4', '1.36.1', "worker-1's kubelet 1.32.4 would be 4 minors "
     "behind 1.36 (3 are allowed): upgrade to 1.35 first"),
])
def test_a_kubelet_is_never_newer_nor_over_three_behind(kubelet, target,
                                                        words):
    found = versions.kubelet_problem('worker-1', versions.parse(kubelet),
                                     versions.parse(target))
    assert (found is None) if words is None else words in found
