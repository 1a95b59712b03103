"""containerd stand-in: ``config default``, ``--version`` and a daemon that
holds the CRI socket (no containers run in the lab)."""

import os
import socket
import sys

SOCKET = '/run/containerd/containerd.sock'

# The parts of containerd 1.7's default config the install script touches.
DEFAULT_CONFIG = '''disabled_plugins = []
imports = []
oom_score = 0
root = "/var/lib/containerd"
state = "/run/containerd"
version = 2

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins]

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "registry.k8s.io/pause:3.10"

    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "runc"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"

          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
            BinaryName = ""
            SystemdCgroup = false
'''


def notify_ready():
    """READY=1 to systemd (containerd.service is Type=notify), when
    started with $NOTIFY_SOCKET."""
    address = os.environ.pop('NOTIFY_SOCKET', '')
    if not address:
        return
    if address.startswith('@'):
        address = '\0' + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.sendto(b'READY=1', address)


def serve():
    os.makedirs(os.path.dirname(SOCKET), exist_ok=True)
    if os.path.exists(SOCKET):
        os.unlink(SOCKET)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(SOCKET)
    server.listen(16)
    notify_ready()
    while True:
        conn, _ = server.accept()
        conn.close()


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if args[:2] == ['config', 'default']:
        sys.stdout.write(DEFAULT_CONFIG)
        return 0
    if args and args[0] in ('--version', '-v'):
        print('containerd github.com/containerd/containerd 1.7.24-standin')
        return 0
    if args[:1] == ['serve'] or not args:
        serve()
    sys.stderr.write('containerd (lab stand-in): unsupported arguments %s\n'
                     % ' '.join(args))
    return 1


if __name__ == '__main__':
    sys.exit(main())
