"""Steps kubeadm's stand-in shares between init and join: start the REAL
etcd and the API server stand-in, write kubeconfigs, start the kubelet."""

import json
import os
import socket
import time

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import certs
from k8s_mgmt_lab.kube import client as client_mod
from k8s_mgmt_lab.kube import pki
from k8s_mgmt_lab.kube import store as store_mod
from k8s_mgmt_lab.kube import systemctl

CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane'
CONTROL_PLANE_TAINT = {'key': CONTROL_PLANE_LABEL, 'effect': 'NoSchedule'}
WAIT_SECONDS = 60.0


class Failure(kube.StandinError):
    pass


def source_ip_towards(host):
    """This node's IP on the route to ``host`` (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect((host, 9))
        return sock.getsockname()[0]


def load_config(path):
    """{kind: document} of a kubeadm config file."""
    import yaml
    with open(path) as f:
        return {d['kind']: d for d in yaml.safe_load_all(f) if d}


def kubelet_node_ip(node_registration):
    extra = node_registration.get('kubeletExtraArgs') or {}
    if isinstance(extra, list):  # v1beta4: name/value pairs
        extra = {e['name']: e['value'] for e in extra}
    return extra.get('node-ip')


def start_service(service):
    """Start ``service`` through the stand-in systemctl, else Failure."""
    if systemctl.start(service) != 0:
        raise Failure('could not start %s (see %s/%s.log)'
                      % (service, systemctl.LOG_DIR, service))


def poll(what, check, seconds=WAIT_SECONDS, every=None):
    """``check()`` until it is true, with backoff (``every``: a fixed
    interval instead, as a tool that retries at one pace does)."""
    pace = (dict(first=every, maximum=every, jitter=False) if every
            else dict(first=0.02, maximum=1.0))
    for _ in Poll(seconds, **pace):
        if check():
            return
    raise Failure('timed out after %.0fs waiting for %s' % (seconds, what))


# etcd's raft timing, (heartbeat ms, election timeout ms), by the lab
# setting etcd_timing:
# - 'lab' (the default): tuned for a slow network, as etcd's tuning guide
#   advises: every lab VM shares the host's two cores, and a member starved
#   of CPU for a second must not start elections that stall the cluster's
#   writes (a heal's member removal waited 30 s through them on a loaded CI
#   machine). A new single member then takes up to 2.5 s to elect itself;
# - 'kubeadm': what kubeadm's etcd runs with (etcd's defaults), up to 1 s;
#   for the benchmarks, whose few VMs leave the cores free.
ETCD_TIMINGS = {'lab': (250, 2500), 'kubeadm': (100, 1000)}


def etcd_timing():
    name = kube.settings().get('etcd_timing') or 'lab'
    try:
        return ETCD_TIMINGS[name]
    except KeyError:
        raise Failure('etcd_timing %r: not one of %s'
                      % (name, ', '.join(sorted(ETCD_TIMINGS))))


def start_etcd(name, ip, initial_cluster, state):
    port_c, port_p = kube.ETCD_CLIENT_PORT, kube.ETCD_PEER_PORT
    heartbeat, election = etcd_timing()
    argv = ['/usr/bin/etcd', '--name', name,
            '--data-dir', kube.ETCD_DATA_DIR,
            '--listen-client-urls',
            'http://127.0.0.1:%d,http://%s:%d' % (port_c, ip, port_c),
            '--advertise-client-urls', 'http://%s:%d' % (ip, port_c),
            '--listen-peer-urls', 'http://%s:%d' % (ip, port_p),
            '--initial-advertise-peer-urls', 'http://%s:%d' % (ip, port_p),
            '--initial-cluster', initial_cluster,
            '--initial-cluster-state', state,
            '--initial-cluster-token', 'k8s-mgmt-lab',
            '--heartbeat-interval', str(heartbeat),
            '--election-timeout', str(election)]
    kube.write_file(kube.STANDIN_DIR + '/etcd.json',
                    json.dumps({'argv': argv}), 0o600)
    write_manifest('etcd', argv)
    start_service('etcd')
    store = store_mod.EtcdStore()
    poll('etcd to become healthy', store.healthy)
    return store


def write_manifest(name, argv, version=None):
    """A static-pod-like manifest: what kubeadm reset and preflight look at,
    and its image tag what an upgrade reads (the control plane's version:
    ``version``, else this kubeadm's)."""
    import yaml
    image = 'registry.k8s.io/%s:%s' % (
        name, version or kube.kubernetes_version())
    doc = {'apiVersion': 'v1', 'kind': 'Pod',
           'metadata': {'name': name, 'namespace': 'kube-system',
                        'annotations': {'k8s-mgmt.lab/stand-in': 'true'}},
           'spec': {'containers': [{'name': name, 'image': image,
                                    'command': argv}]}}
    kube.write_file(os.path.join(kube.MANIFESTS_DIR, name + '.yaml'),
                    yaml.safe_dump(doc), 0o600)


def start_apiserver(node_ip, node_name, endpoint_host, extra_sans=()):
    pki.write_serving_cert(pki.apiserver_sans(node_ip, node_name,
                                              endpoint_host, extra_sans))
    config = {'bind': '0.0.0.0', 'port': kube.API_PORT,
              'cert': pki.APISERVER_CERT, 'key': pki.APISERVER_KEY,
              'ca': pki.CA_CERT,
              'etcd': '127.0.0.1:%d' % kube.ETCD_CLIENT_PORT,
              'node_grace': kube.settings()['node_grace'],
              'advertise_address': node_ip,
              # The kubeadm that made it: its static pod's image tag.
              'kubernetes_version': kube.kubernetes_version()}
    kube.write_file(kube.STANDIN_DIR + '/apiserver.json',
                    json.dumps(config), 0o600)
    write_manifest('kube-apiserver', systemctl.service_argv('kube-apiserver'))
    certs.record_new()
    start_service('kube-apiserver')
    wait_local_apiserver()


def wait_local_apiserver():
    local = client_mod.Client('https://127.0.0.1:%d' % kube.API_PORT,
                              pki.read_ca())
    if not local.wait_ready(WAIT_SECONDS):
        raise Failure('the API server did not become ready in %.0fs'
                      % WAIT_SECONDS)


def write_admin_conf(store, server):
    token = pki.new_token()
    store.add_token(token, 'kubernetes-admin', ['system:masters'])
    kube.write_file(kube.ADMIN_CONF, pki.kubeconfig(
        server, pki.read_ca(), 'kubernetes-admin', token), 0o600)


def node_token_from_store(store, node_name):
    token = pki.new_token()
    store.add_token(token, 'system:node:' + node_name,
                    ['system:nodes', 'system:authenticated'])
    return token


def start_kubelet(server, token, node_name, node_ip, control_plane):
    user = 'system:node:' + node_name
    kube.write_file(kube.KUBELET_CONF, pki.kubeconfig(
        server, pki.read_ca(), user, token), 0o600)
    state = {'node_name': node_name, 'node_ip': node_ip,
             'labels': {CONTROL_PLANE_LABEL: ''} if control_plane else {},
             'taints': [CONTROL_PLANE_TAINT] if control_plane else []}
    kube.write_file(kube.KUBELET_STATE,
                    json.dumps(state), 0o644)
    systemctl.main(['enable', 'kubelet'])
    start_service('kubelet')
    api = client_mod.Client(server, pki.read_ca(), token)

    def registered():
        # A kubelet that passed the start window and then died (its
        # start-up is slow on a loaded machine) is as failed as one that
        # died within it: say so now, not after the whole wait.
        if systemctl.running_pid('kubelet') is None:
            raise Failure('could not start kubelet: it exited after its '
                          'start (see %s/kubelet.log)' % systemctl.LOG_DIR)
        try:
            return api.request('GET', '/api/v1/nodes/' + node_name)[0] == 200
        except OSError:
            return False
    poll('node %s to register' % node_name, registered)


def process_age():
    """Seconds since this process started (the kernel's start time, so the
    interpreter's own start-up counts)."""
    with open('/proc/self/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    started = int(fields[19]) / os.sysconf('SC_CLK_TCK')  # field 22
    return time.clock_gettime(time.CLOCK_BOOTTIME) - started


def model_duration(kind):
    """The one fixed wait: the real kubeadm step takes ``<kind>_delay``
    seconds as a whole, so the stand-in's own work (etcd, API server,
    kubelet start-ups) counts towards it; only the rest is waited for.

    That includes an init's wait for the control-plane endpoint (on an HA
    cluster the VIP, which the driver's keepalived decides): a real init
    checks the endpoint once its API server runs, near the end of its own
    work, so an endpoint that answers by then costs nothing and a later one
    costs its lateness. The stand-in's API server runs within a second, so
    its endpoint wait starts early and overlaps the modelled rest; only
    what goes beyond the delay shows. A stand-in slower than the delay
    takes its own time."""
    _sleep_until(modelled_seconds(kind), process_age())


def modelled_seconds(kind):
    return float(kube.settings().get(kind + '_delay') or 0)


def _sleep_until(modelled, spent):
    remaining = modelled - spent
    if remaining > 0:
        time.sleep(remaining)  # not a poll: the modelled duration


# Where kubeadm's control-plane join adds its etcd member: in its
# control-plane-join phase, after preflight, control-plane-prepare and
# kubelet-start (the kubelet's TLS bootstrap); what follows is the new
# member's sync and marking the node. The lab's assumption: half of the
# join comes before the member add, half after.
ETCD_MEMBER_ADD_SHARE = 0.5


def model_before_member_add():
    """A control-plane join's phases before its etcd member add: the
    first share of the modelled join, counted from the process start."""
    _sleep_until(ETCD_MEMBER_ADD_SHARE * modelled_seconds('join'),
                 process_age())


def model_after_member_add(added_at):
    """The rest of the modelled join, counted from the member add
    (``added_at``, a time.monotonic() value): a wait for etcd to accept the
    member (its health interval) comes on top of the join, as it does
    for kubeadm."""
    _sleep_until((1 - ETCD_MEMBER_ADD_SHARE) * modelled_seconds('join'),
                 time.monotonic() - added_at)
