"""The Kubernetes version a VNF package names: one line, ``1.36`` or
``1.36.1``, in ``Files/k8s-mgmt/kubernetes_version`` (written by ``k8s-mgmt
package build --kubernetes-version``). It is an instantiate's default, and
under Tacker's v2 API what a change of an instance's package to it
upgrades to."""

import os

from k8s_mgmt import exceptions
from k8s_mgmt import kube_versions

FILE = 'Files/k8s-mgmt/kubernetes_version'


def read(package_dir):
    """The Kubernetes version the package at ``package_dir`` names, or
    None; ValidationError naming the file when it holds no version."""
    if not package_dir:
        return None
    path = os.path.join(package_dir, *FILE.split('/'))
    try:
        with open(path, 'rb') as handle:
            raw = handle.read(200)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise exceptions.ValidationError([(
            FILE, 'cannot be read: %s' % (err.strerror or err))])
    text = raw.decode('ascii', 'replace').strip()
    if kube_versions.parse(text) is None:
        raise exceptions.ValidationError([(
            FILE, 'not a Kubernetes version such as 1.36 or 1.36.1: %r'
            % text[:40])])
    return text
