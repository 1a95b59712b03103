"""The lab's real OpenStack control plane: MariaDB and RabbitMQ from Debian,
Keystone and Heat from PyPI, started by the lab on 127.0.0.1 with their
data, logs and PIDs under a state directory (see ControlPlane in
control_plane.py)."""
