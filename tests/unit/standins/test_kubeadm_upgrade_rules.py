"""The stand-in kubeadm's upgrade rules: what ``upgrade plan`` and
``upgrade apply`` refuse (a version newer than kubeadm, a skipped minor,
a downgrade), in kubeadm's words as the stand-in models them."""

import pytest

from k8s_mgmt_lab.kube import kubeadm_upgrade as upgrade


@pytest.mark.parametrize('target, mine, current, words', [
    ((36, 1), (36, 1), (35, 1), None),
    ((35, 1), (36, 1), (35, 1), None),
    ((36, 1), (35, 1), (35, 1), 'higher than the kubeadm version "v1.35.1"'),
    ((37, 0), (37, 0), (35, 1), 'can upgrade only 1 minor version at a '
                                'time'),
    ((35, 0), (36, 1), (35, 1), 'lower than the cluster version "v1.35.1". '
                                'Downgrades are not supported'),
])
def test_what_kubeadm_refuses(target, mine, current, words):
    found = upgrade.refusal(target, mine, current)
    if words is None:
        assert found is None
    else:
        assert found.startswith('[upgrade/version] FATAL:') and words in found


def test_plan_names_the_versions_and_the_command(monkeypatch, capsys):
    monkeypatch.setattr(upgrade.kube, 'kubernetes_version',
                        lambda: 'v1.36.1')
    monkeypatch.setattr(upgrade, 'cluster_version', lambda api: (35, 1))
    assert upgrade.run(['upgrade', 'plan'], ['upgrade', 'plan'],
                       lambda: None) == 0
    out = capsys.readouterr().out
    assert 'Cluster version: v1.35.1' in out
    assert '\tkubeadm upgrade apply v1.36.1' in out
    # Skipping a minor: said, exit status 1.
    monkeypatch.setattr(upgrade.kube, 'kubernetes_version',
                        lambda: 'v1.37.0')
    assert upgrade.run(['upgrade', 'plan', 'v1.37.0'],
                       ['upgrade', 'plan', 'v1.37.0'], lambda: None) == 1
    assert 'only 1 minor version at a time' in capsys.readouterr().out
