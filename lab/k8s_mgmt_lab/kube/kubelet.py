"""kubelet stand-in: registers its Node and heartbeats its status.

Started by the systemctl stand-in; like the real kubelet under systemd's
restart loop it waits for ``/etc/kubernetes/kubelet.conf`` (written by
``kubeadm init/join``), then registers the node and PATCHes its status every
``heartbeat_interval`` seconds. It registers only when it starts, as the
real kubelet: a Node deleted while it runs comes back only when it is
restarted. The API server stand-in judges Ready from
the last heartbeat, so a node whose VM dies turns NotReady by itself.
Like a real kubelet it listens on TCP port 10250 while it runs (it only
accepts and closes there): the kubespray mode's external load balancer
checks a worker by connecting to that port.
"""

import math
import os
import platform
import socket
import sys
import threading
import time

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import client as client_mod
from k8s_mgmt_lab.kube import faults

MERGE = 'application/merge-patch+json'
# Where a real kubelet serves its API (--port).
KUBELET_PORT = 10250
# The kubelet's health endpoint on loopback, as the real one serves it.
HEALTHZ_PORT = 10248


def version_line():
    return 'Kubernetes %s' % kube.kubernetes_version()


def node_status(node_ip):
    beat = kube.rfc3339()
    conditions = [
        {'type': kind, 'status': 'False', 'reason': 'KubeletHas' + reason,
         'message': 'kubelet stand-in', 'lastHeartbeatTime': beat,
         'lastTransitionTime': beat}
        for kind, reason in (('MemoryPressure', 'SufficientMemory'),
                             ('DiskPressure', 'NoDiskPressure'),
                             ('PIDPressure', 'SufficientPID'))]
    conditions.append({'type': 'Ready', 'status': 'True',
                       'reason': 'KubeletReady',
                       'message': 'kubelet stand-in is posting ready status',
                       'lastHeartbeatTime': beat,
                       'lastTransitionTime': beat})
    version = kube.kubernetes_version()
    machine = _read('/etc/machine-id') or 'unknown'
    return {
        'addresses': [{'type': 'InternalIP', 'address': node_ip},
                      {'type': 'Hostname', 'address': socket.gethostname()}],
        'conditions': conditions,
        'capacity': {'cpu': str(os.cpu_count() or 1), 'memory': '2Gi',
                     'pods': '110'},
        'allocatable': {'cpu': str(os.cpu_count() or 1), 'memory': '2Gi',
                        'pods': '110'},
        'nodeInfo': {
            'architecture': 'amd64', 'bootID': machine,
            'containerRuntimeVersion': 'containerd://1.7.24-standin',
            'kernelVersion': platform.release(), 'kubeProxyVersion': version,
            'kubeletVersion': version, 'machineID': machine,
            'operatingSystem': 'linux', 'osImage': 'k8s-mgmt lab VM',
            'systemUUID': machine},
    }


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ''


def node_object(state):
    name = state['node_name']
    labels = {'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux',
              'kubernetes.io/arch': 'amd64', 'beta.kubernetes.io/os': 'linux',
              'beta.kubernetes.io/arch': 'amd64'}
    labels.update(state.get('labels') or {})
    return {'apiVersion': 'v1', 'kind': 'Node',
            'metadata': {'name': name, 'labels': labels},
            'spec': {'taints': state.get('taints') or []},
            'status': node_status(state['node_ip'])}


def wait_for_files(paths):
    """Like systemd restarting a kubelet that has no config yet: for as
    long as it takes."""
    for _ in Poll(math.inf, first=0.05, maximum=1.0):
        if all(os.path.exists(p) for p in paths):
            return


def register(api, state):
    status, _ = api.request('GET', '/api/v1/nodes/' + state['node_name'])
    if status == 404:
        api.call('POST', '/api/v1/nodes', node_object(state),
                 ok=(201, 409))


def exit_if_faulted():
    """An injected kubelet fault: exit as a kubelet that cannot reach its
    container runtime does (systemd would report the unit failed)."""
    if faults.active('kubelet'):
        faults.note('kubelet')
        sys.stderr.write(
            'E0000 00:00:00.000000 run.go:72] "command failed" err="failed '
            'to run Kubelet: validate service connection: validate CRI v1 '
            'runtime API for endpoint \\"unix:///run/containerd/'
            'containerd.sock\\": rpc error: code = Unavailable"\n')
        sys.stderr.flush()
        sys.exit(1)


def listen_on_kubelet_port(port=KUBELET_PORT, host='0.0.0.0'):
    """Accept and close connections on ``port`` in a daemon thread, for as
    long as this process lives; returns the listening socket. A port taken
    ends the kubelet, as it ends a real one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(64)
    except OSError as err:
        sock.close()
        sys.stderr.write('kubelet: cannot listen on port %d: %s\n'
                         % (port, err))
        sys.exit(1)
    threading.Thread(target=_accept_and_close, args=(sock,),
                     name='kubelet-port', daemon=True).start()
    return sock


def serve_healthz(port=HEALTHZ_PORT):
    """``GET /healthz`` on 127.0.0.1:``port`` answers ``ok`` for as long
    as this kubelet runs (a daemon thread); what ``kubeadm`` and the
    install script wait on after a kubelet restart."""
    import http.server

    class Healthz(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            found = self.path == '/healthz'
            body = b'ok' if found else b'404 page not found\n'
            self.send_response(200 if found else 404)
            self.send_header('Content-Type', 'text/plain; charset=utf-8')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            return

    try:
        server = http.server.ThreadingHTTPServer(('127.0.0.1', port),
                                                 Healthz)
    except OSError as err:
        sys.stderr.write('kubelet: cannot serve healthz on port %d: %s\n'
                         % (port, err))
        sys.exit(1)
    threading.Thread(target=server.serve_forever, name='kubelet-healthz',
                     daemon=True).start()
    return server


def _accept_and_close(sock):
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return  # the socket was closed
        conn.close()


def heartbeat_forever(api, state, interval):
    registered = False
    while True:
        exit_if_faulted()
        started = time.monotonic()
        try:
            if not registered:
                register(api, state)
                registered = True
            status, _ = api.request(
                'PATCH', '/api/v1/nodes/%s/status' % state['node_name'],
                {'status': node_status(state['node_ip'])}, MERGE)
            if status == 404:
                # Deleted (drain, scale-in, heal): as a real kubelet, this
                # one registered when it started and does not again; its
                # status updates fail until it is restarted
                # (kubernetes/kubernetes#71398).
                sys.stderr.write('kubelet: Error updating node status, will '
                                 'retry: node "%s" not found\n'
                                 % state['node_name'])
                sys.stderr.flush()
        except (OSError, client_mod.APIFailure) as err:
            sys.stderr.write('kubelet: heartbeat failed: %s\n' % err)
            sys.stderr.flush()
        pause = max(0.0, interval - (time.monotonic() - started))
        time.sleep(pause)  # not a poll: the heartbeat's period


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if '--version' in args:
        print(version_line())
        return 0
    exit_if_faulted()
    wait_for_files([kube.KUBELET_CONF, kube.KUBELET_STATE])
    state = kube.read_json(kube.KUBELET_STATE)
    listen_on_kubelet_port()
    serve_healthz()
    api = client_mod.Client.from_kubeconfig(kube.KUBELET_CONF,
                                            kube.KUBELET_REQUEST_TIMEOUT,
                                            keep_alive=True)
    heartbeat_forever(api, state,
                      float(kube.settings()['heartbeat_interval']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
