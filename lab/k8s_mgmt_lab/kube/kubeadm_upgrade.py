"""kubeadm stand-in: ``upgrade plan [VERSION]``, ``upgrade apply VERSION
--yes`` and ``upgrade node``.

The stand-in's version is its package's (the wrapper sets it), so the
install script's apt path decides which kubeadm runs, as on a real node.
What kubeadm refuses is refused, in messages modelled on kubeadm's own
(not verbatim):

* ``apply`` to a version newer than this kubeadm, more than one minor
  above the cluster's (kubeadm-config), or older than the cluster's
  (``plan`` says the same, exit status 1);
* ``node`` on a control-plane node whose kubeadm is newer than the
  cluster (the control plane is upgraded first, by ``apply``).

``apply`` rewrites the API server stand-in's version (its config and its
static pod manifest's image tag), restarts it, waits until it answers,
and records the version in kubeadm-config; ``node`` on another master
brings its API server to this kubeadm's version; on a worker it has
nothing to do (the kubelet, a package, is upgraded by apt and restarted
by the caller). An upgrade takes ``upgrade_delay`` seconds as a whole.
On a control-plane node both renew the certificates kubeadm manages, as
kubeadm does, unless given ``--certificate-renewal=false``.
"""

import json
import os

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import certs
from k8s_mgmt_lab.kube import controlplane as cp
from k8s_mgmt_lab.kube import faults
from k8s_mgmt_lab.kube import systemctl

CONFIG_MAP = '/api/v1/namespaces/kube-system/configmaps/kubeadm-config'
APISERVER_CONFIG = kube.STANDIN_DIR + '/apiserver.json'
APISERVER_MANIFEST = os.path.join(kube.MANIFESTS_DIR, 'kube-apiserver.yaml')


def parse(text):
    """(minor, patch) of v1.MINOR.PATCH, else Failure."""
    parts = (text or '').strip().strip('"').lstrip('v').split('.')
    if len(parts) != 3 or parts[0] != '1' or not all(
            p.isdigit() for p in parts):
        raise cp.Failure('%r is not a Kubernetes version (v1.MINOR.PATCH)'
                         % text)
    return int(parts[1]), int(parts[2])


def _show(version):
    return 'v1.%d.%d' % version


# How long a request cut by the endpoint (an HAProxy reload closes kept
# connections) is tried again, as kubeadm's client retries such errors.
RETRY_SECONDS = 30.0


def _retried(request, *args):
    """``request(*args)``, again while the connection is closed or reset
    without an answer."""
    last = None
    for _ in Poll(RETRY_SECONDS, first=0.2, maximum=2.0):
        try:
            return request(*args)
        except (ConnectionError, TimeoutError) as err:
            last = err
    raise OSError('the API did not answer in %.0f s: %s'
                  % (RETRY_SECONDS, last))


def cluster_config(api):
    """(the kubeadm-config ConfigMap, its ClusterConfiguration)."""
    import yaml
    status, config_map = _retried(api.request, 'GET', CONFIG_MAP)
    if status != 200:
        raise cp.Failure('could not read kubeadm-config (HTTP %s): is this '
                         'a kubeadm cluster?' % status)
    return config_map, yaml.safe_load(
        (config_map.get('data') or {}).get('ClusterConfiguration') or '{}')


def cluster_version(api):
    _map, config = cluster_config(api)
    return parse(config.get('kubernetesVersion'))


def set_cluster_version(api, version):
    import yaml
    config_map, config = cluster_config(api)
    config['kubernetesVersion'] = _show(version)
    config_map['data']['ClusterConfiguration'] = yaml.safe_dump(config)
    _retried(api.call, 'PUT', CONFIG_MAP, config_map)


def is_control_plane():
    return os.path.exists(APISERVER_MANIFEST)


def upgrade_control_plane(version):
    """This master's API server stand-in at ``version``: config, manifest,
    restart, answering."""
    config = kube.read_json(APISERVER_CONFIG) or {}
    if config.get('kubernetes_version') == _show(version):
        print('[upgrade/staticpods] kube-apiserver runs %s already'
              % _show(version))
        return
    config['kubernetes_version'] = _show(version)
    kube.write_file(APISERVER_CONFIG, json.dumps(config), 0o600)
    cp.write_manifest('kube-apiserver',
                      systemctl.service_argv('kube-apiserver'),
                      version=_show(version))
    print('[upgrade/staticpods] Moving new manifest to "%s"'
          % APISERVER_MANIFEST)
    if systemctl.restart('kube-apiserver') != 0:
        raise cp.Failure('could not restart kube-apiserver after its '
                         'upgrade (see %s/kube-apiserver.log)'
                         % systemctl.LOG_DIR)
    cp.wait_local_apiserver()
    print('[upgrade/staticpods] Component "kube-apiserver" upgraded '
          'successfully!')


def _fail_if_faulted():
    """An injected kubeadm-upgrade fault: the upgrade's static-pod (or,
    on a worker, kubelet-config) phase fails, nothing of it done."""
    if faults.active('kubeadm-upgrade'):
        print('[upgrade] Upgrading the node')
        faults.note('kubeadm-upgrade')
        raise cp.Failure('[upgrade/staticpods] FATAL: timed out waiting '
                         'for the condition')


def _renew_unless_told(args):
    if '--certificate-renewal=false' not in args:
        certs.renew_in_upgrade()


def refusal(target, mine, current):
    """What kubeadm says when it will not upgrade the cluster at
    ``current`` to ``target`` with this kubeadm (``mine``), or None."""
    if target > mine:
        return ('[upgrade/version] FATAL: the version to upgrade to "%s" is '
                'higher than the kubeadm version "%s". Upgrade kubeadm first '
                'using the tool you used to install kubeadm'
                % (_show(target), _show(mine)))
    if target[0] > current[0] + 1:
        return ('[upgrade/version] FATAL: the version to upgrade to "%s" is '
                'too high; kubeadm can upgrade only 1 minor version at a '
                'time' % _show(target))
    if target < current:
        return ('[upgrade/version] FATAL: the version to upgrade to "%s" is '
                'lower than the cluster version "%s". Downgrades are not '
                'supported yet' % (_show(target), _show(current)))
    return None


def plan(words, admin_api):
    """``kubeadm upgrade plan [VERSION]``: the versions, and whether
    ``apply`` would take the cluster there (exit status 1 if not)."""
    mine = parse(kube.kubernetes_version())
    target = parse(words[2]) if len(words) > 2 else mine
    current = cluster_version(admin_api())
    print('[upgrade/versions] Cluster version: %s' % _show(current))
    print('[upgrade/versions] kubeadm version: %s' % _show(mine))
    print('[upgrade/versions] Target version: %s' % _show(target))
    refused = refusal(target, mine, current)
    if refused:
        print(refused)
        return 1
    if target == current:
        print('Awesome, you\'re up-to-date! Enjoy!')
        return 0
    print('You can now apply the upgrade by executing the following '
          'command:\n\n\tkubeadm upgrade apply %s' % _show(target))
    return 0


def apply(args, words, admin_api):
    if len(words) < 3:
        raise cp.Failure('upgrade apply needs the version to upgrade to')
    if '--yes' not in args and '-y' not in args:
        raise cp.Failure('the lab stand-in has no terminal to ask on: '
                         'give --yes')
    target = parse(words[2])
    if not is_control_plane():
        raise cp.Failure('[upgrade/apply] FATAL: this node runs no control '
                         'plane: run "kubeadm upgrade node" here')
    api = admin_api()
    refused = refusal(target, parse(kube.kubernetes_version()),
                      cluster_version(api))
    if refused:
        raise cp.Failure(refused)
    print('[upgrade/version] You have chosen to change the cluster version '
          'to "%s"' % _show(target))
    _fail_if_faulted()
    _renew_unless_told(args)
    upgrade_control_plane(target)
    set_cluster_version(api, target)
    cp.model_duration('upgrade')
    print('[upgrade/successful] SUCCESS! Your cluster was upgraded to '
          '"%s". Enjoy!' % _show(target))
    return 0


def node(args, admin_api):
    mine = parse(kube.kubernetes_version())
    _fail_if_faulted()
    if not is_control_plane():
        cp.model_duration('upgrade')
        print('[upgrade] Skipping phase. Not a control plane node.')
        print('[upgrade] The configuration for this node was successfully '
              'updated!')
        return 0
    current = cluster_version(admin_api())
    if mine > current:
        raise cp.Failure(
            '[upgrade/node] FATAL: the control plane runs %s: this node\'s '
            'kubeadm %s may not take it beyond that (upgrade the control '
            'plane first, with "kubeadm upgrade apply")'
            % (_show(current), _show(mine)))
    _renew_unless_told(args)
    upgrade_control_plane(mine)
    cp.model_duration('upgrade')
    print('[upgrade] The control plane instance for this node was '
          'successfully updated!')
    return 0


def run(args, words, admin_api):
    if words[1:2] == ['apply']:
        return apply(args, words, admin_api)
    if words[1:2] == ['node']:
        return node(args, admin_api)
    if words[1:2] == ['plan']:
        return plan(words, admin_api)
    raise cp.Failure('the lab stand-in does not support "kubeadm %s"'
                     % ' '.join(args))
