"""The CNI presets a request may name (``cni.preset``) and Multus, each
pinned: the release, the manifest's path under GitHub's raw file host
(or under an operator's mirror of it, ``cni.mirror``) and its SHA-256,
which the install script checks before it applies anything.

The checksums are those of the files at the release tags of the
projects' own repositories (raw.githubusercontent.com serves them byte
for byte). The install script changes a checked manifest in one place
each, and says so in its log:

* flannel's net-conf ``"Network"`` becomes the cluster's pod CIDR (its
  manifest hard-wires 10.244.0.0/16);
* Multus's daemonset names the floating ``snapshot`` image even at a
  release tag; it is pinned to the release's own image tag.

Calico reads the pod CIDR from kubeadm's configuration itself.

Cilium is no preset: it ships no manifest, only a Helm chart and its
own CLI; ``cni.manifest`` with a manifest rendered from its chart (and
its SHA-256) installs it.
"""

import dataclasses
import ipaddress
from typing import Optional

# Where the pinned manifests are fetched from unless ``cni.mirror``
# names an operator's copy laid out the same way.
UPSTREAM = 'https://raw.githubusercontent.com/'


@dataclasses.dataclass(frozen=True)
class Manifest:
    name: str
    version: str
    path: str                     # under UPSTREAM (or the mirror)
    sha256: str
    # The install script's edit of a CNI manifest after its checksum
    # (its -N): 'flannel-network', or None. Multus's image pin is -T.
    edit: Optional[str] = None
    # The longest pod CIDR prefix the CNI can split among nodes, or None.
    max_pod_prefix: Optional[int] = None
    why_prefix: str = ''

    def url(self, mirror=None):
        return (mirror or UPSTREAM) + self.path


PRESETS = {
    'calico': Manifest(
        'calico', '3.31.7', 'projectcalico/calico/v3.31.7/manifests/'
        'calico.yaml',
        'd6d8a489a4ed8e5b8efd8b339047b496ca657b55ee2e3618e791507b0a853e8d',
        max_pod_prefix=24,
        why_prefix='Calico hands out the pod network in /26 blocks, one '
                   'or more per node'),
    'flannel': Manifest(
        'flannel', '0.28.9', 'flannel-io/flannel/v0.28.9/Documentation/'
        'kube-flannel.yml',
        'e875824be2f552b45711dbda91af81b17eb961d00025d914d9fef18fad8f09c0',
        edit='flannel-network', max_pod_prefix=23,
        why_prefix='flannel gives each node a /24 of the pod network'),
}

MULTUS = Manifest(
    'multus', '4.3.0', 'k8snetworkplumbingwg/multus-cni/v4.3.0/deployments/'
    'multus-daemonset.yml',
    '290c502f3923864392f0bd7dd5f03e23262565853100c0ebfd7b35cc79ec565a')

# Names a request may give that are no preset, and why.
NOT_PRESETS = {
    'cilium': 'Cilium ships no manifest, only a Helm chart and its CLI: '
              'render one (helm template or cilium install --dry-run) and '
              'give it as cni.manifest with its sha256',
    'none': 'to install no CNI, leave cni out and set [k8s_mgmt] '
            'cni_manifest = none in the conductor\'s configuration',
}


def pod_cidr_problem(preset, pod_cidr):
    """Why ``pod_cidr`` (a network string) does not suit ``preset``, or
    None."""
    network = ipaddress.ip_network(pod_cidr)
    if network.version != 4:
        return 'the %s preset is installed for IPv4 only' % preset.name
    if preset.max_pod_prefix and network.prefixlen > preset.max_pod_prefix:
        return '%s is too small for the %s preset (%s): give /%d or ' \
               'larger' % (pod_cidr, preset.name, preset.why_prefix,
                           preset.max_pod_prefix)
    return None


def multus_image_tag():
    """The image tag the script pins Multus's daemonset to."""
    return 'v' + MULTUS.version
