"""Where the storage server may mount its volumes and what it may export
to whom.

* ``export_to`` never takes in loopback, link-local (the metadata address
  169.254.169.254 too), multicast, broadcast, unspecified or IPv4-mapped
  addresses, and is no wider than /16 (IPv4) or /48 (IPv6) unless
  ``storage_server.allow_wide_export`` is true.
* ``mount_to`` and ``export_dir`` are neither in nor above a system
  directory (:data:`SYSTEM_DIRS`, any ``/lib*``) and have no ``.ssh``
  component: a volume mounted there would hide the system's files, an
  export would hand them to every client.

``setup_storage.sh`` applies the same rules on the VM (its
``REFUSED_CLIENTS`` and ``SYSTEM_DIRS``);
``tests/functional/scripts/test_setup_storage_rules.py`` checks that both
agree.
"""

import ipaddress

from k8s_mgmt.params import fields

REFUSED_CLIENTS = tuple((ipaddress.ip_network(network), what)
                        for network, what in (
    ('0.0.0.0/8', 'unspecified'), ('127.0.0.0/8', 'loopback'),
    ('169.254.0.0/16', 'link-local'), ('224.0.0.0/4', 'multicast'),
    ('255.255.255.255/32', 'broadcast'), ('::/128', 'unspecified'),
    ('::1/128', 'loopback'), ('::ffff:0:0/96', 'IPv4-mapped'),
    ('fe80::/10', 'link-local'), ('ff00::/8', 'multicast')))
# The widest client network allowed without allow_wide_export: a site.
WIDEST_PREFIX = {4: 16, 6: 48}
SYSTEM_DIRS = ('/usr', '/etc', '/bin', '/sbin', '/boot', '/root', '/proc',
               '/sys', '/dev', '/run', '/tmp', '/var/lib', '/home', '/opt',
               '/var/log', '/var/spool/cron', '/snap')


def clients_refusal(clients, allow_wide=False):
    """Why an export may not go to ``clients`` (an address or network that
    parses), or None."""
    network = ipaddress.ip_network(clients, strict=False)
    for refused, what in REFUSED_CLIENTS:
        if network.version == refused.version and network.overlaps(refused):
            return 'includes %s addresses (%s)' % (what, refused)
    widest = WIDEST_PREFIX[network.version]
    if network.prefixlen < widest and not allow_wide:
        return 'is wider than /%d' % widest
    return None


def export_to(report, path, value, allow_wide=False):
    """An ``export_to`` (see :func:`fields.ip_or_network`) that
    :func:`clients_refusal` allows."""
    clients = fields.ip_or_network(report, path, value)
    if clients is None:
        return None
    reason = clients_refusal(clients, allow_wide)
    if reason is None:
        return clients
    if reason.startswith('is wider'):
        advice = ('give the cluster\'s node network, or set '
                  'storage_server.allow_wide_export: true')
    else:
        advice = 'an export is for the cluster\'s nodes only'
    report.problem(path, '%s %s: %s' % (clients, reason, advice))
    return None


def system_dir(path):
    """Which system directory the clean absolute ``path`` is in or holds
    (as a phrase), or None."""
    parts = path.strip('/').split('/')
    if parts[0].startswith('lib'):
        return 'is in the system directory /%s' % parts[0]
    for directory in SYSTEM_DIRS:
        if path == directory or path.startswith(directory + '/'):
            return 'is in the system directory %s' % directory
        if directory.startswith(path + '/'):
            return 'holds the system directory %s' % directory
    if '.ssh' in parts:
        return 'has a .ssh component'
    return None


def data_path(report, path, value):
    """A ``mount_to`` or ``export_dir``: a path on the VM (see
    :func:`fields.vm_path`) outside the system directories, returned
    without empty or ``.`` components."""
    checked = fields.vm_path(report, path, value)
    if checked is None:
        return None
    clean = '/' + '/'.join(part for part in checked.split('/')
                           if part not in ('', '.'))
    reason = system_dir(clean)
    if reason is not None:
        report.problem(path, '%s %s: no volume is mounted and no directory '
                       'exported there' % (fields.show(clean), reason))
        return None
    return clean
