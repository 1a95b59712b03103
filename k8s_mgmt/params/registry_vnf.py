"""Validation of ``additionalParams.private_registry_installation_param``:
the registry VNF, one VM the driver turns into a private container
registry (see doc/source/registry-vnf.rst).

Tacker's private-registry sample driver reads the same root with
``ssh_cp_name``, ``ssh_username``, ``ssh_password``, ``port_no``,
``proxy`` and ``image_path``; they are accepted as it has them
(``image_path``, a container image of a registry, is ignored with a
warning: Debian's docker-registry is installed from the VM's apt sources).
Ours beside them: ``ssh_private_key``, ``nic_cp_name``, the one Cinder
volume that keeps the images and the certificate
(``cinder_volume_setup_params``) and ``tls``.
"""

import functools

from k8s_mgmt import accepted
from k8s_mgmt.params import fields
from k8s_mgmt.params import model
from k8s_mgmt.params import nfs_exports
from k8s_mgmt.params.reader import child

ROOT = 'private_registry_installation_param'
DEFAULT_MOUNT = '/srv/registry'
# docker-registry runs as its own user, without the capability to bind
# a privileged port.
MIN_PORT = 1024
MAX_HOST_NAMES = 16
# Where each run of the scripts finds the operator's TLS files.
_PROXY_SPEC = {'http_proxy': fields.proxy_url,
               'https_proxy': fields.proxy_url,
               'no_proxy': fields.no_proxy}
_VOLUME_SPEC = {'volume_resource_id': fields.name,
                'mount_to': nfs_exports.data_path}
_GIVEN_TLS = ('certificate_path', 'ca_certificate_path', 'private_key')


def port(report, path, value):
    """A port from MIN_PORT to 65535, as a number or a string of digits
    (Tacker's sample gives ``"5000"``)."""
    if isinstance(value, str) and value.isascii() and value.isdigit() \
            and len(value) <= 5:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or \
            not MIN_PORT <= value <= 65535:
        report.problem(path, 'expected a port from %d to 65535 (a number or '
                       'a string of digits), got %s'
                       % (MIN_PORT, fields.describe(value)))
        return None
    return value


def host_name(report, path, value):
    """A DNS name the self-signed certificate is made for."""
    value = fields.string(report, path, value, what='a host name',
                          limit=253)
    if value is None:
        return None
    if accepted.is_ipv4_text(value):
        report.problem(path, 'an address, not a host name: the certificate '
                       'names the VM\'s address anyway')
        return None
    reason = accepted.host_name(value)
    if reason:
        report.problem(path, '%s: %s' % (reason, fields.show(value)))
        return None
    return value.lower()


def check(reader, raw, package_dir, needs_node):
    """RegistryInstallParams from the root's value, or None after a
    problem. ``needs_node``: the operation connects to the VM."""
    package_path = functools.partial(fields.package_path,
                                     package_dir=package_dir)
    spec = {'ssh_cp_name': fields.name, 'ssh_username': fields.username,
            'ssh_password': fields.secret,
            'ssh_private_key': fields.private_key,
            'nic_cp_name': fields.name, 'port_no': port}
    lists = ('proxy', 'cinder_volume_setup_params', 'tls', 'image_path')
    section = reader.section(ROOT, raw, spec, extra_known=lists)
    if section is None:
        return None
    if needs_node:
        reader.require(section, ('ssh_cp_name', 'ssh_username'))
    reader.credentials(section, password_field='ssh_password',
                       needed=needs_node)
    found = {name: reader.lookup(ROOT, raw, name) for name in lists}
    if found['image_path'][0]:
        reader.report.warn(child(ROOT, 'image_path'), 'ignored: this driver '
                           'installs Debian\'s docker-registry from the '
                           'VM\'s apt sources, no container image')
    proxy = None
    if found['proxy'][0]:
        proxy_section = reader.section(child(ROOT, 'proxy'),
                                       found['proxy'][1], _PROXY_SPEC)
        proxy = proxy_section and model.ProxyParams(**proxy_section.values)
    volumes = _volumes(reader, found['cinder_volume_setup_params'],
                       needs_node)
    tls = _tls(reader, found['tls'], package_path)
    if tls is None or volumes is None:
        return None
    return model.RegistryInstallParams(
        proxy=proxy, cinder_volume_setup_params=volumes, tls=tls,
        **section.values)


def _volumes(reader, found_value, needs_node):
    path = child(ROOT, 'cinder_volume_setup_params')
    found, value = found_value
    if not found:
        if needs_node:
            reader.report.problem(path, 'required: the registry keeps its '
                                  'images and certificate on a Cinder volume')
            return None
        return ()
    items = reader.section_list(path, value, _VOLUME_SPEC)
    if isinstance(value, list) and len(value) != 1:
        reader.report.problem(path, 'exactly one volume: the registry keeps '
                              'its images and certificate on one Cinder '
                              'volume (got %d)' % len(value))
        return None
    built = []
    for item in items:
        if 'mount_to' not in item.present:
            item.values['mount_to'] = DEFAULT_MOUNT
            item.present.add('mount_to')
        volume = reader.complete(item, _VOLUME_SPEC,
                                 model.CinderVolumeSetup)
        if volume is None:
            return None
        built.append(volume)
    return tuple(built) if len(built) == 1 else None


def _tls(reader, found_value, package_path):
    path = child(ROOT, 'tls')
    found, value = found_value
    if not found:
        return model.RegistryTls()
    spec = {'host_names': None, 'certificate_path': package_path,
            'ca_certificate_path': package_path,
            'private_key': fields.private_key}
    section = reader.section(path, value, {k: v for k, v in spec.items()
                                           if v is not None},
                             extra_known=('host_names',))
    if section is None:
        return None
    given = section.present & set(_GIVEN_TLS)
    names_found, names = reader.lookup(path, value, 'host_names')
    if names_found and given:
        reader.report.problem(path, 'a self-signed certificate (host_names) '
                              'or the operator\'s (certificate_path, '
                              'ca_certificate_path, private_key), not both')
        return None
    if given and given != set(_GIVEN_TLS):
        missing = ', '.join(sorted(set(_GIVEN_TLS) - given))
        reader.report.problem(path, 'certificate_path, ca_certificate_path '
                              'and private_key go together (missing: %s)'
                              % missing)
        return None
    if set(section.values) != section.present:
        return None
    if given:
        return model.RegistryTls(**section.values)
    return _self_signed(reader, child(path, 'host_names'),
                        names if names_found else [])


def _self_signed(reader, path, names):
    if not isinstance(names, list):
        reader.report.problem(path, 'expected a list of host names, got %s'
                              % fields.describe(names))
        return None
    if len(names) > MAX_HOST_NAMES:
        reader.report.problem(path, 'at most %d host names'
                              % MAX_HOST_NAMES)
        return None
    checked = [host_name(reader.report, '%s[%d]' % (path, index), name)
               for index, name in enumerate(names)]
    if None in checked:
        return None
    return model.RegistryTls(host_names=tuple(dict.fromkeys(checked)))


def certificate_files(params):
    """The package files the registry VM needs: its certificate and CA."""
    tls = params.tls
    return () if tls.self_signed else (tls.certificate_path,
                                       tls.ca_certificate_path)
