"""Kubernetes versions and the skew rules an upgrade must keep.

What kubeadm and Kubernetes' version skew policy allow, as data:

* the control plane moves one minor at a time (``CONTROL_PLANE_STEP``)
  and never back;
* a kubelet is never newer than the API server, and at most
  ``KUBELET_MAX_BEHIND`` minors older (three since Kubernetes 1.28).

Versions are read from what the tools print: ``v1.36.1`` (kubeadm,
kubelet, the API server's ``gitVersion``, image tags), ``1.36.1``,
``1.36`` (a minor, no patch) and Debian package versions ``1.36.1-1.1``.
Only major version 1 exists.
"""

import dataclasses
import re
from typing import Optional

CONTROL_PLANE_STEP = 1
KUBELET_MAX_BEHIND = 3

_VERSION = re.compile(r'v?1\.(0|[1-9][0-9]{0,2})(?:\.(0|[1-9][0-9]{0,3}))?'
                      r'(?:-[0-9A-Za-z.+~-]*)?')


@dataclasses.dataclass(frozen=True)
class Version:
    """1.MINOR[.PATCH]; ``patch`` None names a minor (any patch)."""

    minor: int
    patch: Optional[int] = None

    def __str__(self):
        return ('1.%d' % self.minor if self.patch is None
                else '1.%d.%d' % (self.minor, self.patch))

    @property
    def key(self):
        """For comparisons: a minor counts as its patch 0."""
        return (self.minor, self.patch or 0)

    @property
    def minor_text(self):
        return '1.%d' % self.minor

    @property
    def tag(self):
        """As kubeadm and image tags write it: v1.36.1."""
        return 'v' + str(self)

    def with_patch(self, patch):
        return Version(self.minor, patch)

    def same_release(self, other):
        """Equal, a minor counting as any of its patches."""
        return self.minor == other.minor and (
            self.patch is None or other.patch is None or
            self.patch == other.patch)


def parse(text):
    """The Version ``text`` names, or None when it names none."""
    if not isinstance(text, str):
        return None
    found = _VERSION.fullmatch(text.strip())
    if found is None:
        return None
    patch = found.group(2)
    return Version(int(found.group(1)),
                   None if patch is None else int(patch))


def control_plane_problem(lowest, highest, target):
    """Why the control plane, its masters at ``lowest`` to ``highest``,
    cannot move to ``target``; None when it can (or is there already)."""
    if target.minor > lowest.minor + CONTROL_PLANE_STEP:
        skipped = ', '.join('1.%d' % minor for minor in range(
            lowest.minor + 1, target.minor))
        return ('the cluster runs %s; %s skips %s: kubeadm upgrades one '
                'minor at a time, so upgrade to 1.%d first'
                % (lowest, target, skipped, lowest.minor + 1))
    if target.key < highest.key:
        return ('the cluster runs %s; %s is older, and kubeadm does not '
                'downgrade' % (highest, target))
    return None


def kubelet_problem(node, kubelet, target):
    """Why ``node``'s kubelet at ``kubelet`` breaks the skew policy once
    the control plane runs ``target``; None when it does not."""
    if kubelet.key > target.key:
        return ('%s\'s kubelet %s is newer than the target %s: a kubelet '
                'may never be newer than the API server'
                % (node, kubelet, target))
    behind = target.minor - kubelet.minor
    if behind > KUBELET_MAX_BEHIND:
        return ('%s\'s kubelet %s would be %d minors behind %s (%d are '
                'allowed): upgrade to 1.%d first, which brings every node '
                'to the control plane\'s version'
                % (node, kubelet, behind, target.minor_text,
                   KUBELET_MAX_BEHIND, target.minor - 1))
    return None


def newest(versions):
    """The newest of ``versions`` (package or tool versions), or None."""
    parsed = [v for v in (parse(t) for t in versions) if v is not None]
    return max(parsed, key=lambda v: v.key, default=None)
