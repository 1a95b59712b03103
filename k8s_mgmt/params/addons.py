"""What a request adds to the cluster beside Kubernetes itself: Helm on
the masters (``helm``, or Tacker's ``helm_installation_script_path``) and
the private container registries every node pulls from (Tacker's
``private_registry_connection_info``). The CNI has its own module
(:mod:`k8s_mgmt.params.cni`).

Each function takes the validator (its report and section helpers).
"""

import re

from k8s_mgmt.params import fields
from k8s_mgmt.params import model
from k8s_mgmt.params.reader import child

ROOT = 'k8s_cluster_installation_param'
_REGISTRY_USER = re.compile(r'[!-9;-~]{1,255}')
# Private registries one cluster may name (each is a file on every node).
MAX_REGISTRIES = 16


def helm(reader, found_helm, found_script, package_path):
    """(HelmInstall, script path): ours, pinned (the archive from the
    package, or a URL with its SHA-256), or Tacker's script; not both.
    """
    script = (package_path(reader.report,
                           child(ROOT, 'helm_installation_script_path'),
                           found_script[1])
              if found_script[0] else None)
    if not found_helm[0]:
        return None, script
    path = child(ROOT, 'helm')
    if found_script[0]:
        reader.report.problem(path, 'give Helm by helm or by '
                              'helm_installation_script_path, not both')
        return None, None
    spec = {'version': fields.helm_version, 'archive_path': package_path,
            'url': fields.repository_url, 'sha256': fields.sha256}
    section = reader.section(path, found_helm[1], spec)
    if section is None or not reader.require(section, ('version',)):
        return None, None
    sources = {'archive_path', 'url'} & section.present
    if len(sources) != 1:
        reader.report.problem(path, 'needs its release archive by '
                              'archive_path (a file of the VNF package) or '
                              'by url, one of them')
        return None, None
    if 'url' in sources and 'sha256' not in section.present:
        reader.report.problem(child(path, 'sha256'), 'required with url: '
                              'the archive is checked before it is used')
        return None, None
    if set(section.values) != section.present:
        return None, None
    return model.HelmInstall(**section.values), None


def registry_username(report, path, value):
    """A registry login: printable ASCII without blanks or a colon (the
    basic-auth separator); ``robot$project+name`` passes."""
    value = fields.string(report, path, value, what='a user name',
                          limit=255)
    if value is not None and not _REGISTRY_USER.fullmatch(value):
        report.problem(path, 'not a registry user name (printable ASCII, '
                       'no blank or colon): %s' % fields.show(value))
        return None
    return value


def registries(reader, raw, package_path):
    """Tacker's ``private_registry_connection_info``: each server once,
    its CA only for https (and then from the package); a login (ours)
    for https only."""
    path = child(ROOT, 'private_registry_connection_info')
    spec = {'connection_type': fields.connection_type,
            'server': fields.registry_server,
            'certificate_path': package_path,
            'hosts_string': fields.hosts_entry,
            'username': registry_username, 'password': fields.secret}
    items = reader.section_list(path, raw, spec)
    if len(items) > MAX_REGISTRIES:
        reader.report.problem(path, 'at most %d registries'
                              % MAX_REGISTRIES)
        return ()
    found, seen = [], set()
    for item in items:
        entry = reader.complete(item, spec, model.RegistryConnection,
                                optional=('certificate_path',
                                          'hosts_string', 'username',
                                          'password'))
        if entry is None or not _login_ok(reader, item, entry):
            continue
        if entry.certificate_path and entry.connection_type == 'http':
            reader.report.problem(
                child(item.path, 'certificate_path'), 'a CA certificate '
                'means nothing for an http registry: give '
                'connection_type 1 (https), or no certificate_path')
            continue
        if entry.server in seen:
            reader.report.problem(child(item.path, 'server'), '%s is '
                                  'given twice' % entry.server)
            continue
        seen.add(entry.server)
        found.append(entry)
    return tuple(found)


def _login_ok(reader, item, entry):
    """A username goes with a password, over https only."""
    if (entry.username is None) != (entry.password is None):
        missing = 'password' if entry.password is None else 'username'
        reader.report.problem(child(item.path, missing), 'required with %s'
                              % ('username' if missing == 'password'
                                 else 'password'))
        return False
    if entry.username is not None and entry.connection_type == 'http':
        reader.report.problem(child(item.path, 'username'), 'a login goes '
                              'to an https registry only (it would cross '
                              'the network in clear): give connection_type '
                              '1 (https)')
        return False
    return True
