"""The stand-in's certificate dates, printed as kubeadm prints them and
read back by the driver's own parser of kubeadm's tables."""

import datetime

import pytest

from k8s_mgmt import kube_certs
from k8s_mgmt_lab.kube import certs


def test_check_expiration_is_read_by_the_drivers_parser(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(certs, 'CERTS_FILE', str(tmp_path / 'c.json'))
    with pytest.raises(OSError):
        certs.check_expiration()
    certs.record_new()
    made = certs.read()
    certs.record_new()              # kept, not made again
    assert certs.read() == made
    assert certs.check_expiration() == 0
    found = kube_certs.parse_check_expiration(capsys.readouterr().out)
    assert [c.name for c in found] == [name for name, _ in certs.LEAVES] + \
        list(certs.AUTHORITIES)
    now = datetime.datetime.now(datetime.timezone.utc)
    leaves = [c for c in found if not c.is_authority]
    assert all(364 <= c.days_left(now) <= 365 for c in leaves)
    assert all(c.days_left(now) > 3600 for c in found if c.is_authority)
    assert kube_certs.expiring(found, now) == []


def test_renew_all_moves_every_leaf_forward_not_the_authorities(
        tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(certs, 'CERTS_FILE', str(tmp_path / 'c.json'))
    certs.record_new()
    before = certs.read()
    aged = dict(before, apiserver=before['apiserver'] - datetime.timedelta(
        days=300))
    certs.kube.write_file(certs.CERTS_FILE, certs.json.dumps(
        {k: v.isoformat() for k, v in aged.items()}), 0o600)
    assert certs.renew('all') == 0
    after = certs.read()
    assert after['apiserver'] >= before['apiserver']
    assert after['ca'] == before['ca']
    assert 'You must restart the kube-apiserver' in capsys.readouterr().out
    with pytest.raises(OSError):
        certs.renew('nonsense')


def test_an_upgrade_renews_every_leaf_unless_told_not_to(
        tmp_path, capsys, monkeypatch):
    from k8s_mgmt_lab.kube import kubeadm_upgrade
    monkeypatch.setattr(certs, 'CERTS_FILE', str(tmp_path / 'c.json'))
    certs.record_new()
    before = certs.read()
    aged = {k: v - datetime.timedelta(days=200) for k, v in before.items()}
    certs.kube.write_file(certs.CERTS_FILE, certs.json.dumps(
        {k: v.isoformat() for k, v in aged.items()}), 0o600)
    kubeadm_upgrade._renew_unless_told(['upgrade', 'node',
                                        '--certificate-renewal=false'])
    assert certs.read() == aged
    kubeadm_upgrade._renew_unless_told(['upgrade', 'node'])
    after = certs.read()
    assert after['apiserver'] >= before['apiserver']
    assert after['ca'] == aged['ca']
    assert '[upgrade/staticpods] Renewing apiserver certificate' in \
        capsys.readouterr().out
