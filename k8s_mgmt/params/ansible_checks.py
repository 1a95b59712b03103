"""What the kubespray mode's ``ansible`` section must never hold.

The Ansible server is not a Heat VM: its address, the fingerprint of its
host key and the directory the driver makes the cluster's key pair in all
come from the request. Validation refuses, before any VM exists:

* an ``ip_address`` that cannot be a remote server: loopback, link-local
  (169.254.0.0/16 holds the cloud's metadata service), multicast, the
  limited broadcast address or an unspecified one (``0.0.0.0`` itself stays
  the sample request's placeholder, refused by every operation);
* a ``host_key_fingerprint`` not in the form ``ssh-keygen -lf`` prints;
* a ``transferring_inventory_path`` in a directory every user can write.

The driver applies the same rules again where it uses the values
(:mod:`k8s_mgmt.ansible.ansible_server`).
"""

import base64
import binascii
import ipaddress
import posixpath
import re

from k8s_mgmt.params import fields
from k8s_mgmt.params import model
from k8s_mgmt.params.reader import child

_ROOT = 'k8s_cluster_installation_param'

PLACEHOLDER_ADDRESS = '0.0.0.0'
FINGERPRINT_FORM = 'SHA256:<43 base64 characters>'
# World-writable on Linux systems: another user could swap a directory, or
# the key pair made in it, for one of their own.
SHARED_DIRS = ('/tmp', '/var/tmp', '/dev/shm', '/run/shm', '/run/lock',
               '/var/lock')

_FINGERPRINT = re.compile(r'^SHA256:([A-Za-z0-9+/]{43})$')
_MD5 = re.compile(r'^(MD5:)?([0-9a-fA-F]{2}:){15}[0-9a-fA-F]{2}$')
_THIS_NETWORK = ipaddress.ip_network('0.0.0.0/8')
_LIMITED_BROADCAST = ipaddress.ip_address('255.255.255.255')


def address_problem(text):
    """Why ``text`` cannot be the Ansible server's address, or None (also
    for text that is no address: its form is checked elsewhere)."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_unspecified or (address.version == 4 and
                                  address in _THIS_NETWORK):
        return 'an unspecified address (it names no server)'
    if address.is_loopback:
        return ('a loopback address (the conductor itself, not the Ansible '
                'server)')
    if address.is_link_local:
        return ('a link-local address (169.254.0.0/16 holds the cloud\'s '
                'metadata service, 169.254.169.254)')
    if address.is_multicast:
        return 'a multicast address'
    if address == _LIMITED_BROADCAST:
        return 'the broadcast address'
    return None


def fingerprint_problem(text):
    """Why ``text`` is not a fingerprint as ``ssh-keygen -lf`` prints it
    (``SHA256:`` and the unpadded base64 of 32 bytes), or None."""
    if _MD5.match(text):
        return ('an MD5 fingerprint; give the SHA256 one (ssh-keygen -lf '
                'prints it by default)')
    if ' ' in text.strip() and 'SHA256:' in text:
        return ('more than the fingerprint: give only the "SHA256:..." word '
                'of the line ssh-keygen -lf prints')
    match = _FINGERPRINT.match(text)
    if match is None:
        return 'not a host key fingerprint %s' % FINGERPRINT_FORM
    try:
        digest = base64.b64decode(match.group(1) + '=', validate=True)
    except (binascii.Error, ValueError):
        digest = b''
    encoded = base64.b64encode(digest).decode('ascii').rstrip('=')
    if len(digest) != 32 or encoded != match.group(1):
        return ('not a SHA256 digest (its last character cannot end 32 '
                'bytes of base64)')
    return None


def shared_dir(path):
    """The world-writable system directory ``path`` is in, or None."""
    # normpath keeps a leading '//', which the kernel reads as '/'.
    path = posixpath.normpath('/' + path.lstrip('/'))
    for directory in SHARED_DIRS:
        if path == directory or path.startswith(directory + '/'):
            return directory
    return None


def shared_dir_problem(path):
    """Why ``path`` (normalised) must not hold the inventory, or None."""
    directory = shared_dir(path)
    if directory is None:
        return None
    return ('in %s, which every user on the Ansible server can write: '
            'another user could swap the directory or the cluster\'s key '
            'pair made there; choose one only its owner can write, such as '
            'a directory in the SSH user\'s home' % directory)


# -- field checkers for the validator: (report, path, value) -> value -------

def _unless(report, path, value, reason):
    """``value``, or None after recording ``reason`` (when there is one)
    with the value shown."""
    if reason is None:
        return value
    report.problem(path, '%s: %s' % (reason, fields.show(value)))
    return None


def server_address(report, path, value):
    """The Ansible server's IP address; the placeholder passes (the
    validator records it)."""
    address = fields.ip_address(report, path, value)
    if address is None or address == PLACEHOLDER_ADDRESS:
        return address
    return _unless(report, path, address, address_problem(address))


def host_key_fingerprint(report, path, value):
    """``SHA256:...`` of the Ansible server's host key (not a secret)."""
    value = fields.string(report, path, value,
                          what='a string %s' % FINGERPRINT_FORM)
    if value is None:
        return None
    return _unless(report, path, value, fingerprint_problem(value))


def inventory_path(report, path, value):
    """A directory on the Ansible server outside the world-writable
    ones."""
    directory = fields.vm_path(report, path, value)
    if directory is None:
        return None
    reason = shared_dir_problem(directory)
    if reason is not None:
        report.problem(path, '%s is %s' % (fields.show(directory), reason))
        return None
    return directory


# What kubespray does itself, so the request's value is ignored there.
_IGNORED = (
    ('kubernetes_apt_repository', 'kubespray downloads the Kubernetes '
     'binaries itself (set its download URLs in its own group_vars)'),
    ('private_registry_connection_info', 'kubespray configures containerd '
     'itself (set containerd_registries_mirrors in its own group_vars)'),
    ('helm', 'kubespray installs Helm itself (helm_enabled in its own '
     'group_vars)'),
    ('helm_installation_script_path', 'kubespray installs Helm itself '
     '(helm_enabled in its own group_vars)'),
    ('cni', 'kubespray installs the CNI and Multus itself '
     '(kube_network_plugin and kube_network_plugin_multus in its own '
     'group_vars)'),
)


def mode_checks(validator, params):
    """The kubespray mode's rules over a whole request: it needs its
    Ansible server and its external load balancer; it builds no storage
    server; what kubespray configures itself is ignored, with a warning.
    """
    report = validator.report
    if not validator.needs_nodes:
        return
    if params.ansible is None:
        if validator.flavour == model.KUBESPRAY_FLAVOUR:
            report.problem(child(_ROOT, 'ansible'),
                           'required for the kubespray flavour')
        return
    if params.external_lb_param is None and \
            validator.operation == 'instantiate':
        report.problem(child(_ROOT, 'external_lb_param'),
                       'required with ansible: the kubespray mode exposes '
                       'the cluster through an external load balancer VM')
    if params.storage_server is not None:
        report.problem(child(_ROOT, 'storage_server'), 'not supported with '
                       'ansible (the kubespray mode builds no storage '
                       'server)')
    if params.proxy is not None and (params.proxy.http_proxy or
                                     params.proxy.https_proxy):
        report.warn(child(_ROOT, 'proxy'), 'not passed to kubespray (its '
                    'proxy URLs may hold credentials, and nothing secret is '
                    'written on the Ansible server): set '
                    'http_proxy/https_proxy in kubespray\'s own group_vars '
                    'there')
    for name, why in _IGNORED:
        if getattr(params, name):
            report.warn(child(_ROOT, name), 'ignored in the kubespray mode: '
                        + why)
