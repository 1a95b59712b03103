"""kubeadm stand-in: the command-line surface install_k8s_cluster.sh uses.

``init``, ``join`` (see ``kubeadm_join``), ``token create``, ``certs
certificate-key``, ``init phase upload-certs``, the resume phases,
``reset -f``, ``version`` and ``upgrade apply|node`` (see
``kubeadm_upgrade``). The cluster it builds is real where the lab
allows: a real CA, a real etcd cluster; the API server and kubelet are
stand-ins. ``init_delay``/``join_delay`` model the real durations.

Like kubeadm, ``init`` prints the bootstrap token it made and (with
``--upload-certs``) the certificate key, in kubeadm's own lines and join
commands, unless ``--skip-token-print`` / ``--skip-certificate-key-print``
are given; so do the ``bootstrap-token`` and ``upload-certs`` phases.
Bootstrap tokens live as ``bootstrap-token-<id>`` Secrets of type
``bootstrap.kubernetes.io/token`` in kube-system, as kubeadm keeps them.
"""

import base64
import datetime
import glob
import os
import re
import secrets
import shutil
import sys

from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import client as client_mod
from k8s_mgmt_lab.kube import controlplane as cp
from k8s_mgmt_lab.kube import faults
from k8s_mgmt_lab.kube import pki
from k8s_mgmt_lab.kube import store as store_mod
from k8s_mgmt_lab.kube import systemctl

PROG = 'kubeadm'
CERTS_SECRET = '/api/v1/namespaces/kube-system/secrets'
CERTS_TTL = datetime.timedelta(hours=2)
TOKEN_TTL = datetime.timedelta(hours=24)
ENDPOINT_WAIT = 240.0
WITHHELD = '<value withheld>'
SKIP_TOKEN = '--skip-token-print'
SKIP_KEY = '--skip-certificate-key-print'


def parse_duration(text):
    """``2h``, ``30m``, ``24h0m0s``, ``0`` (never expires) -> timedelta."""
    if text in ('0', '0s'):
        return None
    parts = re.findall(r'(\d+)([hms])', text)
    if not parts or ''.join(n + u for n, u in parts) != text:
        raise cp.Failure('invalid duration %r' % text)
    unit = {'h': 3600, 'm': 60, 's': 1}
    return datetime.timedelta(seconds=sum(int(n) * unit[u]
                                          for n, u in parts))


def _option(args, name, default=None):
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + '='):
            return arg.split('=', 1)[1]
    return default


def _b64(text):
    return base64.b64encode(text.encode()).decode()


def admin_api():
    if not os.path.exists(kube.ADMIN_CONF):
        raise cp.Failure('%s not found: is this an initialised control-plane '
                         'node?' % kube.ADMIN_CONF)
    return client_mod.Client.from_kubeconfig(kube.ADMIN_CONF)


def create_token(api, ttl):
    token_id = ''.join(secrets.choice('abcdefghijklmnopqrstuvwxyz0123456789')
                       for _ in range(6))
    token_secret = ''.join(secrets.choice(
        'abcdefghijklmnopqrstuvwxyz0123456789') for _ in range(16))
    data = {'token-id': token_id, 'token-secret': token_secret,
            'usage-bootstrap-authentication': 'true',
            'usage-bootstrap-signing': 'true',
            'auth-extra-groups':
                'system:bootstrappers:kubeadm:default-node-token'}
    if ttl is not None:
        data['expiration'] = kube.rfc3339(kube.now() + ttl)
    api.call('POST', CERTS_SECRET, {
        'apiVersion': 'v1', 'kind': 'Secret',
        'metadata': {'name': 'bootstrap-token-' + token_id,
                     'namespace': 'kube-system'},
        'type': 'bootstrap.kubernetes.io/token',
        'data': {k: _b64(v) for k, v in data.items()}})
    return '%s.%s' % (token_id, token_secret)


def upload_certs(api, certificate_key):
    files = {}
    for name in pki.SHARED_FILES:
        with open(os.path.join(kube.PKI_DIR, name), 'rb') as f:
            files[name] = f.read()
    expires = kube.rfc3339(kube.now() + CERTS_TTL)
    secret = {'apiVersion': 'v1', 'kind': 'Secret',
              'metadata': {'name': 'kubeadm-certs', 'namespace': 'kube-system',
                           'annotations': {'k8s-mgmt.lab/expires': expires}},
              'type': 'Opaque', 'data': pki.seal(files, certificate_key)}
    status, _ = api.request('POST', CERTS_SECRET, secret)
    if status == 409:
        api.call('PUT', CERTS_SECRET + '/kubeadm-certs', secret)
    elif status != 201:
        raise cp.Failure('uploading the certificates failed (HTTP %s)'
                         % status)


def write_initial_objects(store, endpoint, cluster_config):
    """What kubeadm's init phases put into a new cluster."""
    import yaml

    def put(plural, namespace, name, obj):
        meta = obj.setdefault('metadata', {})
        meta.update(name=name, creationTimestamp=kube.rfc3339())
        if namespace:
            meta['namespace'] = namespace
        store.put(store_mod.object_key('', plural, namespace, name), obj)
    for ns in ('default', 'kube-system', 'kube-public', 'kube-node-lease'):
        put('namespaces', None, ns, {'apiVersion': 'v1', 'kind': 'Namespace',
                                     'status': {'phase': 'Active'}})
    info = pki.kubeconfig('https://' + endpoint, pki.read_ca(), 'anonymous',
                          '')
    put('configmaps', 'kube-public', 'cluster-info',
        {'apiVersion': 'v1', 'kind': 'ConfigMap',
         'data': {'kubeconfig': info}})
    put('configmaps', 'kube-system', 'kubeadm-config',
        {'apiVersion': 'v1', 'kind': 'ConfigMap',
         'data': {'ClusterConfiguration': yaml.safe_dump(cluster_config)}})


def print_token(args, token):
    if SKIP_TOKEN not in args:
        print('[bootstrap-token] Using token: %s' % token)
    print('[bootstrap-token] Configuring bootstrap tokens, cluster-info '
          'ConfigMap, RBAC Roles')


def print_certificate_key(args, key):
    if SKIP_KEY not in args:
        print('[upload-certs] Using certificate key:\n%s' % key)


def join_commands(args, endpoint, token, key, upload_certs, control_plane):
    """kubeadm's closing text: the join commands, secrets withheld when
    asked."""
    token = WITHHELD if SKIP_TOKEN in args else token
    key = WITHHELD if SKIP_KEY in args else key
    worker = ('kubeadm join %s --token %s \\\n\t--discovery-token-ca-cert-'
              'hash %s' % (endpoint, token, pki.ca_cert_hash(pki.read_ca())))
    text = ['\nYour Kubernetes control-plane has initialized successfully!\n',
            'To start using your cluster, you need to run the following as '
            'a regular user:\n', '  mkdir -p $HOME/.kube',
            '  sudo cp -i %s $HOME/.kube/config' % kube.ADMIN_CONF,
            '  sudo chown $(id -u):$(id -g) $HOME/.kube/config\n',
            '(kubeadm lab stand-in)\n']
    if control_plane and upload_certs:
        text += ['You can now join any number of control-plane nodes '
                 'running the following command on each as root:\n',
                 '  %s \\\n\t--control-plane --certificate-key %s\n'
                 % (worker, key),
                 'Please note that the certificate-key gives access to '
                 'cluster sensitive data, keep it secret!\n']
    text += ['Then you can join any number of worker nodes by running the '
             'following on each as root:\n', worker]
    print('\n'.join(text))


def fail_wait_control_plane():
    """An injected kubeadm-init fault: the CA and a manifest are left
    behind, as a real init that gave up waiting leaves them."""
    cp.write_manifest('kube-apiserver', ['kube-apiserver'])
    print('[wait-control-plane] Waiting for the kubelet to boot up the '
          'control plane as static Pods from directory "%s"'
          % kube.MANIFESTS_DIR)
    print('[kubelet-check] The kubelet is not healthy after 4m0s')
    sys.stdout.flush()
    faults.note('kubeadm-init')
    raise cp.Failure('wait-control-plane: failed while waiting for the '
                     'kubelet: kubelet is not healthy after 4m0s')


def restart_failed_kubelet():
    """systemd restarts a kubelet that failed (Restart=always); the stand-in
    systemctl does not, so a resumed init brings it back once it can run."""
    if os.path.exists(kube.KUBELET_CONF) and \
            not systemctl.running_pid('kubelet'):
        cp.start_service('kubelet')
        print('[kubelet-finalize] kubelet started again')


def preflight_init():
    manifests = glob.glob(os.path.join(kube.MANIFESTS_DIR, '*.yaml'))
    if manifests:
        raise cp.Failure(
            '[preflight] Some fatal errors occurred:\n\t[ERROR FileAvailable'
            '--%s]: %s already exists' % (manifests[0].strip('/').replace(
                '/', '-'), manifests[0]))


def init(args):
    config_path = _option(args, '--config')
    if not config_path:
        raise cp.Failure('init needs --config FILE (the lab stand-in takes '
                         'no flag-only configuration)')
    docs = cp.load_config(config_path)
    init_cfg = docs.get('InitConfiguration', {})
    cluster = docs.get('ClusterConfiguration', {})
    registration = init_cfg.get('nodeRegistration') or {}
    name = registration.get('name') or os.uname().nodename
    ip = ((init_cfg.get('localAPIEndpoint') or {}).get('advertiseAddress')
          or cp.kubelet_node_ip(registration))
    if not ip:
        raise cp.Failure('no advertiseAddress in %s' % config_path)
    endpoint = cluster.get('controlPlaneEndpoint') or '%s:%d' % (
        ip, kube.API_PORT)
    preflight_init()
    print('[init] Using Kubernetes version: %s (lab stand-in)'
          % kube.kubernetes_version())
    cert_pem, key_pem = pki.make_ca()
    pki.write_ca(cert_pem, key_pem)
    print('[certs] Generated "ca" certificate and key')
    if faults.active('kubeadm-init'):
        fail_wait_control_plane()
    store = cp.start_etcd(name, ip, '%s=http://%s:%d' % (
        name, ip, kube.ETCD_PEER_PORT), 'new')
    print('[etcd] etcd member %s started (http://%s:%d)'
          % (name, ip, kube.ETCD_CLIENT_PORT))
    write_initial_objects(store, endpoint, cluster)
    server = 'https://' + endpoint
    cp.write_admin_conf(store, server)
    sans = (cluster.get('apiServer') or {}).get('certSANs') or ()
    cp.start_apiserver(ip, name, endpoint.rsplit(':', 1)[0], sans)
    print('[control-plane] kube-apiserver (stand-in) is ready')
    api = admin_api()
    # Like kubeadm's api-check: the endpoint (HA: the VIP, once keepalived
    # holds it) must answer before the later phases; the wait counts
    # towards the modelled init (cp.model_duration).
    if not api.wait_ready(ENDPOINT_WAIT):
        raise cp.Failure('the control-plane endpoint %s did not answer in '
                         '%.0fs' % (server, ENDPOINT_WAIT))
    join_token = create_token(api, TOKEN_TTL)
    print_token(args, join_token)
    key = None
    if '--upload-certs' in args:
        key = init_cfg.get('certificateKey') or secrets.token_hex(32)
        upload_certs(api, key)
        print('[upload-certs] Storing the certificates in Secret '
              '"kubeadm-certs" in the "kube-system" Namespace')
        print_certificate_key(args, key)
    token = cp.node_token_from_store(store, name)
    cp.start_kubelet('https://%s:%d' % (ip, kube.API_PORT), token,
                     name, ip, control_plane=True)
    cp.model_duration('init')
    join_commands(args, endpoint, join_token, key, key is not None,
                  bool(cluster.get('controlPlaneEndpoint')))
    return 0


def reset(args):
    store = store_mod.EtcdStore()
    if systemctl.running_pid('etcd') and store.healthy():
        _leave_etcd(store, os.uname().nodename)
    for service in ('kubelet', 'kube-apiserver', 'etcd'):
        systemctl.stop(service)
    for path in (kube.MANIFESTS_DIR, kube.PKI_DIR,
                 kube.STANDIN_DIR, kube.ETCD_DATA_DIR):
        shutil.rmtree(path, ignore_errors=True)
    for path in (kube.ADMIN_CONF, kube.KUBELET_CONF,
                 kube.KUBELET_STATE):
        if os.path.exists(path):
            os.unlink(path)
    print('[reset] Stopped the stand-in services and removed the node\'s '
          'Kubernetes files')
    return 0


def _leave_etcd(store, name):
    try:
        members = store.members()
        mine = [m for m in members if m['name'] == name]
        if mine and len(members) > 1:
            store.remove_member(mine[0]['id'])
            print('[reset] Removed etcd member %s' % name)
    except store_mod.StoreError as err:
        print('[reset] could not remove the etcd member: %s' % err)


def version(args):
    full = kube.kubernetes_version()
    if _option(args, '-o') == 'short' or _option(args, '--output') == 'short':
        print(full)
    else:
        major, minor = full.lstrip('v').split('.')[:2]
        print('kubeadm version: &version.Info{Major:"%s", Minor:"%s", '
              'GitVersion:"%s", Platform:"linux/amd64"}'
              % (major, minor, full))
    return 0


def run(args):
    from k8s_mgmt_lab.kube import kubeadm_join
    words = [a for a in args if not a.startswith('-')]
    verb = words[0] if words else ''
    if verb == 'version':
        return version(args)
    if verb == 'init' and words[1:3] == ['phase', 'upload-certs']:
        key = cp.load_config(_option(args, '--config')).get(
            'InitConfiguration', {}).get('certificateKey')
        if not key:
            raise cp.Failure('upload-certs needs certificateKey in --config')
        upload_certs(admin_api(), key)
        print('[upload-certs] Storing the certificates in Secret '
              '"kubeadm-certs" in the "kube-system" Namespace')
        print_certificate_key(args, key)
        return 0
    if verb == 'init' and words[1:3] == ['phase', 'bootstrap-token']:
        print_token(args, create_token(admin_api(), TOKEN_TTL))
        return 0
    if verb == 'init' and words[1:2] == ['phase']:
        admin_api().call('GET', '/readyz')
        if words[2:3] == ['kubelet-finalize']:
            restart_failed_kubelet()
        print('[%s] phase done (lab stand-in: nothing left to do)'
              % ' '.join(words[2:]))
        return 0
    if verb == 'init':
        return init(args)
    if verb == 'join':
        return kubeadm_join.join(args, _option(args, '--config'))
    if words[:2] == ['token', 'create']:
        print(create_token(admin_api(), parse_duration(
            _option(args, '--ttl', '24h'))))
        return 0
    if words[:2] == ['certs', 'certificate-key']:
        print(secrets.token_hex(32))
        return 0
    if verb == 'reset':
        return reset(args)
    if words[:2] == ['certs', 'check-expiration']:
        from k8s_mgmt_lab.kube import certs
        return certs.check_expiration()
    if words[:2] == ['certs', 'renew'] and len(words) == 3:
        from k8s_mgmt_lab.kube import certs
        return certs.renew(words[2])
    if verb == 'upgrade':
        from k8s_mgmt_lab.kube import kubeadm_upgrade
        return kubeadm_upgrade.run(args, words, admin_api)
    raise cp.Failure('the lab stand-in does not support "kubeadm %s"'
                     % ' '.join(args))


def main(argv=None):
    try:
        return run(list(sys.argv[1:] if argv is None else argv))
    except (cp.Failure, client_mod.APIFailure, store_mod.StoreError,
            OSError) as err:
        sys.stderr.write('error execution phase %s\nTo see the stack trace '
                         'of this error execute with --v=5 or higher\n'
                         % err)
        return 1


if __name__ == '__main__':
    sys.exit(main())
