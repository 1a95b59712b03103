"""The ``kubernetes`` part of ``lab status``: read on the host, from the
admin kubeconfig the kubeadm stand-in wrote inside a master VM, through the
official ``kubernetes`` client (JSON, as the driver reads it)."""

import json
import os
import shutil
import tempfile

from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import client as client_mod
from k8s_mgmt_lab.kube import pki

KUBECONFIG_NAME = 'kubeconfig'
STAND_INS = ('kubeadm, kubelet, kubectl (installed by apt from the lab\'s '
             'signed Kubernetes repository, which is real), systemctl and '
             'kube-apiserver are lab stand-ins (k8s_mgmt_lab.kube); '
             'containerd (Debian\'s), etcd, haproxy and keepalived are '
             'real')


def find_admin_conf(vm_dirs):
    """The admin.conf in the first master VM's root that has one."""
    for vm_dir in vm_dirs:
        path = os.path.join(vm_dir or '', 'upper',
                            kube.ADMIN_CONF.lstrip('/'))
        if os.path.isfile(path):
            return path
    return None


def _client_conf(kubeconfig):
    import kubernetes.client as kclient
    server, ca_pem, token = pki.read_kubeconfig(kubeconfig)
    ca = tempfile.NamedTemporaryFile('wb', suffix='.crt', delete=False)
    ca.write(ca_pem)
    ca.close()
    conf = kclient.Configuration()
    conf.host = server
    conf.ssl_ca_cert = ca.name
    conf.api_key = {'authorization': token}
    conf.api_key_prefix = {'authorization': 'Bearer'}
    return kclient, conf, ca.name


def _nodes(kclient, conf):
    core = kclient.CoreV1Api(kclient.ApiClient(conf))
    out = []
    for node in core.list_node(_request_timeout=10).items:
        labels = node.metadata.labels or {}
        ready = next((c.status for c in node.status.conditions or ()
                      if c.type == 'Ready'), 'Unknown')
        roles = sorted(k.split('/', 1)[1] for k in labels
                       if k.startswith('node-role.kubernetes.io/'))
        out.append({'name': node.metadata.name, 'ready': ready == 'True',
                    'roles': roles, 'labels': labels})
    return out


def persistent_volumes(kclient, conf):
    """[{name, phase, server, path, claim}] sorted by name: ``claim`` is
    the claimRef as namespace/name (kept while Released), else None."""
    core = kclient.CoreV1Api(kclient.ApiClient(conf))
    out = []
    for pv in core.list_persistent_volume(_request_timeout=10).items:
        nfs, ref = pv.spec.nfs, pv.spec.claim_ref
        out.append({'name': pv.metadata.name,
                    'phase': pv.status.phase if pv.status else None,
                    'server': nfs.server if nfs else None,
                    'path': nfs.path if nfs else None,
                    'claim': '%s/%s' % (ref.namespace, ref.name)
                    if ref and ref.name else None})
    return sorted(out, key=lambda pv: pv['name'])


def _etcd_members(kubeconfig):
    api = client_mod.Client.from_kubeconfig(kubeconfig, timeout=10)
    members = api.call('GET', '/apis/standin.k8s-mgmt.lab/v1/etcdmembers')
    return [{'name': m['name'], 'peer_urls': m['peer_urls'],
             'client_urls': m['client_urls']} for m in members['members']]


def cluster_report(state_dir, master_vm_dirs):
    """{kubeconfig, server, nodes, persistent_volumes, etcd_members,
    stand_ins}, or None when no cluster was made; ``error`` instead of the
    live parts when the API does not answer."""
    source = find_admin_conf(master_vm_dirs)
    if source is None:
        return None
    kubeconfig = os.path.join(state_dir, KUBECONFIG_NAME)
    shutil.copyfile(source, kubeconfig)
    os.chmod(kubeconfig, 0o600)
    report = {'kubeconfig': kubeconfig,
              'server': pki.read_kubeconfig(kubeconfig)[0],
              'stand_ins': STAND_INS}
    ca_file = None
    try:
        kclient, conf, ca_file = _client_conf(kubeconfig)
        report['nodes'] = _nodes(kclient, conf)
        report['persistent_volumes'] = persistent_volumes(kclient, conf)
        report['etcd_members'] = _etcd_members(kubeconfig)
    except Exception as err:  # status must report, not crash
        report['error'] = '%s: %s' % (type(err).__name__,
                                      str(err).splitlines()[0][:300])
    finally:
        if ca_file:
            os.unlink(ca_file)
    return report


if __name__ == '__main__':  # handy: python -m ... STATE_DIR VM_DIR...
    import sys
    print(json.dumps(cluster_report(sys.argv[1], sys.argv[2:]), indent=1))
