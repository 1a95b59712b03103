"""The stand-in control plane's certificates as data: when each expires.

kubeadm makes a control-plane node's certificates when it initialises or
joins it: every leaf certificate for a year, the authorities for ten.
The stand-in keeps their expiry dates in ``certificates.json`` beside its
other state (written by the first control-plane start on the node) and
prints them as ``kubeadm certs check-expiration`` does, in kubeadm's two
tables. Only the dates are modelled: the API server's real serving
certificate is the one :mod:`k8s_mgmt_lab.kube.pki` makes.
"""

import datetime
import json
import os

from k8s_mgmt_lab import kube

CERTS_FILE = os.path.join(kube.STANDIN_DIR, 'certificates.json')
# kubeadm's leaf certificates (and kubeconfig files) and their authority.
LEAVES = (
    ('admin.conf', 'ca'), ('apiserver', 'ca'),
    ('apiserver-etcd-client', 'etcd-ca'),
    ('apiserver-kubelet-client', 'ca'), ('controller-manager.conf', 'ca'),
    ('etcd-healthcheck-client', 'etcd-ca'), ('etcd-peer', 'etcd-ca'),
    ('etcd-server', 'etcd-ca'), ('front-proxy-client', 'front-proxy-ca'),
    ('scheduler.conf', 'ca'), ('super-admin.conf', 'ca'))
AUTHORITIES = ('ca', 'etcd-ca', 'front-proxy-ca')
LEAF_DAYS = 365
AUTHORITY_DAYS = 3650
_FORMAT = '%b %d, %Y %H:%M UTC'


def now():
    return datetime.datetime.now(datetime.timezone.utc).replace(
        second=0, microsecond=0)


def record_new():
    """The node's certificates, made now, unless it has them already."""
    if os.path.exists(CERTS_FILE):
        return
    made = now()
    expires = {name: (made + datetime.timedelta(days=LEAF_DAYS)).isoformat()
               for name, _ca in LEAVES}
    expires.update({name: (made + datetime.timedelta(
        days=AUTHORITY_DAYS)).isoformat() for name in AUTHORITIES})
    kube.write_file(CERTS_FILE, json.dumps(expires, indent=1), 0o600)


def read():
    try:
        with open(CERTS_FILE) as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return None
    return {name: datetime.datetime.fromisoformat(value)
            for name, value in data.items()}


def _residual(expires, at):
    days = int((expires - at).total_seconds() // 86400)
    if days < 0:
        return '<invalid>'
    return '%dy' % (days // 365) if days >= 365 * 2 else '%dd' % days


def check_expiration():
    """kubeadm's two tables on stdout; 1 on a node with no control plane."""
    expires = read()
    if expires is None:
        raise OSError('[check-expiration] no control-plane certificates on '
                      'this node (%s)' % CERTS_FILE)
    at = now()
    print('[check-expiration] Reading configuration from the cluster...')
    print('')
    rows = [('CERTIFICATE', 'EXPIRES', 'RESIDUAL TIME',
             'CERTIFICATE AUTHORITY', 'EXTERNALLY MANAGED')]
    rows += [(name, expires[name].strftime(_FORMAT),
              _residual(expires[name], at), ca, 'no')
             for name, ca in LEAVES]
    _print_table(rows)
    print('')
    rows = [('CERTIFICATE AUTHORITY', 'EXPIRES', 'RESIDUAL TIME',
             'EXTERNALLY MANAGED')]
    rows += [(name, expires[name].strftime(_FORMAT),
              _residual(expires[name], at), 'no') for name in AUTHORITIES]
    _print_table(rows)
    return 0


def _print_table(rows):
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print('   '.join(value.ljust(width)
                         for value, width in zip(row, widths)).rstrip())


def _renewed(expires, names):
    """``names`` a year on from now in ``expires``, written; the names."""
    made = now()
    for name in names:
        expires[name] = made + datetime.timedelta(days=LEAF_DAYS)
    kube.write_file(CERTS_FILE, json.dumps(
        {k: v.isoformat() for k, v in expires.items()}, indent=1), 0o600)
    return names


def renew_in_upgrade():
    """What ``kubeadm upgrade apply|node`` does to a control-plane node's
    certificates unless told ``--certificate-renewal=false``: every leaf
    renewed (the static pods it restarts then read them)."""
    expires = read()
    if expires is None:
        return
    for name in _renewed(expires, [name for name, _ca in LEAVES]):
        print('[upgrade/staticpods] Renewing %s certificate' % name)


def renew(which):
    """``kubeadm certs renew all|NAME``: the leaf certificates' new dates
    (the authorities are not renewed); the components must be restarted
    to use them, as kubeadm says."""
    expires = read()
    if expires is None:
        raise OSError('[renew] no control-plane certificates on this node '
                      '(%s)' % CERTS_FILE)
    names = [name for name, _ca in LEAVES]
    if which != 'all':
        if which not in names:
            raise OSError('[renew] unknown certificate %r' % which)
        names = [which]
    for name in _renewed(expires, names):
        print('certificate %s renewed' % name)
    print('')
    print('Done renewing certificates. You must restart the kube-apiserver, '
          'kube-controller-manager, kube-scheduler and etcd, so that they '
          'can use the new certificates.')
    return 0
