"""What the distribution carries besides Python modules.

The node scripts (``k8s_mgmt/scripts/``), the sample VNF package source
(``k8s_mgmt/samples/vnf_package/``) and the sample InstantiateVnfRequest
bodies (``k8s_mgmt/samples/requests/``) live inside the package, so a
checkout, an editable install and a wheel find them the same way: through
:mod:`importlib.resources`, never through paths relative to the source tree.
Every value returned here is a ``Traversable`` (a ``pathlib.Path`` for any
installation on a filesystem), read with ``read_bytes``/``iterdir``.
"""

import importlib.resources
import json

INSTALL_SCRIPT = 'install_k8s_cluster.sh'
LB_SCRIPT = 'configure_lb.sh'
# The storage server (NFS exports on its Cinder volume) and the NFS clients.
STORAGE_SCRIPT = 'setup_storage.sh'
# HAProxy on the kubespray mode's external load balancer VM.
EXTERNAL_LB_SCRIPT = 'configure_external_lb.sh'
# The helpers the install and LB scripts source from their own directory.
SCRIPT_LIBRARY = 'k8s_mgmt_lib.sh'
SCRIPTS = (SCRIPT_LIBRARY, INSTALL_SCRIPT, LB_SCRIPT, STORAGE_SCRIPT,
           EXTERNAL_LB_SCRIPT)


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


def sample_request(flavour):
    """The sample InstantiateVnfRequest body of ``flavour`` as a dict."""
    return json.loads(sample_request_text(flavour))
