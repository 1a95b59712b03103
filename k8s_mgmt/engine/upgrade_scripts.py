"""The install script's upgrade modes as calls (k8s_mgmt_upgrade.sh):
``upgrade-check`` on every node, then ``upgrade-apply`` on the first
master and ``upgrade-node`` on the others. The target's minor names the
repository directory (``-k``) and the exact version is pinned (``-V``);
the request's repository and its key as for install; proxies on stdin.
What each mode prints is read back here (:class:`UpgradeCheck`,
:class:`UpgradeReport`); a problem names the node and the field.
"""

import dataclasses
from typing import Optional

from k8s_mgmt.engine import script_output
from k8s_mgmt.engine import scripts
from k8s_mgmt import kube_versions as versions


def upgrade_check_call(node, params, target):
    """upgrade-check: what ``node`` runs and what the ``target``'s minor
    (a kube_versions.Version) offers; changes nothing."""
    argv = (['upgrade-check', '-k', target.minor_text] +
            scripts.repository_options(params) +
            ['-w', str(scripts.SCRIPT_WAIT_SECONDS)])
    return scripts.ScriptCall(node.name, scripts.INSTALL, tuple(argv),
                              tuple(scripts.proxy_secrets(params)))


def upgrade_call(node, params, target, apply):
    """upgrade-apply (``apply``: the first master) or upgrade-node: the
    node's kubeadm, its part of the cluster, kubelet and kubectl at
    ``target`` (with its patch)."""
    argv = ['upgrade-apply' if apply else 'upgrade-node', '-k',
            target.minor_text, '-V', str(target), '-H', node.name]
    if apply:
        argv += ['-a', node.nic_ip]
    argv += scripts.repository_options(params) + [
        '-w', str(scripts.SCRIPT_WAIT_SECONDS)]
    return scripts.ScriptCall(node.name, scripts.INSTALL, tuple(argv),
                              tuple(scripts.proxy_secrets(params)))


def certs_check_call(node, params):
    """certs-check on a master: kubeadm's expiry tables on stdout."""
    return scripts.ScriptCall(node.name, scripts.INSTALL, (
        'certs-check', '-k', scripts.minor_of(params), '-w',
        str(scripts.SCRIPT_WAIT_SECONDS)))


def certs_renew_call(node, params):
    """certs-renew on a master: kubeadm certs renew all, its control
    plane's static pods restarted, then the tables as certs-check."""
    return scripts.ScriptCall(node.name, scripts.INSTALL, (
        'certs-renew', '-k', scripts.minor_of(params), '-w',
        str(scripts.SCRIPT_WAIT_SECONDS)))


def _version(data, key, problems, required=False):
    """A Version from data[key] ("" or absent: None when not
    ``required``)."""
    value = data.get(key)
    if value in (None, '') and not required:
        return None
    found = versions.parse(value) if isinstance(value, str) else None
    if found is None or found.patch is None:
        problems.append('%r is not a Kubernetes version' % key)
    return found


@dataclasses.dataclass(frozen=True)
class UpgradeCheck:
    """What ``upgrade-check`` printed for one node."""

    node: str
    kubeadm: Optional[versions.Version]
    kubelet: Optional[versions.Version]
    kubectl: Optional[versions.Version]
    control_plane: Optional[versions.Version]    # None on a worker
    offered: tuple                               # Versions, oldest first
    apt_error: Optional[str]

    @classmethod
    def from_output(cls, node, stdout):
        step = 'read upgrade-check\'s report'
        data = script_output.json_object(node, step, stdout)
        problems = []
        found = {key: _version(data, key, problems) for key in (
            'kubeadm', 'kubelet', 'kubectl', 'control_plane')}
        offered = data.get('offered')
        if not isinstance(offered, list) or not all(
                isinstance(v, str) for v in offered):
            problems.append("'offered' is not a list of versions")
            offered = []
        parsed = tuple(versions.parse(v) for v in offered)
        if None in parsed:
            problems.append("'offered' is not a list of versions")
        error = data.get('apt_error')
        if not isinstance(error, str):
            problems.append("'apt_error' is not a string")
        if problems:
            raise script_output.output_error(node, step, '; '.join(problems))
        return cls(node=node, offered=tuple(sorted(
            parsed, key=lambda v: v.key)), apt_error=error or None, **found)


@dataclasses.dataclass(frozen=True)
class UpgradeReport:
    """What ``upgrade-apply``/``upgrade-node`` printed."""

    node: str
    version: versions.Version
    kubeadm: str          # applied or already
    packages: str         # installed or kept

    @classmethod
    def from_output(cls, node, stdout):
        step = 'read the upgrade\'s report'
        data = script_output.json_object(node, step, stdout)
        problems = []
        version = _version(data, 'version', problems, required=True)
        words = {'kubeadm': ('applied', 'already'),
                 'packages': ('installed', 'kept')}
        for key, allowed in words.items():
            if data.get(key) not in allowed:
                problems.append('%r is not %s' % (key, ' or '.join(allowed)))
        if problems:
            raise script_output.output_error(node, step, '; '.join(problems))
        return cls(node=node, version=version, kubeadm=data['kubeadm'],
                   packages=data['packages'])
