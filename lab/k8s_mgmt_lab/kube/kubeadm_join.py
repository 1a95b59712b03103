"""``kubeadm join`` of the stand-in: discovery with the pinned CA hash, the
bootstrap token checked by the cluster, and for a control-plane join the
uploaded certificates, ``etcdctl member add`` and a new etcd member."""

import os
import re
import subprocess
import time

from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import client as client_mod
from k8s_mgmt_lab.kube import controlplane as cp
from k8s_mgmt_lab.kube import faults
from k8s_mgmt_lab.kube import pki

PREFLIGHT = 'preflight: couldn\'t validate the identity of the API Server: '
STANDIN_API = '/apis/standin.k8s-mgmt.lab/v1/'
DISCOVERY_SECONDS = 60.0
# kubeadm's EtcdAPICallRetryInterval: how often it asks etcd again to add
# the member while etcd refuses ("unhealthy cluster").
MEMBER_ADD_RETRY = 0.5


def discover_ca(server, pinned):
    """The cluster CA from cluster-info, accepted only if its key is pinned."""
    anonymous = client_mod.Client(server, None, None, timeout=5.0)
    found = {}

    def fetched():
        try:
            status, answer = anonymous.request(
                'GET', '/api/v1/namespaces/kube-public/configmaps/'
                'cluster-info')
        except OSError:
            return False
        if status == 200:
            found['info'] = answer
        return status == 200
    cp.poll('cluster-info from %s' % server, fetched, DISCOVERY_SECONDS)
    path = '/run/k8s-mgmt-cluster-info.%d' % os.getpid()
    kube.write_file(path, found['info']['data']['kubeconfig'], 0o600)
    try:
        _server, ca_pem, _token = pki.read_kubeconfig(path)
    finally:
        os.unlink(path)
    actual = pki.ca_cert_hash(ca_pem)
    if actual not in pinned:
        raise cp.Failure(PREFLIGHT + 'cluster CA found in cluster-info '
                         'ConfigMap is invalid: none of the public keys "%s" '
                         'are pinned' % actual)
    return ca_pem


def node_credential(api, node_name):
    status, answer = api.request('POST', STANDIN_API + 'nodecredentials',
                                 {'node': node_name})
    if status == 401:
        raise cp.Failure(PREFLIGHT + 'the bootstrap token was rejected by '
                         'the cluster (401 Unauthorized): it is wrong or '
                         'expired')
    if status != 201:
        raise client_mod.APIFailure(status, answer)
    return answer['token']


def download_certs(api, certificate_key):
    status, secret = api.request(
        'GET', '/api/v1/namespaces/kube-system/secrets/kubeadm-certs')
    if status == 404:
        raise cp.Failure('control-plane-prepare: no uploaded certificates '
                         '(Secret kube-system/kubeadm-certs); run "kubeadm '
                         'init phase upload-certs --upload-certs" first')
    if status != 200:
        raise client_mod.APIFailure(status, secret)
    expires = (secret['metadata'].get('annotations') or {}).get(
        'k8s-mgmt.lab/expires')
    if expires and kube.parse_rfc3339(expires) < kube.now():
        raise cp.Failure('control-plane-prepare: the uploaded certificates '
                         'expired at %s; upload them again' % expires)
    try:
        return pki.unseal(secret['data'], certificate_key)
    except ValueError as err:
        raise cp.Failure('control-plane-prepare: error downloading the '
                         'secret: %s (wrong certificate key?)' % err)


def add_etcd_member(api, name, ip):
    """``etcdctl member add`` on the running cluster; the initial-cluster
    string the new member must start with."""
    members = api.call('GET', STANDIN_API + 'etcdmembers')['members']
    peer = 'http://%s:%d' % (ip, kube.ETCD_PEER_PORT)
    urls = [u for m in members for u in m['client_urls']]
    if any(peer in m['peer_urls'] for m in members):  # resumed join
        return ','.join('%s=%s' % (m['name'] or name, m['peer_urls'][0])
                        for m in members)
    argv = ['etcdctl', '--endpoints=' + ','.join(urls), 'member', 'add',
            name, '--peer-urls=' + peer]
    result = {}

    def added():
        # etcd refuses ("unhealthy cluster") until the last new member has
        # been connected for a few seconds; kubeadm retries the same way.
        proc = subprocess.run(argv, capture_output=True, text=True,
                              env=dict(os.environ, ETCDCTL_API='3'),
                              timeout=30)
        result['proc'] = proc
        if proc.returncode != 0 and 'unhealthy cluster' not in proc.stderr:
            raise cp.Failure('etcdctl member add failed: %s'
                             % proc.stderr.strip()[-500:])
        return proc.returncode == 0
    cp.poll('etcd to accept member %s' % name, added,
            every=MEMBER_ADD_RETRY)
    proc = result['proc']
    match = re.search(r'ETCD_INITIAL_CLUSTER="([^"]+)"', proc.stdout)
    if not match:
        raise cp.Failure('etcdctl member add printed no initial cluster')
    print('[etcd] Added member %s (%s) with etcdctl' % (name, peer))
    return match.group(1)


def join_control_plane(api, cfg, name, ip, server):
    key = (cfg.get('controlPlane') or {}).get('certificateKey')
    if not key:
        raise cp.Failure('controlPlane.certificateKey is missing')
    files = download_certs(api, key)
    pki.write_ca(files['ca.crt'], files['ca.key'])
    print('[download-certs] Downloaded the certificates')
    # kubeadm's order: the member add comes in control-plane-join, after
    # kubelet-start; etcd takes it only once the member added before it
    # has been connected for its health interval.
    cp.model_before_member_add()
    initial = add_etcd_member(api, name, ip)
    added_at = time.monotonic()
    store = cp.start_etcd(name, ip, initial, 'existing')
    cp.write_admin_conf(store, server)
    cp.start_apiserver(ip, name, server.split('//')[1].rsplit(':', 1)[0])
    print('[control-plane] kube-apiserver (stand-in) is ready')
    return store, added_at


def fail_kubelet_start():
    """An injected kubeadm-join fault: after discovery (the CA is on disk,
    a leftover a re-run must reset), the kubelet never comes up."""
    print('[kubelet-start] Writing kubelet configuration to file '
          '"/var/lib/kubelet/config.yaml"')
    print('[kubelet-start] Starting the kubelet')
    print('[kubelet-check] The kubelet is not healthy after 4m0s')
    faults.note('kubeadm-join')
    raise cp.Failure('kubelet-start: timed out waiting for the condition')


def join(args, config_path):
    if not config_path:
        raise cp.Failure('join needs --config FILE')
    cfg = cp.load_config(config_path).get('JoinConfiguration')
    if cfg is None:
        raise cp.Failure('%s holds no JoinConfiguration' % config_path)
    if 'phase' in args:  # join phase control-plane-join all: resume
        for service in ('etcd', 'kube-apiserver', 'kubelet'):
            cp.start_service(service)
        return 0
    bootstrap = (cfg.get('discovery') or {}).get('bootstrapToken') or {}
    endpoint, token = bootstrap.get('apiServerEndpoint'), bootstrap.get(
        'token')
    if not endpoint or not token:
        raise cp.Failure('discovery.bootstrapToken needs apiServerEndpoint '
                         'and token')
    if os.path.exists(kube.KUBELET_CONF):
        raise cp.Failure('[preflight] [ERROR FileAvailable--etc-kubernetes-'
                         'kubelet.conf]: %s already exists'
                         % kube.KUBELET_CONF)
    registration = cfg.get('nodeRegistration') or {}
    name = registration.get('name') or os.uname().nodename
    control = cfg.get('controlPlane')
    host = endpoint.rsplit(':', 1)[0]
    ip = ((control or {}).get('localAPIEndpoint') or {}).get(
        'advertiseAddress') or cp.kubelet_node_ip(registration) or \
        cp.source_ip_towards(host)
    server = 'https://' + endpoint
    ca_pem = discover_ca(server, bootstrap.get('caCertHashes') or [])
    api = client_mod.Client(server, ca_pem, token)
    node_token = node_credential(api, name)
    kube.write_file(pki.CA_CERT, ca_pem, 0o644)
    print('[preflight] Discovered the cluster at %s; CA pinned, token '
          'accepted' % endpoint)
    if faults.active('kubeadm-join'):
        fail_kubelet_start()
    if control:
        store, added_at = join_control_plane(api, cfg, name, ip, server)
        node_token = cp.node_token_from_store(store, name)
        kubelet_server = 'https://%s:%d' % (ip, kube.API_PORT)
    else:
        kubelet_server = server
    cp.start_kubelet(kubelet_server, node_token, name, ip,
                     control_plane=bool(control))
    if control:
        cp.model_after_member_add(added_at)
    else:
        cp.model_duration('join')
    print('\nThis node has joined the cluster%s (kubeadm lab stand-in).'
          % (' as a control-plane node' if control else ''))
    return 0
