"""The kubelet stand-in listens on the kubelet port (10250 in a lab VM)
while it runs, as a real kubelet does: the external load balancer of the
kubespray mode checks a worker by a TCP connect there. Run for real in a
child process, on a free loopback port (10250 itself may be taken here)."""

import os
import socket
import subprocess
import sys

import pytest

from k8s_mgmt.polling import Poll
from k8s_mgmt_lab import kube
from k8s_mgmt_lab.kube import kubelet

CHILD = '''
import sys
from k8s_mgmt_lab.kube import kubelet
kubelet.listen_on_kubelet_port(int(sys.argv[1]), '127.0.0.1')
print('listening', flush=True)
sys.stdin.read()   # lives until the parent closes stdin or kills it
'''


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _accepted_and_closed(port):
    with socket.create_connection(('127.0.0.1', port), 5) as sock:
        sock.settimeout(5)
        return sock.recv(1) == b''


def _refused(port):
    try:
        socket.create_connection(('127.0.0.1', port), 5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_the_port_takes_connections_while_the_kubelet_lives():
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=kube.python_path())
    child = subprocess.Popen([sys.executable, '-c', CHILD, str(port)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env=env, text=True)
    try:
        assert child.stdout.readline() == 'listening\n'
        assert all(_accepted_and_closed(port) for _ in range(3))
    finally:
        child.kill()
        child.wait(10)
    for _ in Poll(10.0, first=0.02, maximum=0.5):
        if _refused(port):
            break
    assert _refused(port)


def test_a_taken_port_ends_the_kubelet(capsys):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen(1)
        with pytest.raises(SystemExit) as stop:
            kubelet.listen_on_kubelet_port(taken.getsockname()[1],
                                           '127.0.0.1')
    assert stop.value.code == 1
    assert 'cannot listen on port' in capsys.readouterr().err


def test_main_listens_once_the_kubelet_has_its_config():
    source = open(kubelet.__file__).read()
    main = source[source.index('def main('):]
    assert (main.index('wait_for_files(') < main.index(
        'listen_on_kubelet_port()') < main.index('heartbeat_forever('))
    assert kubelet.KUBELET_PORT == 10250
