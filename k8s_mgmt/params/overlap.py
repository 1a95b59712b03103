"""Rules that span several fields: overlapping networks, storage layout."""

import ipaddress
import posixpath

from k8s_mgmt.params import model
from k8s_mgmt.params.reader import child

ROOT = 'k8s_cluster_installation_param'
_MASTER = child(ROOT, 'master_node')
_STORAGE = child(ROOT, 'storage_server')


def _networks(params):
    """(path, network, is_default) for the pod, service and node networks."""
    master = params.master_node or model.MasterNodeParams()
    proxy = params.proxy or model.ProxyParams()
    entries = [
        (child(_MASTER, 'pod_cidr'), master.pod_cidr, model.DEFAULT_POD_CIDR),
        (child(_MASTER, 'cluster_cidr'), master.cluster_cidr,
         model.DEFAULT_SERVICE_CIDR),
        (child(child(ROOT, 'proxy'), 'k8s_node_cidr'), proxy.k8s_node_cidr,
         None),
    ]
    out = []
    for path, given, default in entries:
        value = given or default
        if value is not None:
            out.append((path, ipaddress.ip_network(value), given is None))
    return out


def check_networks(report, params):
    """Pod, service and node networks must not overlap each other.

    A default network (pod or service CIDR not given) counts too: the
    problem is then reported at the network that was given.
    """
    networks = _networks(params)
    for index, first in enumerate(networks):
        for second in networks[index + 1:]:
            if first[2] and second[2]:
                continue
            if first[1].version != second[1].version or not first[1].overlaps(
                    second[1]):
                continue
            here, there = (second, first) if first[2] else (first, second)
            report.problem(here[0], '%s overlaps %s %s%s' % (
                here[1], there[0].rsplit('.', 1)[-1], there[1],
                ' (the default, as it is not given)' if there[2] else ''))


def check_storage(report, params):
    """Unique volumes and mount points; exports on a volume; PVs need NFS."""
    storage = params.storage_server
    if storage is not None:
        _unique(report, child(_STORAGE, 'cinder_volume_setup_params'),
                storage.cinder_volume_setup_params, 'mount_to', True)
        _unique(report, child(_STORAGE, 'cinder_volume_setup_params'),
                storage.cinder_volume_setup_params, 'volume_resource_id',
                True)
        _unique(report, child(_STORAGE, 'nfs_server_setup_params'),
                storage.nfs_server_setup_params, 'export_dir', False)
        mounts = [v.mount_to for v in storage.cinder_volume_setup_params]
        for index, export in enumerate(storage.nfs_server_setup_params):
            where = '%s[%d]' % (child(_STORAGE, 'nfs_server_setup_params'),
                                index)
            if mounts and not any(_under(export.export_dir, m)
                                  for m in mounts):
                report.problem(
                    where + '.export_dir',
                    '%s is on no Cinder volume mount (%s); its data would '
                    'live on the VM\'s root disk and be lost with the VM' % (
                        export.export_dir, ', '.join(mounts)))
    registrations = params.pv_registration_params
    if registrations and storage is None:
        report.problem(child(ROOT, 'pv_registration_params'),
                       'needs storage_server: the PersistentVolumes point '
                       'at the NFS server the driver sets up')
    cps = sorted({r.nfs_server_cp[:40] for r in registrations})
    if len(cps) > 1:
        report.problem(child(ROOT, 'pv_registration_params'),
                       'nfs_server_cp differs between entries (%s); the '
                       'storage server has one NFS address' % ', '.join(cps))


def _unique(report, path, items, field, fatal):
    seen = {}
    for index, item in enumerate(items):
        value = getattr(item, field)
        if value in seen:
            message = 'duplicate %s %r (also item %d)' % (
                field, value, seen[value])
            where = '%s[%d].%s' % (path, index, field)
            if fatal:
                report.problem(where, message)
            else:
                report.warn(where, message)
        else:
            seen[value] = index


def _under(path, directory):
    directory = directory.rstrip('/') or '/'
    return path == directory or path.startswith(
        posixpath.join(directory, ''))
