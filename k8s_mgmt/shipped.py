"""What the distribution carries besides Python modules.

The node scripts (``k8s_mgmt/scripts/``), the sample VNF package source
(``k8s_mgmt/samples/vnf_package/``) and the sample InstantiateVnfRequest
bodies (``k8s_mgmt/samples/requests/``) live inside the package, so a
checkout, an editable install and a wheel find them the same way: through
:mod:`importlib.resources`, never through paths relative to the source tree.
Every value returned here is a ``Traversable`` (a ``pathlib.Path`` for any
installation on a filesystem), read with ``read_bytes``/``iterdir``.
"""

import copy
import importlib.resources
import json
import re

INSTALL_SCRIPT = 'install_k8s_cluster.sh'
LB_SCRIPT = 'configure_lb.sh'
# The storage server (NFS exports on its Cinder volume) and the NFS clients.
STORAGE_SCRIPT = 'setup_storage.sh'
# HAProxy on the kubespray mode's external load balancer VM.
EXTERNAL_LB_SCRIPT = 'configure_external_lb.sh'
# A private container registry VM (Debian's docker-registry over HTTPS).
REGISTRY_SCRIPT = 'setup_registry.sh'
# The helpers the install and LB scripts source from their own directory.
SCRIPT_LIBRARY = 'k8s_mgmt_lib.sh'
# The install script's upgrade modes, which it sources from beside it.
UPGRADE_LIBRARY = 'k8s_mgmt_upgrade.sh'
SCRIPTS = (SCRIPT_LIBRARY, INSTALL_SCRIPT, LB_SCRIPT, STORAGE_SCRIPT,
           EXTERNAL_LB_SCRIPT, REGISTRY_SCRIPT, UPGRADE_LIBRARY)


def _root():
    return importlib.resources.files('k8s_mgmt')


def script(name):
    """One of the node scripts this distribution ships."""
    if name not in SCRIPTS:
        raise KeyError('no shipped script %r' % name)
    return _root() / 'scripts' / name


def sample_package():
    """The source tree of the sample VNF package (before ``package build``
    adds the driver and the scripts)."""
    return _root() / 'samples' / 'vnf_package'


def _requests_dir():
    return _root() / 'samples' / 'requests'


def sample_flavours():
    """Flavours that have a sample request, sorted."""
    return sorted(entry.name[:-len('.json')]
                  for entry in _requests_dir().iterdir()
                  if entry.name.endswith('.json'))


def sample_request_text(flavour):
    """The sample InstantiateVnfRequest body of ``flavour``, as shipped."""
    entry = _requests_dir() / ('%s.json' % flavour)
    if not entry.is_file():
        raise KeyError('no sample request for flavour %r (there are: %s)'
                       % (flavour, ', '.join(sample_flavours())))
    return entry.read_text(encoding='utf-8')


def sample_request(flavour, addons=False):
    """The sample InstantiateVnfRequest body of ``flavour`` as a dict.

    ``addons``: its add-on variant instead, the base sample with the
    flavour's overlay (:func:`sample_overlay`) laid over it.
    """
    body = json.loads(sample_request_text(flavour))
    if addons:
        body = overlaid(body, sample_overlay(flavour))
    return body


# -- the add-on variants of the sample requests ----------------------------
#
# ``samples/requests/addons/<flavour>.json`` holds only what the variant
# adds to ``samples/requests/<flavour>.json`` (Helm, a private registry
# connection, a CNI preset with Multus), so the base sample exists once
# and a variant follows every change made to it.

def _addons_dir():
    return _requests_dir() / 'addons'


def addon_flavours():
    """Flavours whose sample request has an add-on variant, sorted."""
    return sorted(entry.name[:-len('.json')]
                  for entry in _addons_dir().iterdir()
                  if entry.name.endswith('.json'))


def sample_overlay(flavour):
    """What the add-on variant of ``flavour``'s sample adds to it."""
    entry = _addons_dir() / ('%s.json' % flavour)
    if not entry.is_file():
        raise KeyError('no add-on variant of the sample request for flavour '
                       '%r (there are: %s)'
                       % (flavour, ', '.join(addon_flavours())))
    return json.loads(entry.read_text(encoding='utf-8'))


def overlaid(base, overlay, where=''):
    """A copy of the JSON object ``base`` with ``overlay``'s keys added,
    objects merged key by key. An overlay only adds: a key that ``base``
    already has with a value other than an object raises ValueError."""
    result = copy.deepcopy(base)
    for key, value in overlay.items():
        path = '%s.%s' % (where, key) if where else key
        if key not in result:
            result[key] = copy.deepcopy(value)
        elif isinstance(result[key], dict) and isinstance(value, dict):
            result[key] = overlaid(result[key], value, path)
        else:
            raise ValueError('the overlay would replace %s of the base '
                             'sample; it may only add' % path)
    return result


# -- the Kubernetes versions the shipped install script installs -----------

_MINORS_LINE = re.compile(r'^readonly SUPPORTED_MINORS="([0-9 ]+)"$', re.M)
VERSION_NUMBER = r'(?:0|[1-9][0-9]{0,2})'


def minors_of_script(text, name=INSTALL_SCRIPT):
    """The sorted minors of a script's ``SUPPORTED_MINORS`` line."""
    match = _MINORS_LINE.search(text)
    if match is None or not match.group(1).split():
        raise RuntimeError('%s has no readonly SUPPORTED_MINORS="..." line'
                           % name)
    return tuple(sorted(int(minor) for minor in match.group(1).split()))


# Kubernetes 1.x minors the install script can install (pkgs.k8s.io).
SUPPORTED_MINORS = minors_of_script(
    script(INSTALL_SCRIPT).read_text(encoding='utf-8'))
# For the [k8s_mgmt] kubernetes_version option (no "v", like the default).
VERSION_OPTION_REGEX = r'\A1\.(?:%s)(?:\.%s)?\Z' % (
    '|'.join(str(minor) for minor in SUPPORTED_MINORS), VERSION_NUMBER)


def supported_range(minors=SUPPORTED_MINORS):
    """'1.30 to 1.37' (or '1.30, 1.32' with gaps), for messages and help."""
    if minors == tuple(range(minors[0], minors[-1] + 1)):
        return '1.%d to 1.%d' % (minors[0], minors[-1])
    return ', '.join('1.%d' % minor for minor in minors)


# Where a script declares what it offers beyond its first version.
_FEATURES = re.compile(rb'#\s*k8s-mgmt-features:\s*(.*?)\s*$')
FEATURE_LINES = 40


def script_features(data):
    """The words of the ``# k8s-mgmt-features: a b`` line in the header of
    a script's bytes ``data`` (a VNF package may ship an older copy than
    this distribution's, without some options)."""
    for line in data.splitlines()[:FEATURE_LINES]:
        match = _FEATURES.match(line)
        if match:
            return frozenset(match.group(1).decode('ascii',
                                                   'replace').split())
    return frozenset()
