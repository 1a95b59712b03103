"""kubeadm certs check-expiration's tables read, and the certificates
that expire soon."""

import datetime

import pytest

from k8s_mgmt import kube_certs


def _row(*columns):
    return '   '.join(columns)


OUTPUT = '\n'.join([
    '[check-expiration] Reading configuration from the cluster...',
    '',
    _row('CERTIFICATE       ', 'EXPIRES               ', 'RESIDUAL TIME',
         'CERTIFICATE AUTHORITY', 'EXTERNALLY MANAGED'),
    _row('admin.conf        ', 'Dec 20, 2026 10:00 UTC', '21d ', 'ca',
         'no'),
    _row('apiserver         ', 'Nov 27, 2027 10:00 UTC', '364d', 'ca',
         'no'),
    _row('etcd-server       ', 'Nov 27, 2027 10:00 UTC', '364d', 'etcd-ca',
         'no'),
    _row('front-proxy-client', 'Dec 01, 2026 10:00 UTC', '2d  ',
         'front-proxy-ca', 'yes'),
    '',
    _row('CERTIFICATE AUTHORITY', 'EXPIRES               ',
         'RESIDUAL TIME', 'EXTERNALLY MANAGED'),
    _row('ca     ', 'Nov 25, 2036 10:00 UTC', '9y', 'no'),
    _row('etcd-ca', 'Nov 25, 2036 10:00 UTC', '9y', 'no'),
    ''])
NOW = datetime.datetime(2026, 11, 28, 12, 0,
                        tzinfo=datetime.timezone.utc)


def test_both_tables_are_read():
    found = kube_certs.parse_check_expiration(OUTPUT)
    assert [c.name for c in found] == [
        'admin.conf', 'apiserver', 'etcd-server', 'front-proxy-client',
        'ca', 'etcd-ca']
    apiserver = found[1]
    assert apiserver.authority == 'ca' and not apiserver.is_authority
    assert apiserver.expires == datetime.datetime(
        2027, 11, 27, 10, 0, tzinfo=datetime.timezone.utc)
    assert found[3].external and found[4].is_authority


def test_what_expires_within_thirty_days_and_the_warning():
    found = kube_certs.parse_check_expiration(OUTPUT)
    soon = kube_certs.expiring(found, NOW)
    # The externally managed one is not ours to renew.
    assert [c.name for c in soon] == ['admin.conf']
    assert kube_certs.warning('master-1', soon[0], NOW) == (
        'certificate admin.conf on master-1 expires on 2026-12-20 (in 21 '
        'days): renew the certificates')
    later = NOW + datetime.timedelta(days=40)
    assert kube_certs.warning('master-1', soon[0], later).startswith(
        'certificate admin.conf on master-1 expired on 2026-12-20')


@pytest.mark.parametrize('text, words', [
    ('', 'no certificate table'),
    ('error: no kubeadm config\n', 'no certificate table'),
    (OUTPUT.replace('364d   ca', '364d'), 'line 5 is no row of the '
     'certificates table'),
])
def test_an_output_of_another_shape_is_refused(text, words):
    with pytest.raises(kube_certs.UnreadableExpiration) as err:
        kube_certs.parse_check_expiration(text)
    assert words in str(err.value)
